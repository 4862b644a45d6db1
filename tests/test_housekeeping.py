"""Housekeeping (engine/housekeeping.py): expired skill uploads and their blobs, stage folders left
by a killed process, local incoming files never picked up; once an hour from the local backend,
on the timer of `wsctl serve`. Real workspaces; both backends where the leftovers arise."""
from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path

import pytest

from tests.conftest import answers_health, base_env, make_backend, start_server, wait_until
from tests.skill_helpers import create, file_path, publish_bundle, put_url, skill_md, stage, targz
from workspacectl import clock
from workspacectl.engine import blobs, housekeeping
from workspacectl.engine.workspace import Workspace

OLD = 3 * 3600


def _bundle(name: str, note: str) -> bytes:
    return targz({"SKILL.md": skill_md(name), "references/note.md": note})


def _uploaded(b, sid: str, data: bytes) -> str:
    """An upload whose bytes are in (PUT, taken in locally by validate), never published."""
    uid = stage(b, sid, data)
    assert b.ok("POST", f"/v1/skills/{sid}/validate", {"uploadId": uid})["valid"] is True
    return uid


def _row(ws, uid):
    return ws.conn().execute("SELECT * FROM skill_uploads WHERE id = ?", (uid,)).fetchone()


def _backdate(ws, uid, seconds=OLD) -> None:
    """Made `seconds` earlier: both its link and its usable lifetime are past."""
    t = clock.iso(clock.now() - timedelta(seconds=seconds))
    ws.conn().execute("UPDATE skill_uploads SET url_expires_at = ?, expires_at = ? WHERE id = ?", (t, t, uid))


def _stage_folder(ws, age: float = 0, inner_age: float | None = None) -> Path:
    folder = ws.blobs / "tmp" / f"stage-test{time.time_ns()}"
    folder.mkdir(parents=True)
    (folder / "blob-x").write_bytes(b"half an upload")
    now = time.time()
    os.utime(folder / "blob-x", (now - (age if inner_age is None else inner_age),) * 2)
    os.utime(folder, (now - age,) * 2)
    return folder


def test_expired_uploads_and_old_stage_folders_go_the_rest_stays(backend):
    b = backend
    s = create(b, "tidy")
    ws = Workspace.open(b.workspace)
    published = publish_bundle(b, s["id"], _bundle("tidy", "published"))
    assert published.status == 201, published.body
    used = ws.conn().execute("SELECT id, blob_sha256 FROM skill_uploads WHERE state = 'used'").fetchone()
    old = _uploaded(b, s["id"], _bundle("tidy", "never used, expired"))
    fresh = _uploaded(b, s["id"], _bundle("tidy", "never used, fresh"))
    old_sha, fresh_sha = _row(ws, old)["blob_sha256"], _row(ws, fresh)["blob_sha256"]
    _backdate(ws, old)
    _backdate(ws, used["id"])
    version_shas = [f["sha256"] for f in b.ok("GET", f"/v1/skills/{s['id']}/files")["files"]]
    stale, young, busy = _stage_folder(ws, OLD), _stage_folder(ws), _stage_folder(ws, OLD, inner_age=60)

    counts = housekeeping.sweep(ws)

    assert counts["uploads"] == 2 and counts["stageFolders"] == 1, counts
    assert _row(ws, old) is None and _row(ws, used["id"]) is None
    assert not blobs.blob_path(ws, old_sha).exists() and not blobs.blob_path(ws, used["blob_sha256"]).exists()
    assert _row(ws, fresh) is not None and blobs.blob_path(ws, fresh_sha).exists()
    assert all(blobs.blob_path(ws, sha).exists() for sha in version_shas)
    assert not stale.exists() and young.exists() and busy.exists()
    # the published version still reads whole, and the fresh upload still publishes
    files = {f["path"]: f["content"] for f in b.ok("GET", f"/v1/skills/{s['id']}/files")["files"]}
    assert files["references/note.md"] == "published"
    assert b.api("POST", f"/v1/skills/{s['id']}/publish", {"uploadId": fresh}).status == 201
    # an expired upload is gone for good: validating it is 404, not a missing blob
    assert b.api("POST", f"/v1/skills/{s['id']}/validate", {"uploadId": old}).status == 404


def test_local_incoming_files_never_picked_up(backend):
    if backend.kind != "local":
        pytest.skip("blobs/incoming is the local file:// flow's")
    b = backend
    s = create(b, "inbox")
    ws = Workspace.open(b.workspace)
    urls = [b.ok("POST", f"/v1/skills/{s['id']}/bundle-upload-url")["url"] for _ in range(2)]
    for url in urls:
        assert put_url(url, _bundle("inbox", "x")) == 200
    written, copied = file_path(urls[0]), file_path(urls[1])
    then = time.time() - OLD
    os.utime(copied, (then, then))       # an old mtime a copy preserved: its link is still recent
    housekeeping.sweep(ws)
    assert written.exists() and copied.exists()
    # three hours on: both links long expired, the files and the pending rows go
    counts = housekeeping.sweep(ws, clock.now() + timedelta(seconds=OLD))
    assert counts["incomingFiles"] == 2 and counts["uploads"] == 2, counts
    assert not written.exists() and not copied.exists()


def test_at_most_once_an_hour_and_after_a_local_command(backend):
    if backend.kind != "local":
        pytest.skip("the opportunistic sweep is the local backend's")
    b = backend
    ws = Workspace.open(b.workspace)
    stale = _stage_folder(ws, OLD)
    b.wsctl("skill", "list", "--json")           # the command sweeps after its output
    assert not stale.exists()
    last = ws.setting(housekeeping.SETTING)
    assert last is not None
    stale = _stage_folder(ws, OLD)
    b.wsctl("skill", "list", "--json")           # within the hour: nothing runs
    assert stale.exists() and ws.setting(housekeeping.SETTING) == last
    assert housekeeping.maybe_sweep(ws) is None
    later = clock.now() + timedelta(seconds=housekeeping.EVERY + 60)
    assert housekeeping.maybe_sweep(ws, later)["stageFolders"] == 1 and not stale.exists()
    assert housekeeping.maybe_sweep(ws, later) is None


def test_the_server_timer_sweeps(workspace, home, tmp_path):
    b = make_backend("local", workspace, home)
    s = create(b, "served")
    uid = _uploaded(b, s["id"], _bundle("served", "left behind"))
    b.close()
    ws = Workspace.open(workspace)
    sha = _row(ws, uid)["blob_sha256"]
    stale, young = _stage_folder(ws, OLD), _stage_folder(ws)
    log = tmp_path / "serve.log"
    # the server's clock is three hours on: the upload is long expired, the files' ages are real
    server = start_server(workspace, base_env(tmp_path / "srv-home"), offset=OLD, log=log,
                          args=("--memory-interval", "0.2"))
    try:
        wait_until(lambda: _row(ws, uid) is None and not stale.exists(), "the server's timer did not sweep",
                   server.proc, log)
        assert _row(ws, uid) is None and not stale.exists(), log.read_text()
        assert not blobs.blob_path(ws, sha).exists() and young.exists()
        assert ws.setting(housekeeping.SETTING) is not None
        assert answers_health(server.url)
    finally:
        server.stop()
