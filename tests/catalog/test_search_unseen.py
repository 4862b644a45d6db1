"""Operation search on documents nobody trained on (issue 29).

tests/search_unseen/ holds five real public OpenAPI documents that no model or re-rank of this
project was trained on, and tests/search_unseen_labels.py phrases written for them before any
ranking. These tests keep them apart from every training set, and check that a document imported
now (`catalog import`, no training step) is ranked at once, better than plain BM25 over the same
catalog (the figure computed here, not written down), on each door.
"""
from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import make_backend
from tests.search_labels import LABELS, evaluate
from tests.search_unseen_labels import UNSEEN_LABELS, UNSEEN_SERVICES, unseen_files

ROOT = Path(__file__).resolve().parents[2]
# The held-out documents the door test imports (the two smallest: 74 operations, 41 phrases).
IMPORTED = ("ynab", "launchdarkly")


def _training_sources() -> str:
    """What MODEL.md and the training scripts name as training data, lower-cased."""
    text = (ROOT / "MODEL.md").read_text(encoding="utf-8")
    listed = ROOT / "bench" / "train_documents.txt"
    if listed.exists():
        text += listed.read_text(encoding="utf-8")
    return text.lower()


def test_held_out_documents_and_phrases_are_apart_from_every_training_set():
    from tests.search_labels_more import MORE_LABELS
    from tests.search_labels_style import STYLE_LABELS
    from tests.search_labels_written import WRITTEN_LABELS

    phrases = [p for p, _, _ in UNSEEN_LABELS]
    assert len(phrases) >= 100 and len(set(phrases)) == len(phrases)
    assert {s for _, _, s in UNSEEN_LABELS} == set(UNSEEN_SERVICES)
    assert all(sum(1 for _, _, s in UNSEEN_LABELS if s == service) >= 20 for service in UNSEEN_SERVICES)
    training = {p for p, _, _ in LABELS + MORE_LABELS + STYLE_LABELS + WRITTEN_LABELS}
    assert not set(phrases) & training
    assert not {op.split(".")[0] for _, ops, _ in WRITTEN_LABELS + MORE_LABELS + STYLE_LABELS for op in ops} \
        & set(UNSEEN_SERVICES)
    # the training document list names no held-out provider (any version)
    listed = ROOT / "bench" / "train_documents.txt"
    if listed.exists():
        providers = ("youneedabudget.com", "launchdarkly.com", "netlify.com", "zoom.us", "linode.com",
                     "postmarkapp.com", "tvmaze.com", "circleci.com")      # and the development documents
        lines = [ln for ln in listed.read_text(encoding="utf-8").splitlines() if ln and not ln.startswith("#")]
        assert lines and not [ln for ln in lines if any(f"/{p}/" in f"/{ln}" for p in providers)]
    assert "never used to train" in _training_sources()
    for _, path in unseen_files():
        assert path.is_file()


class PlainBM25:
    """BM25 over each operation's concatenated name, summary, description, method, path and tags:
    one FTS5 table, the default tokenizer, the phrase's words OR-ed (bench/search_quality.py's floor)."""

    def __init__(self, rows):
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE docs USING fts5(op_id UNINDEXED, text)")
        self.db.executemany("INSERT INTO docs (op_id, text) VALUES (?, ?)",
                            [(r[0], " ".join(str(x or "") for x in r[1:])) for r in rows])

    def search(self, phrase: str) -> list[str]:
        tokens = list(dict.fromkeys(re.findall(r"[a-z0-9]+", phrase.lower())))
        if not tokens:
            return []
        return [r[0] for r in self.db.execute(
            "SELECT op_id FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 10",
            (" OR ".join(f'"{t}"' for t in tokens),))]


def _operations(workspace) -> list:
    """(op_id, name, summary, description, method, path, tags) of every operation of a workspace
    (a SQLite folder or a PostgreSQL door's URL)."""
    from tests.vault_helpers import open_ws

    ws = open_ws(workspace)
    try:
        return [tuple(r) for r in ws.conn().execute(
            "SELECT op_id, name, summary, description, method, path, tags FROM operations").fetchall()]
    finally:
        ws.conn().close()


def _import_and_compare(backend, workspace) -> tuple[dict, dict, int]:
    """Import the IMPORTED held-out documents through the door, then rank their phrases by ours
    (GET /v1/operations?q=) and by plain BM25 over the same catalog: (ours, bm25, operations)."""
    for service, path in unseen_files():
        if service in IMPORTED:
            r = backend.api("POST", "/v1/admin/catalog", {"content": path.read_text(encoding="utf-8"),
                                                          "service": service, "filename": path.name})
            assert r.status in (200, 201), r.body
    labels = [lab for lab in UNSEEN_LABELS if lab[2] in IMPORTED]
    rows = _operations(workspace)
    bm25 = PlainBM25(rows)
    assert not {op for _, ops, _ in labels for op in ops} - {r[0] for r in rows}

    def ours(phrase: str) -> list[str]:
        r = backend.api("GET", "/v1/operations", query={"q": phrase, "limit": "10"})
        assert r.status == 200, r.body
        return [h["opId"] for h in r.body["operations"]]

    mine, floor = evaluate(ours, labels), evaluate(bm25.search, labels)
    assert mine["n"] == floor["n"] == len(labels) >= 40
    return mine, floor, len(rows)


def test_a_new_document_ranks_at_once_on_every_door(backend):
    """A workspace with only the built-in services: two documents nobody trained on, imported
    through the door, are ranked above plain BM25 over the same operations at once (no training
    step, nothing but the import)."""
    mine, floor, n = _import_and_compare(backend, backend.workspace)
    assert n >= 28 + 46
    assert mine["mrr@10"] > floor["mrr@10"], (mine, floor)
    assert mine["recall@5"] >= floor["recall@5"], (mine, floor)


@pytest.fixture(params=["local", "remote"])
def corpus_door(request, shared_corpus, tmp_path, home):
    """A copy of the 12 shared documents' workspace behind one door."""
    path, _ = shared_corpus
    ws = tmp_path / "corpus-ws"
    shutil.copytree(path, ws, ignore=shutil.ignore_patterns("*-wal", "*-shm"))
    b = make_backend(request.param, ws, home)
    yield b, ws
    b.close()


def test_a_document_nobody_trained_on_ranks_at_once_above_bm25(corpus_door):
    """Import two held-out documents through the door (what `wsctl catalog import FILE --service
    <stem>` sends), then rank their phrases over all 14 documents: ours beats plain BM25 over the
    same operations on MRR@10 and is not under it on recall@5."""
    backend, ws = corpus_door
    mine, floor, n = _import_and_compare(backend, ws)
    assert n == 3481 + 28 + 46
    assert mine["mrr@10"] > floor["mrr@10"] + 0.05, (mine, floor)
    assert mine["recall@5"] >= floor["recall@5"], (mine, floor)
