"""Catalog import of the shared OpenAPI documents on SQLite next to PostgreSQL, and what m019's
postings trigger costs on PostgreSQL (one run).

    python bench/pg_catalog_import.py [DIR] [--postgres URL] [--rounds 1]   (DIR: /work/shared/data/openapi)

Every document is parsed once; then for each store (a folder workspace; a fresh PostgreSQL
database with m019's trigger on; another with it disabled, `ALTER TABLE operation_search DISABLE
TRIGGER operation_search_postings`, as before m019) each is stored (services.replace_service:
one transaction with its search index) and stored again (a re-import replaces it). Prints the
wall time of both passes per store and the trigger's share (on minus off), and checks the
stores hold the same operations. With `--rounds` above 1 the stores run again, in reverse order
on every other round (a shared machine's load drifts), and each round prints its own figures. With the trigger off the postings are not kept (search would
be wrong): that database is only a measurement and is dropped.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench._harness import keyed_home  # noqa: E402
from tests.conftest import OWNER, base_env, run_wsctl  # noqa: E402


def run_round(stores, records, args, tmp, key, base, made) -> None:
    import psycopg

    from workspacectl.engine.catalog import services
    from workspacectl.engine.workspaces import open_workspace

    results = {}
    for store in stores:
        if store == "sqlite":
            location = str(tmp / f"ws-{time.monotonic_ns()}")
        else:
            db = f"wsctl_bench_import_{os.getpid()}_{len(made)}"
            with psycopg.connect(args.postgres, autocommit=True) as c:
                c.execute(f"CREATE DATABASE {db}")
            made.append(db)
            location = f"{base}/{db}"
        run_wsctl(["init", "--workspace", location, "--owner-name", OWNER["name"],
                   "--owner-email", OWNER["email"]], {**base_env(tmp / "home"), "WSCTL_MASTER_KEY": key})
        ws = open_workspace(location)
        conn = ws.conn()
        if store.endswith("trigger off"):
            conn.execute_script("ALTER TABLE operation_search DISABLE TRIGGER operation_search_postings")
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            for record in records:
                services.replace_service(conn, record, source="import")
            times.append(time.perf_counter() - t0)
        stored = conn.execute("SELECT count(*) FROM operations WHERE service LIKE 'bench-%'").fetchone()[0]
        postings = (conn.execute("SELECT count(*) FROM operation_search_postings").fetchone()[0]
                    if store != "sqlite" else None)
        results[store] = (times, stored)
        print(f"{store:22s} import {times[0]:6.2f} s   re-import {times[1]:6.2f} s   operations {stored}"
              + (f"   postings rows {postings}" if postings is not None else ""))
        conn.close()
    on, off = results["postgres"][0], results["postgres, trigger off"][0]
    sq = results["sqlite"][0]
    print(f"trigger's share on PostgreSQL: import {on[0] - off[0]:+.2f} s ({(on[0] - off[0]) / on[0] * 100:.0f}%), "
          f"re-import {on[1] - off[1]:+.2f} s ({(on[1] - off[1]) / on[1] * 100:.0f}%)")
    print(f"PostgreSQL / SQLite: import {on[0] / sq[0]:.1f}x, re-import {on[1] / sq[1]:.1f}x")
    assert len({r[1] for r in results.values()}) == 1, results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default="/work/shared/data/openapi")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--postgres", default=os.environ.get("WSCTL_TEST_POSTGRES_URL") or
                    "postgresql://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    import psycopg

    from workspacectl.engine.catalog.importer import parse_document

    tmp, key = keyed_home("wsctl-pg-import-")
    docs = sorted(p for p in Path(args.dir).iterdir() if p.suffix in (".json", ".yaml", ".yml"))
    records = [parse_document(p.read_text(), "openapi", "bench-" + p.stem, p.name) for p in docs]
    ops = sum(len(r["operations"]) for r in records)
    print(f"{len(docs)} documents, {ops} operations (load average {os.getloadavg()[0]:.1f})")
    base = args.postgres.rpartition("/")[0]
    made: list[str] = []
    try:
        for round_ in range(args.rounds):
            stores = ["sqlite", "postgres", "postgres, trigger off"]
            print(f"round {round_ + 1}")
            run_round(stores[::-1] if round_ % 2 else stores, records, args, tmp, key, base, made)
    finally:
        with psycopg.connect(args.postgres, autocommit=True) as c:
            for db in made:
                c.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


if __name__ == "__main__":
    main()
