"""Housekeeping (engine/housekeeping.py): expired skill uploads and their blobs, stage folders left
by a killed process, local incoming files never picked up; once an hour from the local backend,
on the timer of `wsctl serve`. Real workspaces; both backends where the leftovers arise."""
from __future__ import annotations

import os
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest

from tests.conftest import WSCTL, answers_health, base_env, make_backend, start_server, wait_until
from tests.skill_helpers import create, file_path, publish_bundle, put_url, skill_md, stage, targz
from workspacectl import clock
from workspacectl.engine import housekeeping

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


def test_expired_uploads_and_old_stage_folders_go_the_rest_stays(backend, local_ws):
    b = backend
    s = create(b, "tidy")
    ws = local_ws(b.workspace)
    published = publish_bundle(b, s["id"], _bundle("tidy", "published"))
    assert published.status == 201, published.body
    used = ws.conn().execute("SELECT id, blob_sha256 FROM skill_uploads WHERE state = 'used'").fetchone()
    old = _uploaded(b, s["id"], _bundle("tidy", "never used, expired"))
    fresh = _uploaded(b, s["id"], _bundle("tidy", "never used, fresh"))
    old_sha, fresh_sha = _row(ws, old)["blob_sha256"], _row(ws, fresh)["blob_sha256"]
    _backdate(ws, old)
    _backdate(ws, used["id"])
    version_shas = [f["sha256"] for f in b.ok("GET", f"/v1/skills/{s['id']}/files")["files"]]
    stale, young = _stage_folder(ws, OLD), _stage_folder(ws)   # no live process holds them
    with ws.blob_store.staging() as stage:                      # this one is in use (its flock is held)
        busy = stage.folder
        (busy / "blob-y").write_bytes(b"being written")
        os.utime(busy, (time.time() - OLD,) * 2)
        counts = housekeeping.sweep(ws)
        assert busy.exists() and (busy / "blob-y").exists()

    assert counts["uploads"] == 2 and counts["stageFolders"] == 2, counts
    assert _row(ws, old) is None and _row(ws, used["id"]) is None
    assert not ws.blob_store.exists(old_sha) and not ws.blob_store.exists(used["blob_sha256"])
    assert _row(ws, fresh) is not None and ws.blob_store.exists(fresh_sha)
    assert all(ws.blob_store.exists(sha) for sha in version_shas)
    assert not stale.exists() and not young.exists()
    # the published version still reads whole, and the fresh upload still publishes
    files = {f["path"]: f["content"] for f in b.ok("GET", f"/v1/skills/{s['id']}/files")["files"]}
    assert files["references/note.md"] == "published"
    assert b.api("POST", f"/v1/skills/{s['id']}/publish", {"uploadId": fresh}).status == 201
    # an expired upload is gone for good: validating it is 404, not a missing blob
    assert b.api("POST", f"/v1/skills/{s['id']}/validate", {"uploadId": old}).status == 404


def test_local_incoming_files_never_picked_up(backend, local_ws):
    if backend.kind != "local":
        pytest.skip("blobs/incoming is the local file:// flow's")
    b = backend
    s = create(b, "inbox")
    ws = local_ws(b.workspace)
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


def test_at_most_once_an_hour_and_after_a_local_command(backend, local_ws):
    if backend.kind != "local":
        pytest.skip("the opportunistic sweep is the local backend's")
    b = backend
    ws = local_ws(b.workspace)
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


def test_the_server_timer_sweeps(workspace, home, tmp_path, local_ws):
    b = make_backend("local", workspace, home)
    s = create(b, "served")
    uid = _uploaded(b, s["id"], _bundle("served", "left behind"))
    b.close()
    ws = local_ws(workspace)
    sha = _row(ws, uid)["blob_sha256"]
    stale = _stage_folder(ws, OLD)
    log = tmp_path / "serve.log"
    # the server's clock is three hours on: the upload is long expired, the files' ages are real
    with ws.blob_store.staging() as stage:     # held by a live process (this one): stays
        young = stage.folder
        server = start_server(workspace, base_env(tmp_path / "srv-home"), offset=OLD, log=log,
                              args=("--memory-interval", "0.2"))
        try:
            wait_until(lambda: _row(ws, uid) is None and not stale.exists(), "the server's timer did not sweep",
                       server.proc, log)
            assert _row(ws, uid) is None and not stale.exists(), log.read_text()
            assert not ws.blob_store.exists(sha) and young.exists()
            assert ws.setting(housekeeping.SETTING) is not None
            assert answers_health(server.url)
        finally:
            server.stop()


_KILLED_MID_UPLOAD = """
import os, signal, sys
from workspacectl.engine.workspaces import open_workspace
ws = open_workspace(str(sys.argv[1]))
with ws.blob_store.staging() as stage:
    stage.put([b"\\0" * (1 << 20)] * 8)
    print(stage.folder, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_serve_sweeps_stage_folders_of_killed_requests_when_it_starts(workspace, home, tmp_path, local_ws):
    """A process killed (-9) while staging an upload leaves its stage folder, young and full;
    `wsctl serve` removes it before it answers its first request, not an hour later, and leaves
    alone the folder a live process is staging in."""
    env = {**base_env(tmp_path / "killed-home"), "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    killed = subprocess.run([*WSCTL[:1], "-c", _KILLED_MID_UPLOAD, str(workspace)], env=env,
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    left = Path(killed.stdout.strip())
    assert left.is_dir() and sum(p.stat().st_size for p in left.iterdir()) == 8 << 20   # young, 8 MiB
    ws = local_ws(workspace)
    from tests.conftest import start_server

    with ws.blob_store.staging() as stage:
        live = stage.folder
        (live / "blob-live").write_bytes(b"still being written")
        server = start_server(workspace, base_env(tmp_path / "srv-home"), log=tmp_path / "serve.log")
        try:
            assert not left.exists(), server.log_text()       # gone by the time /healthz answers
            assert live.exists() and (live / "blob-live").exists()
            assert "abandoned stage folders" in server.log_text()
        finally:
            server.stop()


# ---------------------------------------------------------------- orphan blobs (issue: disk comes back)

def _plant_blob(ws, data: bytes, age: float) -> str:
    """A blob stored with no row naming it (as a kill inside a commit leaves one), `age` old."""
    from workspacectl.engine.db import transaction

    with transaction(ws.conn()):
        sha, _size = ws.blob_store.put([data])
    _make_old(ws, sha, age)
    return sha


def _make_old(ws, sha: str, age: float) -> None:
    """Written `age` seconds ago: a file's mtime, or the `blob` row's created_at on PostgreSQL."""
    then = time.time() - age
    if hasattr(ws.blob_store, "path"):
        os.utime(ws.blob_store.path(sha), (then, then))
    else:
        ws.conn().execute("UPDATE blob SET created_at = ? WHERE sha256 = ?", (then, sha))


def test_unreferenced_blobs_past_the_grace_period_are_collected(backend, local_ws):
    """A kill inside a commit publishes blobs no row names; housekeeping collects them once they
    are older than ORPHAN_AGE, and never a referenced or a young one."""
    b = backend
    pid = b.ok("POST", "/v1/projects", {"name": "Keep"})["project"]["id"]
    r = b.api("POST", f"/v1/projects/{pid}/files/bundle", raw=targz({"kept.txt": "referenced bytes"}))
    assert r.status == 200, r.body
    s = create(b, "kept-skill")
    publish_bundle(b, s["id"], _bundle("kept-skill", "a referenced skill file"))
    ws = local_ws(b.workspace)
    referenced = list(ws.blob_store.digests())
    assert len(referenced) >= 3
    for sha in referenced:                                 # referenced, and old: they stay
        _make_old(ws, sha, OLD)
    old = [_plant_blob(ws, f"orphan {i}".encode(), OLD) for i in range(3)]
    young = _plant_blob(ws, b"an orphan a request may still record", 60)
    counts = housekeeping.sweep(ws)
    assert counts["orphanBlobs"] == 3, counts
    assert not any(ws.blob_store.exists(sha) for sha in old)
    assert ws.blob_store.exists(young) and all(ws.blob_store.exists(sha) for sha in referenced)
    assert b.api("GET", f"/v1/projects/{pid}/files/bundle").status == 200
    assert housekeeping.sweep(ws)["orphanBlobs"] == 0      # nothing more to take


def test_an_old_orphan_reused_by_a_new_upload_is_kept(backend, local_ws):
    """publish() drops its copy when the blob exists: an old orphan that a new upload names again
    is referenced by the time the sweep re-checks it under the lock."""
    b = backend
    ws = local_ws(b.workspace)
    planted = _plant_blob(ws, b"same bytes twice", OLD)
    pid = b.ok("POST", "/v1/projects", {"name": "Reuse"})["project"]["id"]
    assert b.api("POST", f"/v1/projects/{pid}/files/bundle", raw=targz({"a.txt": "same bytes twice"})).status == 200
    assert housekeeping.sweep(ws)["orphanBlobs"] == 0
    assert ws.blob_store.exists(planted)
    files = b.ok("GET", f"/v1/projects/{pid}/files")["files"]
    assert [f["path"] for f in files] == ["a.txt"]


_KILLED_IN_COMMIT = """
import io, os, signal, sys, tarfile
from workspacectl.engine.dispatch import Engine
from workspacectl.engine.workspaces import open_workspace
ws = open_workspace(str(sys.argv[1]))
engine = Engine(ws)
seen = []

def die_at_the_files_commit(sql):   # SQLite tells us each statement: die as the upload's COMMIT runs
    seen.append(sql.split(None, 3)[:3])
    if sql.strip().upper().startswith("COMMIT") and any(w[:3] == ["INSERT", "INTO", "project_files"] for w in seen):
        os.kill(os.getpid(), signal.SIGKILL)

ws.conn().set_trace_callback(die_at_the_files_commit)
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as tf:
    data = os.urandom(1 << 20)
    info = tarfile.TarInfo("big.bin"); info.size = len(data)
    tf.addfile(info, io.BytesIO(data))
engine.handle("POST", f"/v1/projects/{sys.argv[2]}/files/bundle", None, buf.getvalue(), sys.argv[3])
"""


def test_a_kill_inside_a_commit_leaves_blobs_that_housekeeping_collects(workspace, home, tmp_path, local_ws):
    b = make_backend("local", workspace, home)
    pid = b.ok("POST", "/v1/projects", {"name": "Killed"})["project"]["id"]
    token = b.owner_token
    b.close()
    ws = local_ws(workspace)
    before = set((ws.blobs / "sha256").glob("*/*"))
    script = tmp_path / "killed.py"
    script.write_text(_KILLED_IN_COMMIT)
    p = subprocess.run([os.sys.executable, str(script), str(workspace), pid, token],
                       env={**os.environ}, capture_output=True, text=True, timeout=300)
    assert p.returncode == -9, p.stderr[-2000:]
    left = set((ws.blobs / "sha256").glob("*/*")) - before
    assert left, "the drill should leave a published blob behind"
    ws2 = local_ws(workspace)
    assert ws2.conn().execute("SELECT COUNT(*) FROM project_files").fetchone()[0] == 0   # rolled back
    assert housekeeping.sweep(ws2)["orphanBlobs"] == 0           # young: may be a live request's
    counts = housekeeping.sweep(ws2, clock.now() + timedelta(seconds=OLD))
    assert counts["orphanBlobs"] == len(left) and not any(p.exists() for p in left)
