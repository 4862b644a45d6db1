"""Memory (CONTRACT §7): read, propose, fold; files; privacy; scopes; the agent on demand, on a
server's timer, and twice at once. Every behaviour on both backends unless it is about a server."""
from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path

import httpx
import pytest

from tests.api_helpers import ISO_Z, assert_error
from tests.conftest import WSCTL, base_env, run_wsctl, start_server, wait_until

ORG = "/v1/memory/organization"
ME = "/v1/memory/membership"
RUN = "/v1/memory/agent/run"


def propose(b, body, path=ORG, secret=None) -> str:
    r = b.api("POST", path + "/proposals", body, secret=secret)
    assert r.status == 202, r.body
    assert set(r.body) == {"id", "status"} and r.body["status"] == "pending"
    assert r.body["id"].startswith("note_")
    return r.body["id"]


def run_agent(b, secret=None) -> dict:
    return {(o["ownerType"], o["membershipId"]): o for o in b.ok("POST", RUN, secret=secret)["owners"]}


def org_result(b, secret=None) -> dict:
    return run_agent(b, secret)[("organization", None)]


# --- read, propose, fold ----------------------------------------------------------------------

def test_read_propose_fold_cycle(backend):
    empty = backend.ok("GET", ORG)
    assert set(empty) == {"ownerType", "guide", "version", "updatedAt", "pendingNotes", "heldNotes"}
    assert empty["ownerType"] == "organization" and empty["guide"] == "" and empty["version"] == 1
    assert empty["pendingNotes"] == [] and empty["heldNotes"] == [] and ISO_Z.match(empty["updatedAt"])

    note = propose(backend, {"text": "Use tabs in Makefiles.", "section": "Style"})
    pending = backend.ok("GET", ORG)
    assert pending["guide"] == "" and pending["version"] == 1        # no direct write: nothing changes yet
    (n,) = pending["pendingNotes"]
    assert n == {"id": note, "text": "Use tabs in Makefiles.", "section": "Style",
                 "proposedBy": backend.owner["id"], "proposedAt": n["proposedAt"]}
    assert ISO_Z.match(n["proposedAt"])

    result = org_result(backend)
    assert result == {"ownerType": "organization", "membershipId": None, "version": 2,
                      "folded": [note], "dropped": [], "held": []}
    after = backend.ok("GET", ORG)
    assert after["guide"] == "## Style\n\n- Use tabs in Makefiles.\n"
    assert after["version"] == 2 and after["pendingNotes"] == []

    # A run with nothing pending changes nothing, version included.
    assert org_result(backend) == {**result, "folded": []}
    assert backend.ok("GET", ORG)["version"] == 2


def test_sections_are_made_if_missing_and_notes_land_in_theirs(backend):
    propose(backend, {"text": "Tabs.", "section": "Style"})
    propose(backend, {"text": "Deploy on Tuesdays.", "section": "Releases"})
    propose(backend, {"text": "A loose note."})                       # no section: the default one
    propose(backend, {"text": "Short lines.\nAt most 100 columns.", "section": "  style "})  # same section
    propose(backend, {"text": "Another loose note.", "section": None})
    assert len(org_result(backend)["folded"]) == 5
    assert backend.ok("GET", ORG)["guide"] == (
        "## Style\n\n- Tabs.\n- Short lines.\n  At most 100 columns.\n\n"
        "## Releases\n\n- Deploy on Tuesdays.\n\n"
        "## Notes\n\n- A loose note.\n- Another loose note.\n")
    propose(backend, {"text": "Freeze in December.", "section": "RELEASES"})
    org_result(backend)
    guide = backend.ok("GET", ORG)["guide"]
    assert guide.count("## Releases") == 1 and "## RELEASES" not in guide
    assert "- Deploy on Tuesdays.\n- Freeze in December.\n\n## Notes" in guide


def test_a_note_already_in_the_guide_is_dropped(backend):
    first = propose(backend, {"text": "Prefer UTC everywhere.", "section": "Time"})
    assert org_result(backend)["folded"] == [first]
    again = propose(backend, {"text": "  Prefer   UTC everywhere.  ", "section": "Other"})
    result = org_result(backend)
    assert result["dropped"] == [again] and result["folded"] == [] and result["version"] == 2
    body = backend.ok("GET", ORG)
    assert body["version"] == 2 and body["pendingNotes"] == [] and "## Other" not in body["guide"]
    # Two equal notes in one run: the first is folded, the second is then already there.
    a = propose(backend, {"text": "Name branches after tickets."})
    b = propose(backend, {"text": "Name branches after tickets."})
    prefix = propose(backend, {"text": "Name branches"})              # a part of a line is not "already there"
    result = org_result(backend)
    # One version per batch that folds, and a batch also ends after BATCH_SECONDS: on a busy
    # machine `a` and `prefix` may land in two batches (3 or 4, never more: b folds nothing).
    assert result["folded"] == [a, prefix] and result["dropped"] == [b] and result["version"] in (3, 4)
    assert backend.ok("GET", ORG)["version"] == result["version"]
    assert backend.ok("GET", ORG)["guide"].count("Name branches after tickets.") == 1


# --- files --------------------------------------------------------------------------------------

def _files(b, path=ORG, **query):
    return b.ok("GET", path + "/files", query=query or None)


def test_files_are_written_listed_and_downloaded(backend):
    style = "# Style guide\n\nTabs, and ünïcode.\n"
    propose(backend, {"text": "See guides/style.md.", "section": "Style",
                      "file": {"path": "guides/style.md", "content": style}})
    propose(backend, {"text": "Ports are listed in ports.txt.", "file": {"path": "ports.txt", "content": "8750 wsctl\n"}})
    assert backend.ok("GET", ORG + "/files") == {"files": [], "nextCursor": None}   # nothing until the fold
    first = org_result(backend)
    assert len(first["folded"]) == 2   # in one batch, or two on a busy machine (a batch ends after BATCH_SECONDS)

    listed = _files(backend)
    assert listed["nextCursor"] is None
    assert [(f["path"], f["size"]) for f in listed["files"]] == [("guides/style.md", len(style.encode())),
                                                                 ("ports.txt", 11)]
    assert all(ISO_Z.match(f["updatedAt"]) for f in listed["files"])
    page = _files(backend, limit="1")
    assert len(page["files"]) == 1 and page["nextCursor"]
    assert _files(backend, limit="1", cursor=page["nextCursor"])["files"][0]["path"] == "ports.txt"

    one = backend.api("GET", ORG + "/files", query={"path": "guides/style.md"})
    assert one.status == 200 and one.body == style.encode()
    archive = backend.api("GET", ORG + "/files", query={"format": "tar.gz"})
    assert archive.status == 200
    with tarfile.open(fileobj=io.BytesIO(archive.body), mode="r:gz") as tar:
        assert sorted(tar.getnames()) == ["guides/style.md", "ports.txt"]       # entries at the root
        assert tar.extractfile("guides/style.md").read() == style.encode()
    if backend.kind == "remote":
        headers = backend._http.get(ORG + "/files", params={"path": "guides/style.md"},
                                    headers={"Authorization": f"Bearer {backend.owner_token}"}).headers
        assert headers["content-type"].startswith("text/markdown")
        headers = backend._http.get(ORG + "/files", params={"path": "ports.txt"},
                                    headers={"Authorization": f"Bearer {backend.owner_token}"}).headers
        assert headers["content-type"] == "application/octet-stream"

    # The same path proposed again replaces the file; the note's text being there already does
    # not make it a no-op, so it is folded (and the guide keeps one copy of the text).
    note = propose(backend, {"text": "See guides/style.md.", "section": "Style",
                             "file": {"path": "guides/style.md", "content": "# Style v2\n"}})
    result = org_result(backend)
    assert result["folded"] == [note] and result["version"] == first["version"] + 1
    assert backend.api("GET", ORG + "/files", query={"path": "guides/style.md"}).body == b"# Style v2\n"
    assert backend.ok("GET", ORG)["guide"].count("See guides/style.md.") == 1
    same = propose(backend, {"text": "See guides/style.md.", "file": {"path": "guides/style.md", "content": "# Style v2\n"}})
    assert org_result(backend)["dropped"] == [same]

    assert_error(backend.api("GET", ORG + "/files", query={"path": "nope.md"}), 404, "not_found")


def test_files_through_the_cli(backend, tmp_path):
    local = tmp_path / "runbook.md"
    local.write_text("# Runbook\nRestart it.\n")
    backend.wsctl("memory", "propose", "me", "Runbook attached.", "--file", local, "--file-path", "ops/runbook.md")
    backend.wsctl("memory", "agent", "run")
    listing = backend.wsctl("memory", "files", "me")
    assert listing.out.split("\t")[:2] == ["ops/runbook.md", str(len(local.read_bytes()))]
    assert backend.wsctl("memory", "files", "me", "--json").json == backend.ok("GET", ME + "/files")
    assert backend.wsctl("memory", "files", "membership", "--path", "ops/runbook.md").out == local.read_text()
    out = tmp_path / "one.md"
    backend.wsctl("memory", "files", "me", "--path", "ops/runbook.md", "-o", out)
    assert out.read_text() == local.read_text()
    tgz = tmp_path / "all.tar.gz"
    backend.wsctl("memory", "files", "me", "-o", tgz)
    with tarfile.open(tgz) as tar:
        assert tar.getnames() == ["ops/runbook.md"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]   # no temporary files left behind
    missing = backend.wsctl("memory", "files", "me", "--path", "nope.md", expect=5)
    assert missing.err.startswith("error: No memory file")


# --- who may read and propose ------------------------------------------------------------------

def test_guests_read_organization_memory_but_cannot_propose(backend):
    guest = backend.add_member("gus@example.com", role="guest")
    token = backend.session(guest["id"])
    propose(backend, {"text": "Everyone reads this."})
    org_result(backend)
    assert "Everyone reads this." in backend.ok("GET", ORG, secret=token)["guide"]
    r = backend.api("POST", ORG + "/proposals", {"text": "Let me in."}, secret=token)
    assert_error(r, 403, "forbidden")
    assert backend.ok("GET", ORG)["pendingNotes"] == []
    propose(backend, {"text": "My own note."}, path=ME, secret=token)   # their own memory is theirs
    for role in ("member", "admin"):
        m = backend.add_member(f"{role}@example.com", role=role)
        propose(backend, {"text": f"From a {role}."}, secret=backend.session(m["id"]))
    assert len(backend.ok("GET", ORG)["pendingNotes"]) == 2
    cli = backend.wsctl("memory", "propose", "org", "Let me in.", env=backend.env_for(token), expect=4)
    assert cli.err.startswith("error: Guests cannot propose")


def test_membership_memory_is_private_to_its_member(backend):
    alice = backend.add_member("alice@example.com")
    bob = backend.add_member("bob@example.com")
    a, b = backend.session(alice["id"]), backend.session(bob["id"])
    secret_note = propose(backend, {"text": "Alice's private preference.", "section": "Me"}, path=ME, secret=a)
    mine = backend.ok("GET", ME, secret=a)
    assert mine["ownerType"] == "membership" and [n["id"] for n in mine["pendingNotes"]] == [secret_note]
    assert backend.ok("GET", ME, secret=b)["pendingNotes"] == []
    assert backend.ok("GET", ME)["pendingNotes"] == []                  # the owner does not see it either
    runs = run_agent(backend, secret=a)
    assert set(runs) == {("organization", None), ("membership", alice["id"])}
    assert runs[("membership", alice["id"])]["folded"] == [secret_note]
    assert "Alice's private preference." in backend.ok("GET", ME, secret=a)["guide"]
    for other in (b, backend.owner_token):
        body = backend.ok("GET", ME, secret=other)
        assert body["guide"] == "" and body["version"] == 1
    assert backend.ok("GET", ORG)["guide"] == ""

    # A member's run folds only their own membership memory; an owner's run folds everyone's.
    bobs = propose(backend, {"text": "Bob's note."}, path=ME, secret=b)
    assert ("membership", bob["id"]) not in run_agent(backend, secret=a)
    assert backend.ok("GET", ME, secret=b)["pendingNotes"][0]["id"] == bobs
    runs = run_agent(backend)
    assert runs[("membership", bob["id"])]["folded"] == [bobs]
    assert "Bob's note." in backend.ok("GET", ME, secret=b)["guide"]
    assert "Bob's note." not in backend.ok("GET", ME)["guide"]


def test_scope_rules(backend):
    personal = backend.key("personal", ["memory:manage"])
    propose(backend, {"text": "Via a personal key."}, secret=personal)
    propose(backend, {"text": "Mine via a key."}, path=ME, secret=personal)
    assert backend.ok("GET", ORG, secret=personal)["pendingNotes"][0]["proposedBy"] == backend.owner["id"]
    assert backend.ok("GET", ME, secret=personal)["pendingNotes"][0]["text"] == "Mine via a key."
    assert backend.ok("GET", ORG + "/files", secret=personal)["files"] == []

    platform = backend.key("platform", ["vault:read", "vault:token", "vault:connect", "vault:manage", "docs:read"])
    no_memory = backend.key("personal", ["projects:manage", "skills:manage", "triggers:manage"])
    for secret in (platform, no_memory):
        for method, path, body in (("GET", ORG, None), ("GET", ME + "/files", None),
                                   ("POST", ORG + "/proposals", {"text": "x"})):
            assert_error(backend.api(method, path, body, secret=secret), 403, "insufficient_scope", "Insufficient scope")
    for secret in (personal, platform):                  # the agent runs for sessions only
        assert_error(backend.api("POST", RUN, secret=secret), 403, "insufficient_scope", "Insufficient scope")
    assert len(backend.ok("GET", ORG)["pendingNotes"]) == 1             # nothing was folded by a key

    key_env = backend.env_for(personal)
    assert backend.wsctl("memory", "show", "org", "--json", env=key_env).json == backend.ok("GET", ORG)
    backend.wsctl("memory", "agent", "run", env=key_env, expect=4)


# --- bad input ----------------------------------------------------------------------------------

BAD_BODIES = [
    None, [], "text", {}, {"text": ""}, {"text": "   \n"}, {"text": 5}, {"text": "x" * 20001},
    {"text": "ok", "section": "s" * 201}, {"text": "ok", "section": "two\nlines"}, {"text": "ok", "section": 3},
    {"text": "ok", "extra": 1}, {"text": "ok", "file": "notes.md"}, {"text": "ok", "file": {"path": "a.md"}},
    {"text": "ok", "file": {"content": "x"}}, {"text": "ok", "file": {"path": "a.md", "content": 1}},
    {"text": "ok", "file": {"path": "a.md", "content": "x", "mode": 7}},
    {"text": "ok", "file": {"path": "a.md", "content": "é" * (512 * 1024 + 1)}},       # over 1 MiB of UTF-8
    *({"text": "ok", "file": {"path": p, "content": "x"}}
      for p in ("../escape.md", "a/../../b", "/etc/passwd", "a//b", "./a", "a/.", "a\\b", "", "a\x00b",
                "x" * 501, "d/" + "y" * 256)),
]


def test_bad_bodies_are_400_and_change_nothing(backend):
    propose(backend, {"text": "Kept.", "file": {"path": "keep/me.md", "content": "k"}})
    org_result(backend)
    before = backend.ok("GET", ORG)
    for body in BAD_BODIES:
        r = backend.api("POST", ORG + "/proposals", body)
        assert_error(r, 400, "invalid_request")
    assert_error(backend.api("POST", ORG + "/proposals", raw=b"{not json"), 400, "invalid_request")
    r = backend.api("POST", ORG + "/proposals", {"text": "x", "file": {"path": "keep/me.md/deeper", "content": ""}})
    assert_error(r, 409, "conflict")                                  # a file cannot also be a folder
    assert_error(backend.api("POST", ORG + "/proposals", {"text": "x", "file": {"path": "keep", "content": ""}}),
                 409, "conflict")
    for query in ({"format": "zip"}, {"format": "tar.gz", "path": "keep/me.md"}, {"path": "../x"}, {"path": ""},
                  {"limit": "0"}, {"cursor": "@@"}):
        assert_error(backend.api("GET", ORG + "/files", query=query), 400, "invalid_request")
    for path in ("/v1/memory/project", "/v1/memory/agent", "/v1/memory/ORGANIZATION/files"):
        assert_error(backend.api("GET", path), 404, "not_found")
    assert_error(backend.api("POST", "/v1/memory/workspace/proposals", {"text": "x"}), 404, "not_found")
    assert backend.ok("GET", ORG) == before
    assert org_result(backend) == {"ownerType": "organization", "membershipId": None,
                                   "version": before["version"], "folded": [], "dropped": [], "held": []}
    assert [f["path"] for f in _files(backend)["files"]] == ["keep/me.md"]
    assert backend.wsctl("memory", "show", "nobody", expect=5).err.startswith("error: No memory owner type")
    assert backend.wsctl("memory", "propose", "org", "", expect=7).err.startswith("error: 'text'")


# --- the command line ---------------------------------------------------------------------------

def test_cli_show_propose_and_run(backend):
    r = backend.wsctl("memory", "propose", "org", "-", "--section", "Deploy", input="Roll back with `make undo`.\n")
    note = r.out.strip()
    assert note.startswith("note_") and "agent run" in r.err
    as_json = backend.wsctl("memory", "propose", "organization", "Second.", "--json").json
    assert as_json["status"] == "pending"
    shown = backend.wsctl("memory", "show", "org", "--json").json
    assert shown == backend.ok("GET", ORG) and [n["id"] for n in shown["pendingNotes"]] == [note, as_json["id"]]
    run = backend.wsctl("memory", "agent", "run", "--json").json
    assert run["owners"][0]["folded"] == [note, as_json["id"]]
    text = backend.wsctl("memory", "show", "org")
    assert text.out == "## Deploy\n\n- Roll back with `make undo`.\n\n## Notes\n\n- Second.\n"
    assert "version 2" in text.err
    plain = backend.wsctl("memory", "agent", "run")
    assert plain.out.splitlines()[0].split("\t") == ["organization", "0", "0", "0", "2"]


# --- concurrency and the timer ------------------------------------------------------------------

def test_two_agent_runs_at_once_fold_each_note_exactly_once(backend):
    texts = [f"Concurrent note {i}." for i in range(40)]
    ids = [propose(backend, {"text": t, "section": f"S{i % 3}"}) for i, t in enumerate(texts)]
    procs = [subprocess.Popen([*WSCTL, "memory", "agent", "run", "--json"], env=backend.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    results = [json.loads(out)["owners"][0] for out, _ in outs]
    folded = [n for r in results for n in r["folded"]]
    assert sorted(folded) == sorted(ids) and len(folded) == len(set(folded))
    assert all(r["dropped"] == [] for r in results)
    body = backend.ok("GET", ORG)
    # One version per committed batch: 40 notes are one batch, unless it ended on its time bound.
    assert body["version"] >= 2 and body["pendingNotes"] == []
    assert all(body["guide"].count(t) == 1 for t in texts)


def _start(workspace, home, *extra, env=None):
    server = start_server(Path(workspace), {**base_env(home), **(env or {})}, args=extra)
    return server.proc, server.url


def test_the_timer_folds_on_real_servers(workspace, tmp_path):
    from tests.conftest import _owner_and_token

    _, token = _owner_and_token(workspace)
    auth = {"Authorization": f"Bearer {token}"}
    # Two servers on one workspace, one timer set by flag, one by env: each note is folded once.
    procs = [_start(workspace, tmp_path / "h1", "--memory-interval", "0.3"),
             _start(workspace, tmp_path / "h2", env={"WSCTL_MEMORY_INTERVAL": "0.2"})]
    try:
        texts = [f"Timer note {i}." for i in range(12)]
        ids = []
        for i, t in enumerate(texts):
            url = procs[i % 2][1]
            r = httpx.post(url + ORG + "/proposals", json={"text": t}, headers=auth, trust_env=False)
            assert r.status_code == 202, r.text
            ids.append(r.json()["id"])
        def folded():
            body = httpx.get(procs[0][1] + ORG, headers=auth, trust_env=False, timeout=60).json()
            return body if not body["pendingNotes"] and all(t in body["guide"] for t in texts) else None

        body = wait_until(folded, "the timer did not fold the notes")
        assert all(body["guide"].count(t) == 1 for t in texts) and body["version"] >= 2
    finally:
        for proc, _ in procs:
            proc.terminate()
            proc.wait(60)
    for bad in (["--memory-interval", "-1"], ["--memory-interval", "nan"]):
        r = run_wsctl(["serve", "--workspace", workspace, "--port", "0", *bad], base_env(tmp_path / "h3"), expect=7)
        assert r.err.startswith("error: --memory-interval"), r.err
    r = run_wsctl(["serve", "--workspace", workspace, "--port", "0"],
                  {**base_env(tmp_path / "h3"), "WSCTL_MEMORY_INTERVAL": "soon"}, expect=7)
    assert "WSCTL_MEMORY_INTERVAL" in r.err


# --- the folding policy and the one transaction -------------------------------------------------

class FailingOnSecondNote:
    """A plug-in policy (module:Class) that fails on the second note it folds."""

    name = "failing"

    def __init__(self):
        from workspacectl.engine.memory.folding import SectionAppendPolicy

        self.inner, self.calls = SectionAppendPolicy(), 0

    def already_there(self, guide, text):
        return self.inner.already_there(guide, text)

    def fold(self, guide, text, section):
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("boom")
        return self.inner.fold(guide, text, section)


def test_a_failed_fold_changes_nothing_and_policies_are_chosen_by_name(backend, monkeypatch):
    if backend.kind == "remote":
        pytest.skip("the policy is read from the environment of the process that folds (in-process here)")
    propose(backend, {"text": "One.", "file": {"path": "one.md", "content": "1"}})
    propose(backend, {"text": "Two."})
    monkeypatch.setenv("WSCTL_MEMORY_POLICY", "tests.memory.test_memory:FailingOnSecondNote")
    assert_error(backend.api("POST", RUN), 422, "unprocessable")
    body = backend.ok("GET", ORG)
    # The failed batch changed nothing. Both notes are one batch, unless the first ended on the
    # batch's time bound; then it alone was committed, with its file, before the failure.
    pending = [n["text"] for n in body["pendingNotes"]]
    one_done = "One." not in pending
    assert "Two." in pending and "Two." not in body["guide"] and body["version"] == 1 + one_done
    assert ("One." in body["guide"]) == one_done == (len(_files(backend)["files"]) == 1)
    monkeypatch.setenv("WSCTL_MEMORY_POLICY", "no-such-policy")
    r = backend.api("POST", RUN)
    assert_error(r, 400, "invalid_request")
    assert "WSCTL_MEMORY_POLICY" in r.body["error"]["message"]
    monkeypatch.setenv("WSCTL_MEMORY_POLICY", "section-append")
    assert len(org_result(backend)["folded"]) == 2 - one_done


def test_section_append_policy_keeps_markdown_structure():
    from workspacectl.engine.memory.folding import SectionAppendPolicy

    p = SectionAppendPolicy()
    guide = "# Handbook\n\nIntro.\n\n## Style\n\nWe write plainly.\n\n## Build\n- make\n"
    folded = p.fold(guide, "Use tabs.", "style")
    assert folded == "# Handbook\n\nIntro.\n\n## Style\n\nWe write plainly.\n\n- Use tabs.\n\n## Build\n- make\n"
    assert p.fold(folded, "ninja", "Build").endswith("## Build\n- make\n- ninja\n")
    # A heading or fence inside a note never opens a section of the guide.
    tricky = p.fold("", "Example:\n```\n## Not a section\n", "Code")
    assert tricky == "## Code\n\n- Example:\n  ```\n  ## Not a section\n  ```\n"
    assert p.fold(tricky, "Next.", "Not a section").endswith("## Not a section\n\n- Next.\n")
    assert p.fold(tricky, "More.", "Code").count("## Code") == 1
    # A note that is already a list keeps its items.
    assert p.fold("", "- one\n- two", None) == "## Notes\n\n- one\n- two\n"
    assert p.already_there("## Notes\n\n- one\n- two\n", "* one\n* two")
    assert not p.already_there("## Notes\n\n- one two\n", "one")
