"""Operation search on PostgreSQL next to SQLite over the shared corpus (12 OpenAPI documents).

    python bench/pg_search.py [--postgres postgresql://postgres@127.0.0.1:5432/postgres] [--rounds 3]

Makes one workspace of each kind holding exactly the shared corpus (imported through the admin
route), then for every labelled phrase of tests/search_labels.py prints:
- parity: how many phrases answer the same top 5 (same opIds, same order) and the same top 1 on
  both stores (the re-rank is shared code; only the candidate lookup differs: FTS5 bm25 versus
  the same bm25 summed over PostgreSQL's per-term postings, migration m019);
- quality: recall@5 and MRR@10 of each store against the labels;
- latency p50 / p95 of catalog_search.search() in-process on each store (after a warm-up pass).
The PostgreSQL database is made and dropped by the script.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests.search_labels import LABELS, evaluate, make_corpus_workspace  # noqa: E402
from workspacectl.engine.catalog import search as catalog_search  # noqa: E402


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))] * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--postgres", default=os.environ.get("WSCTL_TEST_POSTGRES_URL") or
                    "postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import psycopg

    tmp = Path(tempfile.mkdtemp(prefix="wsctl-pg-search-"))
    os.environ["WSCTL_HOME"] = str(tmp / "home")
    os.environ.setdefault("WSCTL_MASTER_KEY", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
    db = f"wsctl_bench_search_{os.getpid()}"
    with psycopg.connect(args.postgres, autocommit=True) as c:
        c.execute(f"CREATE DATABASE {db}")
    pg_url = args.postgres.rpartition("/")[0] + "/" + db
    try:
        stores = {"sqlite": make_corpus_workspace(tmp / "ws"), "postgres": make_corpus_workspace(pg_url)}
        tops = {name: {} for name in stores}
        lat = {name: [] for name in stores}
        for name, ws in stores.items():
            conn = ws.conn()
            for phrase, _, _ in LABELS:            # warm-up, and the answers compared
                tops[name][phrase] = [op for op, _ in catalog_search.search(conn, phrase, limit=10)]
            for _ in range(args.rounds):
                for phrase, _, _ in LABELS:
                    t0 = time.perf_counter()
                    catalog_search.search(conn, phrase, limit=10)
                    lat[name].append(time.perf_counter() - t0)
        n = len(LABELS)
        same5 = sum(tops["sqlite"][p][:5] == tops["postgres"][p][:5] for p, _, _ in LABELS)
        same1 = sum(tops["sqlite"][p][:1] == tops["postgres"][p][:1] for p, _, _ in LABELS)
        print(f"phrases: {n}; identical top 5: {same5}/{n}; identical top 1: {same1}/{n}")
        for name in stores:
            q = evaluate(lambda p, name=name: tops[name][p])
            print(f"{name:9s} recall@5 {q['recall@5']:.3f}  mrr@10 {q['mrr@10']:.3f}  "
                  f"search p50 {pct(lat[name], 0.5):.1f} ms  p95 {pct(lat[name], 0.95):.1f} ms  "
                  f"(n={len(lat[name])}, mean {statistics.mean(lat[name]) * 1000:.1f} ms)")
        diffs = [p for p, _, _ in LABELS if tops["sqlite"][p][:5] != tops["postgres"][p][:5]]
        for p in diffs[:8]:
            print(f"  differs: {p!r}\n    sqlite   {tops['sqlite'][p][:5]}\n    postgres {tops['postgres'][p][:5]}")
        for ws in stores.values():
            ws.conn().close()
    finally:
        with psycopg.connect(args.postgres, autocommit=True) as c:
            c.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


if __name__ == "__main__":
    main()
