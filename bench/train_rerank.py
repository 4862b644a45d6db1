"""Fit operation search's re-rank (engine/catalog/rerank.json) on the tuning sets.

    python bench/train_rerank.py [--workspace DIR] [--write] [--l2 0.01,0.03,...]

The re-rank scores each candidate (the lexical candidates and the nearest vectors, see
engine/catalog/search.py) with a logistic model over a few dozen features (bm25, field
coverage, cosine, rank in each list, the service named, the action asked and the operation's,
path depth...). This script fits its weights with a listwise softmax loss (each phrase: the
log-probability of its relevant candidates among all its candidates) and an L2 penalty, in
numpy, from fixed starting weights (zeros): the same data gives the same file.

Data, all tuning sets, never the holdout (tests/search_holdout.py):
- tests/search_labels.py         60 phrases
- tests/search_labels_more.py   192 phrases
- tests/search_labels_style.py   96 phrases (operations no other label set names)
- both again with one mechanical slip each (bench/search_quality.py misspelt())
Phrases are cut into 5 folds (the misspelt copy in its phrase's fold); --l2 values are
compared by 5-fold cross-validation (fit on 4 folds, MRR@10 and recall@5 on the fifth), and
the best one is fitted on everything and written with --write.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from search_quality import misspelt, use_vectors  # noqa: E402

from tests.search_labels import LABELS, make_corpus_workspace  # noqa: E402
from tests.search_labels_more import MORE_LABELS  # noqa: E402
from tests.search_labels_style import STYLE_LABELS  # noqa: E402
from tests.search_labels_written import SERVICE_FOLD, WRITTEN_LABELS, by_phrase  # noqa: E402
from workspacectl.engine.catalog import embedding  # noqa: E402
from workspacectl.engine.catalog import search as catalog_search  # noqa: E402

OUT = ROOT / "src" / "workspacectl" / "engine" / "catalog" / "rerank.json"


def tuning_phrases(written: bool = True, folds: str = "service") -> list[tuple[str, frozenset[str], int, str]]:
    """(phrase, relevant, fold, set name)."""
    out = []
    for i, (p, rel, _) in enumerate(LABELS):
        out.append((p, rel, i % 5, "labels"))
    for p, rel, fold in MORE_LABELS:
        out.append((p, rel, int(fold[-1]), "more"))
    for p, rel, fold in STYLE_LABELS:
        out.append((p, rel, int(fold[-1]), "style"))
    slips = misspelt([(p, rel, f"{fold}|{name}") for p, rel, fold, name in out])
    for p, rel, tag in slips:
        fold, name = tag.split("|")
        out.append((p, rel, int(fold), name + "-misspelt"))
    if written:     # written with their own slips; no mechanical copies
        old = {p for p, _, _, _ in out}
        labels = WRITTEN_LABELS if folds == "service" else by_phrase()
        out += [(p, rel, int(fold[-1]), "written") for p, rel, fold in labels if p not in old]
    return out


# Products of these features are features too (a linear model over them can say, e.g., that
# the cosine counts more when the phrase names no service).
CROSSED = ("bm25", "coverage", "cov_name", "cov_summary", "semantic", "cosine", "action", "named_service",
           "name_precision", "lex_rank", "sem_rank")


def expand(x: dict[str, float], crossed) -> dict[str, float]:
    out = dict(x)
    for i, a in enumerate(crossed):
        for b in crossed[i + 1:]:
            out[f"{a}*{b}"] = x.get(a, 0.0) * x.get(b, 0.0)
    return out


def features(conn, phrases, crossed=(), fold_vectors: Path | None = None):
    """Per phrase: (op_ids, X, y) over its candidates, feature names in a fixed order.
    fold_vectors: a folder holding fold0..fold4, token vectors trained without that fold's
    phrases (bench/train_embeddings.py --exclude-fold K); each phrase's features are then made
    with the vectors that never saw it."""
    data = []
    names: list[str] = []
    shipped = embedding.DATA
    for k in sorted({f for _, _, f, _ in phrases}) if fold_vectors else [None]:
        if fold_vectors is not None:
            use_vectors(fold_vectors.parent / f"{fold_vectors.name}fold{k}" if fold_vectors.name == "doc"
                        else fold_vectors / f"fold{k}")
        for p, rel, fold, name in phrases:
            if k is not None and fold != k:
                continue
            cand = [(op, expand(x, crossed)) for op, x in catalog_search.candidate_features(conn, p)]
            if not names and cand and cand[0][1]:
                names = sorted(cand[0][1])
            # A matrix per phrase at once (a dict of ~100 floats per candidate, kept for 7,540
            # phrases, would take ~11 GB).
            ops = [op for op, _ in cand]
            X = np.array([[x.get(f, 0.0) for f in names] for _, x in cand], dtype=np.float32).reshape(len(cand), len(names))
            y = np.array([op in rel for op in ops], dtype=bool)
            data.append({"phrase": p, "fold": fold, "set": name, "ops": ops, "X": X, "y": y})
    if fold_vectors is not None:
        use_vectors(shipped)
    return names, data


def _stack(data):
    """All candidates of the usable phrases in one matrix, with each phrase's start offset."""
    usable = [d for d in data if d["y"].any() and len(d["y"]) > 1]
    X = np.concatenate([d["X"] for d in usable]).astype(np.float32)    # float32: half the memory and time
    y = np.concatenate([d["y"] for d in usable]).astype(np.float32)
    starts = np.cumsum([0] + [len(d["y"]) for d in usable[:-1]])
    group = np.repeat(np.arange(len(usable)), [len(d["y"]) for d in usable])
    return X, y, starts, group, len(usable)


def fit(data, n_features: int, l2: float, iters: int = 600, lr: float = 0.05):
    """Weights minimising the mean listwise softmax loss + l2 * |w|^2 (Adam, from 0), over all
    phrases at once (segment sums over the stacked candidates)."""
    X, y, starts, group, n = _stack(data)
    XT = np.ascontiguousarray(X.T)     # X.T @ g over a C-ordered X.T is ~7x faster here
    w = np.zeros(n_features)
    m = np.zeros(n_features)
    v = np.zeros(n_features)
    for t in range(1, iters + 1):
        s = X @ w.astype(np.float32)
        s -= np.maximum.reduceat(s, starts)[group]
        e = np.exp(s)
        p_all = e / np.add.reduceat(e, starts)[group]
        ey = e * y
        p_pos = ey / np.add.reduceat(ey, starts)[group]
        grad = 2 * l2 * w + XT @ (p_all - p_pos) / n
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad * grad
        w -= lr * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
    return w


def metrics(data, w) -> dict[str, float]:
    r1 = r5 = mrr = 0.0
    for d in data:
        s = d["X"] @ w if len(d["ops"]) else np.zeros(0)
        order = sorted(range(len(d["ops"])), key=lambda i: (-s[i], d["ops"][i]))
        hits = [k for k, i in enumerate(order[:10]) if d["y"][i]]
        if hits:
            r1 += hits[0] == 0
            r5 += hits[0] < 5
            mrr += 1.0 / (hits[0] + 1)
    n = max(len(data), 1)
    return {"n": len(data), "r1": r1 / n, "r5": r5 / n, "mrr": mrr / n}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", help="reuse a corpus workspace made by an earlier run")
    ap.add_argument("--l2", default="0.0003,0.001,0.003,0.01,0.03")
    ap.add_argument("--write", action="store_true", help="write the best fit to engine/catalog/rerank.json")
    ap.add_argument("--out", type=Path, default=OUT, help="with --write: where (default the shipped rerank.json)")
    ap.add_argument("--crossed", action="store_true", help="add products of the main features")
    ap.add_argument("--misses", action="store_true", help="list tuning phrases whose first answer is wrong")
    ap.add_argument("--no-written", action="store_true", help="leave out tests/search_labels_written.py")
    ap.add_argument("--written-folds", choices=("service", "phrase"), default="service",
                    help="folds of the written phrases: by service group or by phrase (search_labels_written.py)")
    ap.add_argument("--semantic-candidates", type=int, help="try another SEMANTIC_CANDIDATES")
    ap.add_argument("--semantic-floor", type=float, help="try another SEMANTIC_FLOOR")
    ap.add_argument("--fold-vectors", type=Path, help="folder of fold0..fold4 token vectors, each trained "
                                                      "without that fold's phrases (train_embeddings.py)")
    ap.add_argument("--doc-fold-vectors", type=Path,
                    help="folder of docfold0..docfold4 token vectors (train_embeddings.py --service-fold K "
                         "--whole-documents): each trained without the documents of SERVICE_FOLD group K at all; "
                         "each phrase's features are made with the model that never saw its document, and the "
                         "folds are those groups (what a document imported later looks like to the re-rank)")
    ap.add_argument("--with-shipped", type=int, default=0, metavar="N",
                    help="with --doc-fold-vectors: also fit on the features the shipped vectors give the hand-made "
                         "sets, their slipped copies and every fourth written phrase (documents the vectors were "
                         "trained on, as the 12 are at run time), N times over, in every fold's training part")
    ap.add_argument("--dev", action="store_true",
                    help="also read the fits on the development documents (tests/search_dev_labels.py), "
                         "ranked with the shipped vectors: what the choice of l2 and features is made on")
    args = ap.parse_args()
    if args.semantic_candidates is not None:
        catalog_search.SEMANTIC_CANDIDATES = args.semantic_candidates
    if args.semantic_floor is not None:
        catalog_search.SEMANTIC_FLOOR = args.semantic_floor
    tmp = None
    if args.workspace:
        ws_path = Path(args.workspace)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="wsctl-rerank-")
        ws_path = Path(tmp.name) / "ws"
    ws = make_corpus_workspace(ws_path)
    conn = ws.conn()
    phrases = tuning_phrases(written=not args.no_written, folds=args.written_folds)
    fold_vectors = args.fold_vectors
    if args.doc_fold_vectors:
        # the fold of a phrase is the group of its document; docfoldK never saw group K's documents
        phrases = [(p, rel, SERVICE_FOLD[sorted(rel)[0].split(".")[0]], name) for p, rel, _, name in phrases]
        fold_vectors = args.doc_fold_vectors / "doc"
    t0 = time.perf_counter()
    names, data = features(conn, phrases, CROSSED if args.crossed else (), fold_vectors)
    seen: list = []
    if args.doc_fold_vectors and args.with_shipped:
        every = tuning_phrases(written=not args.no_written, folds=args.written_folds)
        every = [(p, rel, -1, name) for i, (p, rel, _, name) in enumerate(every) if name != "written" or i % 4 == 0]
        seen_names, seen = features(conn, every, CROSSED if args.crossed else ())
        assert seen_names == names
        seen = seen * args.with_shipped
    dev = None
    if args.dev:
        from search_quality import with_dev

        from tests.search_dev_labels import resolved

        with_dev(ws)
        dev_names, dev = features(conn, [(p, rel, 0, "dev") for p, rel, _ in resolved(conn)],
                                  CROSSED if args.crossed else ())
        assert dev_names == names
    covered = sum(1 for d in data if d["y"].any())
    print(f"{len(data)} tuning phrases, {covered} with a relevant candidate "
          f"({time.perf_counter() - t0:.1f} s); {len(names)} features")
    shipped = np.array([catalog_search.RERANK.get(f, 0.0) for f in names])
    if args.crossed and not any("*" in f for f in catalog_search.RERANK):
        shipped = np.array([catalog_search.RERANK.get(f, 0.0) if "*" not in f else 0.0 for f in names])
    now = metrics(data, shipped)
    print(f"shipped weights, all tuning phrases: R@1 {now['r1']:.3f} R@5 {now['r5']:.3f} MRR@10 {now['mrr']:.3f}")
    if dev is not None:
        m = metrics(dev, shipped)
        print(f"shipped weights, dev-docs: R@1 {m['r1']:.3f} R@5 {m['r5']:.3f} MRR@10 {m['mrr']:.3f}")
    best = None
    for l2 in (float(x) for x in args.l2.split(",")):
        folds = []
        for k in range(5):
            w = fit([d for d in data if d["fold"] != k] + seen, len(names), l2)
            folds.append(metrics([d for d in data if d["fold"] == k], w))
        n = sum(f["n"] for f in folds)
        cv = {m: sum(f[m] * f["n"] for f in folds) / n for m in ("r1", "r5", "mrr")}
        line = f"l2 {l2:<8g} 5-fold CV: R@1 {cv['r1']:.3f} R@5 {cv['r5']:.3f} MRR@10 {cv['mrr']:.3f}"
        if dev is not None:
            m = metrics(dev, fit(data + seen, len(names), l2))
            line += f"; dev-docs, fitted on all: R@1 {m['r1']:.3f} R@5 {m['r5']:.3f} MRR@10 {m['mrr']:.3f}"
        print(line)
        if best is None or cv["mrr"] > best[1]["mrr"]:
            best = (l2, cv)
    assert best is not None
    l2 = best[0]
    w = fit(data + seen, len(names), l2)
    fitted = metrics(data, w)
    print(f"fitted on all with l2 {l2:g}: R@1 {fitted['r1']:.3f} R@5 {fitted['r5']:.3f} MRR@10 {fitted['mrr']:.3f} (training fit)")
    for f, x in sorted(zip(names, w), key=lambda t: -abs(t[1])):
        print(f"  {f:<16} {x:+.3f}")
    for name in sorted({d["set"] for d in data}):
        part = [d for d in data if d["set"] == name]
        m = metrics(part, shipped)
        print(f"  shipped on {name:<16} n {m['n']:>3} R@1 {m['r1']:.3f} R@5 {m['r5']:.3f} MRR@10 {m['mrr']:.3f}")
    if args.misses:
        for d in data:
            s = d["X"] @ w
            order = sorted(range(len(d["ops"])), key=lambda i: (-s[i], d["ops"][i]))
            if not any(d["y"][i] for i in order[:1]):
                rank = next((k for k, i in enumerate(order) if d["y"][i]), None)
                print(f"  miss {d['phrase']!r} rank {rank}: {', '.join(d['ops'][i] for i in order[:3])}")
    if args.write:
        # A constant shift changes no order: the bias puts a typical best candidate near 0.5-0.9.
        tops = [max(d["X"] @ w) for d in data + seen if len(d["ops"])]
        bias = -float(np.median(tops)) + 1.0
        args.out.write_text(json.dumps({
            "about": "operation search re-rank: score = sigmoid(bias + sum weights[f] * feature f); "
                     "fitted by bench/train_rerank.py on the tuning sets (never the holdout)",
            "l2": l2, "cv_mrr10": round(best[1]["mrr"], 4), "cv_recall5": round(best[1]["r5"], 4),
            "bias": round(bias, 4), "weights": {f: round(float(x), 4) for f, x in zip(names, w)}},
            indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    conn.close()
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
