"""Issue 15 item 4: no fold holds the workspace. The memory agent folds in short batches
(exactly once across batches, kills and concurrent agents), proposals and the guide are bounded
(a note that would overflow the guide is held, never lost), a writer queued behind a long
writer of its own process gets 409 like one blocked by another process, and the default policy
folds through an index (same text as folding note by note, without re-reading the guide)."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.api_helpers import assert_error
from tests.conftest import WSCTL, base_env, make_backend, start_server

ORG = "/v1/memory/organization"
RUN = "/v1/memory/agent/run"
GATE_ENV = "MEMORY_TEST_GATE"       # a folder: the gated policy writes 'entered', waits for 'release'


def propose(b, body) -> str:
    r = b.api("POST", ORG + "/proposals", body)
    assert r.status == 202, r.body
    return r.body["id"]


def org_run(b) -> dict:
    return next(o for o in b.ok("POST", RUN)["owners"] if o["ownerType"] == "organization")


# --- plug-in policies (module:Class, the documented plug-in door) -------------------------------

class KillAtMarker:
    """Section-append, except that folding a note whose text holds KILL-9 kills the process
    (SIGKILL): an agent dying in the middle of a run, between batches."""

    name = "kill-at-marker"

    def __init__(self):
        from workspacectl.engine.memory.folding import SectionAppendPolicy

        self.inner = SectionAppendPolicy()

    def already_there(self, guide, text):
        return self.inner.already_there(guide, text)

    def fold(self, guide, text, section):
        if "KILL-9" in text:
            os.kill(os.getpid(), signal.SIGKILL)
        return self.inner.fold(guide, text, section)


class GatedPolicy(KillAtMarker):
    """Section-append that, inside the fold's transaction, says it entered and waits until the
    test releases it: a long writer holding the workspace for as long as the test wants."""

    name = "gated"

    def fold(self, guide, text, section):
        gate = Path(os.environ[GATE_ENV])
        (gate / "entered").touch()
        for _ in range(6000):  # at most ~10 minutes, so a broken test cannot hang forever
            if (gate / "release").exists():
                break
            time.sleep(0.1)
        return self.inner.fold(guide, text, section)


# --- the draft gives the policy's text ------------------------------------------------------------

_PIECES = ["Use tabs.", "- a list item", "* star item\n* second", "1. first\n2) second", "```\ncode\n```",
           "~~~\nopen tilde fence", "Example:\n```\n## Not a section\n", "## Heading in a note", "two\n\nparas",
           "  indented text", "Use tabs.", "- a list item", "x" * 50, "```python\nprint(1)\n~~~\n```", "~~~"]
_SECTIONS = [None, "Style", "style", " Style  ", "Build", "Notes", "Code", "## Odd", "#", "Deploy ##"]
_GUIDES = ["", "\n\n", "# Handbook\n\nIntro.\n\n## Style\n\nWe write plainly.\n\n## Build\n- make\n",
           "## Code\n\n```\n## Inside\n", "Intro only", "# Top\n## A\n\ntext\n# Other\n## B\n- b\n\n\n",
           "## Style\n\n~~~\nopen\n"]


@pytest.mark.parametrize("seed", range(40))
def test_the_draft_folds_exactly_as_the_policy_note_by_note(seed):
    from workspacectl.engine.memory.draft import SectionAppendDraft
    from workspacectl.engine.memory.folding import SectionAppendPolicy

    rng = random.Random(seed)
    policy, guide = SectionAppendPolicy(), rng.choice(_GUIDES)
    draft = SectionAppendDraft(guide)
    for _ in range(40):
        text = "\n".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 3)))
        section = rng.choice(_SECTIONS)
        assert draft.already_there(text) == policy.already_there(guide, text), (text, guide)
        if rng.random() < 0.8:
            guide = policy.fold(guide, text, section)
            assert draft.fold(text, section, 1 << 30)
            assert draft.text() == guide
            assert draft.nbytes == len(guide.encode())


def test_the_draft_refuses_a_fold_past_the_bound_and_changes_nothing():
    from workspacectl.engine.memory.draft import SectionAppendDraft
    from workspacectl.engine.memory.folding import SectionAppendPolicy

    guide = SectionAppendPolicy().fold("", "First.", "A")
    draft = SectionAppendDraft(guide)
    assert not draft.fold("Second.", "A", len(guide.encode()) + len("- Second.\n") - 1)
    assert not draft.fold("Second.", "B", len(guide.encode()) + 5)
    assert draft.text() == guide and not draft.already_there("Second.")
    assert draft.fold("Second.", "A", len(guide.encode()) + len("- Second.\n"))
    assert draft.text() == guide + "- Second.\n"


# --- exactly once across batches ------------------------------------------------------------------

def _owner_folded(b, texts) -> dict[str, int]:
    guide = b.ok("GET", ORG)["guide"]
    return {t: guide.count(t) for t in texts}


def test_a_run_cut_short_between_batches_folds_the_rest_exactly_once(backend):
    """A run stopped after two batches (as if killed there) leaves the rest pending; the next
    run folds them, and no note is folded twice."""
    from workspacectl.engine.memory.agent import fold_pending_notes
    from workspacectl.engine.workspaces import open_workspace

    texts = [f"Batch note {i:02d}." for i in range(9)]
    ids = [propose(backend, {"text": t, "section": f"S{i % 2}"}) for i, t in enumerate(texts)]
    conn = open_workspace(str(backend.workspace)).conn()
    try:
        first = fold_pending_notes(conn, ("organization", None), batch_notes=2, max_batches=2)
    finally:
        conn.close()
    k = len(first["folded"])     # a batch may also end early on its time bound, never on none
    assert 2 <= k <= 4 and first["folded"] == ids[:k] and first["version"] == 3   # one version per batch
    body = backend.ok("GET", ORG)
    assert [n["id"] for n in body["pendingNotes"]] == ids[k:]
    assert _owner_folded(backend, texts) == {t: int(i < k) for i, t in enumerate(texts)}
    rest = org_run(backend)
    assert rest["folded"] == ids[k:] and rest["dropped"] == [] and rest["held"] == []
    assert _owner_folded(backend, texts) == dict.fromkeys(texts, 1)
    assert backend.ok("GET", ORG)["pendingNotes"] == []


def test_an_agent_killed_between_batches_loses_nothing_and_folds_nothing_twice(backend):
    """kill -9 of a real `wsctl memory agent run` in the middle of its run (the plug-in policy
    kills its own process at one note): the batches before it stay folded, the batch in flight
    rolls back, and the next run folds every other note exactly once."""
    from workspacectl.engine.memory.agent import BATCH_NOTES

    n, kill_at = BATCH_NOTES * 2 + 30, BATCH_NOTES + 60
    texts = [("KILL-9 " if i == kill_at else "") + f"Drill note {i:03d}." for i in range(n)]
    ids = [propose(backend, {"text": t, "section": f"S{i % 5}"}) for i, t in enumerate(texts)]
    env = {**backend.env, "WSCTL_MEMORY_POLICY": "tests.memory.test_memory_fold_batches:KillAtMarker"}
    if backend.kind == "remote":  # the agent is the process that folds: the CLI, on the workspace
        env = {**base_env(backend.home), "WSCTL_WORKSPACE": str(backend.workspace),
               "WSCTL_MEMORY_POLICY": env["WSCTL_MEMORY_POLICY"]}
    p = subprocess.run([*WSCTL, "memory", "agent", "run", "--json"], env=env, capture_output=True, text=True,
                       check=False, timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert p.returncode == -signal.SIGKILL, (p.returncode, p.stderr[-2000:])
    body = backend.ok("GET", ORG)
    pending = [x["id"] for x in body["pendingNotes"]]
    folded = len(ids) - len(pending)
    # Batches hold at most BATCH_NOTES notes, so the batch in flight began after note
    # kill_at - BATCH_NOTES: at least that many were committed, and never the note that killed.
    assert kill_at - BATCH_NOTES < folded <= kill_at
    assert pending == ids[folded:]
    assert _owner_folded(backend, texts) == {t: int(i < folded) for i, t in enumerate(texts)}
    rest = org_run(backend)
    assert rest["folded"] == ids[folded:]
    assert _owner_folded(backend, texts) == dict.fromkeys(texts, 1)


def test_two_agents_in_two_processes_fold_every_note_exactly_once(backend):
    from workspacectl.engine.memory.agent import BATCH_NOTES

    texts = [f"Pair note {i:03d}: keep it short." for i in range(BATCH_NOTES * 3)]
    ids = [propose(backend, {"text": t, "section": f"S{i % 7}"}) for i, t in enumerate(texts)]
    procs = [subprocess.Popen([*WSCTL, "memory", "agent", "run", "--json"], env=backend.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    folded = [n for out, _ in outs for o in json.loads(out)["owners"] if o["ownerType"] == "organization"
              for n in o["folded"]]
    assert sorted(folded) == sorted(ids) and len(folded) == len(set(folded))
    body = backend.ok("GET", ORG)
    assert body["pendingNotes"] == [] and body["heldNotes"] == []
    assert _owner_folded(backend, texts) == dict.fromkeys(texts, 1)


# --- bounds -----------------------------------------------------------------------------------------

def test_a_proposal_is_bounded(backend):
    from workspacectl.engine.memory.routes import MAX_FILE_BYTES, MAX_TEXT

    before = backend.ok("GET", ORG)
    for body, field in (({"text": "x" * (MAX_TEXT + 1)}, "'text'"),
                        ({"text": "t", "file": {"path": "big.md", "content": "y" * (MAX_FILE_BYTES + 1)}},
                         "'file.content'"),
                        ({"text": "t", "file": {"path": "big.md", "content": "é" * (MAX_FILE_BYTES // 2 + 1)}},
                         "'file.content'"),
                        ({"text": "t", "section": "s" * 201}, "'section'")):
        r = backend.api("POST", ORG + "/proposals", body)
        assert_error(r, 400, "invalid_request")
        assert r.body["error"]["message"].startswith(field) and "\n" not in r.body["error"]["message"]
    assert backend.ok("GET", ORG) == before                              # nothing was queued
    at_limit = propose(backend, {"text": "z" * MAX_TEXT, "file": {"path": "big.md", "content": "é" * (MAX_FILE_BYTES // 2)}})
    assert [n["id"] for n in backend.ok("GET", ORG)["pendingNotes"]] == [at_limit]
    r = backend.wsctl("memory", "propose", "org", "-", input="w" * (MAX_TEXT + 1), expect=7)
    assert r.err.startswith("error: 'text'")


def test_a_note_that_would_overflow_the_guide_is_held_and_never_lost(backend):
    from workspacectl.engine.memory.agent import GUIDE_MAX_BYTES
    from workspacectl.engine.memory.routes import MAX_TEXT

    # Fill the guide to just under its bound with maximal notes.
    # Each fills a list line '- TEXT\n' under '## Big\n\n'; what is left is less than one note.
    big = [f"{i:03d} " + chr(ord("a") + i % 26) * (MAX_TEXT - 4) for i in range((GUIDE_MAX_BYTES - 8) // (MAX_TEXT + 3))]
    for t in big:
        propose(backend, {"text": t, "section": "Big"})
    filled = org_run(backend)
    assert len(filled["folded"]) == len(big) and filled["held"] == []
    size = len(backend.ok("GET", ORG)["guide"].encode())
    room = GUIDE_MAX_BYTES - size
    assert 0 < room < MAX_TEXT
    too_big = propose(backend, {"text": "H" * room, "section": "Big", "file": {"path": "held.md", "content": "kept"}})
    fits = propose(backend, {"text": "F" * (room - len("- \n") - 10), "section": "Big"})
    again = propose(backend, {"text": big[0]})                             # already there: dropped, full or not
    run = org_run(backend)
    assert run["held"] == [too_big] and run["folded"] == [fits] and run["dropped"] == [again]
    body = backend.ok("GET", ORG)
    assert len(body["guide"].encode()) <= GUIDE_MAX_BYTES and "H" * room not in body["guide"]
    assert body["pendingNotes"] == []
    (held,) = body["heldNotes"]
    assert held == {"id": too_big, "text": "H" * room, "section": "Big", "proposedBy": backend.owner["id"],
                    "proposedAt": held["proposedAt"], "reason": "guide_full"}
    assert [f["path"] for f in backend.ok("GET", ORG + "/files")["files"]] == []   # a held note writes no file
    # Held is final for that note: later runs do not retry it, and it stays readable.
    assert org_run(backend)["held"] == [] and backend.ok("GET", ORG)["heldNotes"] == [held]
    shown = backend.wsctl("memory", "show", "org")
    assert "1 held (the guide is full)" in shown.err and too_big in shown.err
    assert backend.wsctl("memory", "agent", "run").out.splitlines()[0].split("\t")[:4] == ["organization", "0", "0", "0"]


# --- the writer queue times out like the busy timeout -----------------------------------------------

def _gated_backend(kind, home, ws, tmp_path, env):
    """A backend whose folds go through GatedPolicy (for remote: a server started with it)."""
    if kind == "remote":
        server = start_server(ws, {**base_env(tmp_path / "srv-home"), **env, "WSCTL_MEMORY_INTERVAL": "0"},
                              log=tmp_path / "gated-server.log")
        return make_backend("remote", ws, home, server=server)
    return make_backend("local", ws, home)


@pytest.mark.parametrize("kind", ["local", "remote"])
def test_a_writer_queued_behind_a_long_writer_of_its_process_gets_409(kind, home, workspace, tmp_path, monkeypatch):
    """A fold (here held open on purpose) holds the write lock; a write arriving meanwhile on the
    same process waits its turn in the writer queue only as long as the busy timeout, then
    answers 409 "retry" and writes nothing, instead of waiting behind it without end."""
    gate = tmp_path / "gate"
    gate.mkdir()
    env = {"WSCTL_MEMORY_POLICY": "tests.memory.test_memory_fold_batches:GatedPolicy", GATE_ENV: str(gate),
           "WSCTL_BUSY_TIMEOUT_MS": "2000"}   # the queue's bound: 2 s here instead of the default 15
    for k, v in env.items():  # the local door folds in this process (after `home` cleared WSCTL_*)
        monkeypatch.setenv(k, v)
    b = _gated_backend(kind, home, workspace, tmp_path, env)
    try:
        note = propose(b, {"text": "Held open."})
        agent: dict = {}
        t = threading.Thread(target=lambda: agent.update(r=b.api("POST", RUN)), daemon=True)
        t.start()
        for _ in range(3000):
            if (gate / "entered").exists():
                break
            time.sleep(0.05)
        assert (gate / "entered").exists(), "the fold never started"
        r = b.api("POST", "/v1/projects", {"name": "Queued"})
        assert_error(r, 409, "conflict")
        assert "retry" in r.body["error"]["message"]
        (gate / "release").touch()
        t.join(300)
        assert agent["r"].status == 200
        assert note in agent["r"].body["owners"][0]["folded"]
        assert b.ok("GET", "/v1/projects")["projects"] == []                # the 409 wrote nothing
        assert b.api("POST", "/v1/projects", {"name": "Now"}).status == 201
    finally:
        (gate / "release").touch()
        b.close()


# --- a workspace made before m011 ---------------------------------------------------------------

def test_m011_keeps_queued_notes_their_order_and_file_bytes(tmp_path):
    """A workspace made by an older version: queued notes keep their queue order and their files,
    and fold as before after the migration."""
    from workspacectl.engine.db import open_db, transaction
    from workspacectl.engine.memory.agent import fold_pending_notes
    from workspacectl.engine.migrations import MIGRATIONS, apply_migrations

    conn = open_db(tmp_path / "old.db")
    conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    names = [name for name, _ in MIGRATIONS]
    for name, up in MIGRATIONS[:names.index("m011_memory_held")]:
        with transaction(conn):
            up(conn)
            conn.execute("INSERT INTO migrations VALUES (?, 'then')", (name,))
    with transaction(conn):
        conn.execute("INSERT INTO members VALUES ('um_1', 'Old', 'old@example.com', 'owner', 'then')")
        conn.execute("INSERT INTO memory_documents (owner_type, updated_at) VALUES ('organization', 'then')")
        rows = [("note_z", "Queued first.", "a.md", b"A" * 5000, "pending"),
                ("note_a", "Already folded.", "b.md", b"B", "folded"),
                ("note_m", "Queued last.", None, None, "pending")]
        for note_id, text, path, content, status in rows:
            conn.execute("INSERT INTO memory_notes (id, document_id, text, file_path, file_content, proposed_by,"
                         " proposed_at, status) VALUES (?, 1, ?, ?, ?, 'um_1', 'then', ?)",
                         (note_id, text, path, content, status))
    assert apply_migrations(conn) == names[names.index("m011_memory_held"):]
    notes = conn.execute("SELECT id, file_size, status FROM memory_notes ORDER BY rowid").fetchall()
    assert [tuple(n) for n in notes] == [("note_z", 5000, "pending"), ("note_a", 1, "folded"), ("note_m", None, "pending")]
    result = fold_pending_notes(conn, ("organization", None))
    assert result["folded"] == ["note_z", "note_m"]
    assert bytes(conn.execute("SELECT content FROM memory_files WHERE path = 'a.md'").fetchone()[0]) == b"A" * 5000
    conn.close()
