"""Two `wsctl serve` replicas on one PostgreSQL workspace (issue 11 item 4 and the drills of item 6).

Both replicas are given the same key (WSCTL_MASTER_KEY) and, until blobs move into PostgreSQL,
the same blob folder (WSCTL_BLOB_DIR, as a shared mount would be); each has its own home.
"""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import tarfile
import threading
import zlib
from pathlib import Path

import httpx
import pytest

from tests.conftest import WAIT_LIMIT, finish_all, free_port, make_backend, pg_env, run_wsctl, start_server, wait_until
from tests.oauth_provider import OAuthProvider
from tests.project_helpers import make_project
from tests.skill_helpers import create, put_url, skill_md, targz
from tests.vault.test_refresh_concurrency import _burst
from tests.vault_helpers import install_service, make_credential, open_ws


def _replica_env(pg_databases, ws, folder):
    return {**pg_env(folder, pg_databases), "WSCTL_BLOB_DIR": str(ws / "blobs")}


@pytest.fixture
def replicas(pg_workspace, pg_databases, home, tmp_path, monkeypatch):
    """(backend on replica A, URL of replica B) on one fresh PostgreSQL workspace."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("WSCTL_BLOB_DIR", str(pg_workspace / "blobs"))
    with ThreadPoolExecutor(2) as starting:       # both start at once, as replicas do
        futures = [starting.submit(start_server, pg_workspace, _replica_env(pg_databases, pg_workspace,
                                                                            tmp_path / f"{name}-home"),
                                   log=tmp_path / f"{name}.log") for name in "ab"]
    failed = [f.exception() for f in futures if f.exception() is not None]
    if failed:                                    # stop the one that did start, say why the other did not
        for f in futures:
            if f.exception() is None:
                f.result().stop()
        raise failed[0]
    a, b = (f.result() for f in futures)
    backend = make_backend("remote", pg_workspace, home, server=a)
    try:
        yield backend, b.url
    finally:
        backend.close()
        b.stop()


def _as(url: str, secret: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {secret}"}, trust_env=False, timeout=60)


def test_a_write_on_one_replica_is_read_on_the_other(replicas):
    a, b_url = replicas
    made = a.add_member("rita@example.com", "Rita")
    pid = make_project(a, "Shared")
    with _as(b_url, a.owner_token) as b:
        assert made["id"] in [m["id"] for m in b.get("/v1/members").json()["members"]]
        assert b.get(f"/v1/projects/{pid}").json()["project"]["name"] == "Shared"
        # and back: a grant written on B is what A reads
        assert b.put(f"/v1/projects/{pid}/grants", json={"workspace": True, "role": "viewer"}).status_code == 200
    assert a.ok("GET", f"/v1/projects/{pid}")["project"]["orgGrant"] == {"role": "viewer"}


def test_a_presigned_url_and_a_sign_in_link_of_one_replica_work_on_the_other(replicas):
    a, b_url = replicas
    sid = create(a, "pg-skill")["id"]
    up = a.ok("POST", f"/v1/skills/{sid}/bundle-upload-url")
    url_on_b = up["url"].replace(a.base_url, b_url)
    assert url_on_b != up["url"]
    assert put_url(url_on_b, targz({"SKILL.md": skill_md("pg-skill"), "x.txt": "x"})) == 200
    with _as(b_url, a.owner_token) as b:
        r = b.post(f"/v1/skills/{sid}/publish", json={"uploadId": up["uploadId"]})
        assert r.status_code in (200, 201), r.text
    assert a.ok("GET", f"/v1/skills/{sid}")["version"] == 1
    link = a.ok("POST", "/v1/auth/web-link", {"next": "/docs"})["url"]
    with httpx.Client(trust_env=False, timeout=60) as browser:
        page = browser.get(link.replace(a.base_url, b_url), follow_redirects=False)
        assert page.status_code in (302, 303) and "set-cookie" in page.headers
        again = browser.get(link, follow_redirects=False)       # single use, whichever replica sees it
        assert again.status_code >= 400


def test_fifty_token_requests_over_both_replicas_cause_one_refresh(replicas):
    a, b_url = replicas
    with OAuthProvider() as provider:
        provider.refresh_delay = 0.3
        install_service(a.workspace, provider.service_toml("loopcrm"))
        grant = provider.grant()
        cred = make_credential(a.workspace, a.owner["id"], "loopcrm",
                               {"accessToken": grant["access_token"], "refreshToken": grant["refresh_token"]},
                               expires_in=-5)
        responses = _burst([a.base_url, b_url], a.owner_token, cred["id"], 50)
        assert [r.status_code for r in responses] == [200] * 50, [r.text for r in responses if r.status_code != 200][:3]
        assert provider.refreshes == 1
        assert {r.json()["accessToken"] for r in responses} == {provider.issued[-1]["access_token"]}
    log = a.ok("GET", f"/v1/credentials/{cred['id']}/access-log", query={"limit": "500"})["entries"]
    assert len(log) == 50


def test_a_server_leaves_no_postgresql_session_to_the_garbage_collector(pg_workspace, pg_databases, tmp_path):
    """serve's start-up sweep, the timer thread (closing its connection as it ends) and the lease
    release at shutdown each close the session they took: a server that ran its timer and stopped
    logs no ResourceWarning (psycopg's "deleted while still open"), with every one shown."""
    env = {**_replica_env(pg_databases, pg_workspace, tmp_path / "home"), "PYTHONWARNINGS": "always::ResourceWarning"}
    log = tmp_path / "serve.log"
    server = start_server(pg_workspace, env, log=log, args=("--memory-interval", "0.2"))
    try:
        wait_until(lambda: "now runs the memory agent" in server.log_text(), "the timer took no lease", server.proc, log)
    finally:
        server.stop()
    assert "ResourceWarning" not in server.log_text() and "still open" not in server.log_text(), server.log_text()


def test_processes_starting_together_apply_each_migration_once(pg_databases, tmp_path):
    """Two processes migrating one empty database at the same moment (as replicas of a new
    version do on start): every migration is applied exactly once, by one of them, and neither
    fails on a table the other made."""
    import json
    import sys

    from workspacectl.engine.migrations import MIGRATIONS

    url = pg_databases.fresh(tmp_path, empty=True)
    code = ("import json, sys; from workspacectl.engine.db.postgres import PgConnection; "
            "from workspacectl.engine.migrations import apply_migrations; "
            "sys.stdin.readline(); print(json.dumps(apply_migrations(PgConnection(sys.argv[1]))))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(url)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:                      # both are up and connected to nothing yet: go together
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = finish_all(procs, timeout=300)
    assert [code for code, _, _ in outs] == [0, 0], [err[-2000:] for _, _, err in outs]

    applied = [json.loads(out) for _, out, _ in outs]
    assert sorted(applied[0] + applied[1]) == sorted(name for name, _ in MIGRATIONS)
    import psycopg

    with psycopg.connect(str(url)) as c:
        rows = c.execute("SELECT name, count(*) FROM migrations GROUP BY name").fetchall()
    assert sorted(rows) == sorted((name, 1) for name, _ in MIGRATIONS)
    pg_databases.drop(url)


def test_a_replica_with_the_wrong_key_refuses_to_start(pg_workspace, pg_databases, tmp_path):
    import base64
    import os

    ws_owner = open_ws(pg_workspace)
    owner = ws_owner.conn().execute("SELECT id FROM members LIMIT 1").fetchone()[0]
    ws_owner.conn().close()
    install_service(pg_workspace, 'service = "keysvc"\nname = "K"\ncredentialType = "apiKey"\n')
    make_credential(pg_workspace, owner, "keysvc", {"apiKey": "sk-sealed-2"})
    env = {**_replica_env(pg_databases, pg_workspace, tmp_path / "w-home"),
           "WSCTL_MASTER_KEY": base64.b64encode(os.urandom(32)).decode()}
    p = run_wsctl(["serve", "--workspace", str(pg_workspace), "--port", str(free_port())], env, expect=3)
    lines = p.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "WSCTL_MASTER_KEY" in lines[0]
    assert "postgres@" in lines[0] or "workspace" in lines[0]


# ---------------------------------------------------------------- kill -9 drills

class StreamedBundle:
    """A tar.gz made while it is sent, never held whole: `files` maps a path to its bytes or to a
    size (that many random bytes, made a MiB at a time). Counts the bytes handed to the sender
    (`sent`) and records each file's sha256 once made. With `pause_at`, it stops handing out
    bytes once that many have gone (setting `paused`) until `resume` is set, so a test can act
    at that point of the upload."""

    def __init__(self, files: dict, pause_at: int | None = None):
        self.files, self.pause_at = files, pause_at
        self.sent = 0
        self.sha256: dict[str, str] = {}
        self.paused, self.resume = threading.Event(), threading.Event()

    def __iter__(self):
        z = zlib.compressobj(0, zlib.DEFLATED, 31)   # gzip framing around stored blocks: cheap to make
        for path, spec in self.files.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = (len(spec) if isinstance(spec, bytes) else spec), 0o644
            yield from self._out(z.compress(info.tobuf()))
            digest = hashlib.sha256()
            for piece in [spec] if isinstance(spec, bytes) else _random_pieces(spec):
                digest.update(piece)
                yield from self._out(z.compress(piece))
            self.sha256[path] = digest.hexdigest()
            yield from self._out(z.compress(b"\0" * (-info.size % 512)))
        yield from self._out(z.compress(b"\0" * 1024) + z.flush())

    def _out(self, data: bytes):
        if self.pause_at is not None and self.sent >= self.pause_at and not self.paused.is_set():
            self.paused.set()
            self.resume.wait(WAIT_LIMIT)
        self.sent += len(data)
        if data:
            yield data


def _random_pieces(size: int):
    while size:
        n = min(size, 1 << 20)
        size -= n
        yield os.urandom(n)


def _bytes_written_by(pid: int) -> int:
    """Bytes the process has written with write(2) and its kin (/proc/PID/io wchar): a server's
    upload spool file counts, its sockets (send(2)) do not."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError(f"/proc/{pid}/io has no wchar line")


def _blob_rows(url) -> tuple[int, int]:
    """(blob rows, chunk rows) committed in the workspace's database, as any other session sees them."""
    import psycopg

    with psycopg.connect(str(url), autocommit=True) as c:
        return c.execute("SELECT (SELECT count(*) FROM blob), (SELECT count(*) FROM blob_chunk)").fetchone()


def _chunks_being_copied(watch) -> int:
    """The most blob chunks a COPY still running in this database has written so far (0: none runs):
    a write transaction storing a blob, caught in the act (PostgreSQL's pg_stat_progress_copy)."""
    return watch.execute("SELECT coalesce(max(tuples_processed), 0) FROM pg_stat_progress_copy "
                         "WHERE datname = current_database() AND relid = 'blob_chunk'::regclass").fetchone()[0]


def _kill_9(server) -> None:
    server.proc.send_signal(signal.SIGKILL)
    assert server.proc.wait(WAIT_LIMIT) == -signal.SIGKILL


def _in_flight(request) -> tuple[threading.Thread, dict]:
    """Run `request()` in a thread; its answer (or the HTTP error it met) lands in the dict."""
    outcome: dict = {}

    def run():
        try:
            outcome["answer"] = request()
        except httpx.HTTPError as e:
            outcome["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, outcome


def _when_copying(url, at_least: int, outcome: dict, server) -> None:
    """Wait until a COPY in the workspace's database has written `at_least` blob chunks (the write
    transaction of the request in flight on `server`), failing if the request was answered first."""
    import psycopg

    def copying():
        if "answer" in outcome or "error" in outcome:
            raise AssertionError(f"the request ended before its transaction was seen storing blobs: {outcome}")
        return _chunks_being_copied(watch) >= at_least

    with psycopg.connect(str(url), autocommit=True) as watch:
        wait_until(copying, "no transaction was seen storing blob chunks", server.proc, server.log, every=0.01)


def _no_stage_left(replica_env: dict, ws, log: Path) -> None:
    """The killed replica, started again, removes what its killed request staged on local disk."""
    again = start_server(ws, replica_env, log=log)
    try:
        assert [p.name for p in (ws / "blobs" / "tmp").glob("stage-*")] == []
    finally:
        again.stop()


BIG = 200 << 20


@pytest.mark.parametrize("moment", ["receiving", "storing"])
def test_kill_9_of_a_replica_mid_200_mb_upload_leaves_nothing_half_visible(replicas, pg_databases, tmp_path, moment):
    """A 200 MiB bundle (streamed from a generator) to replica A, which is killed with SIGKILL
    either while the body arrives (once it has spooled over half of it) or while its transaction
    stores the blobs (PostgreSQL shows the COPY under way): no project file, no blob and no chunk
    of it is visible, replica B answers throughout, and a later upload through B lands whole."""
    a, b_url = replicas
    pid = make_project(a, "Big")
    before = _blob_rows(a.workspace)
    bundle = StreamedBundle({"README.md": b"# Big\n", **{f"part{i}.bin": BIG // 4 for i in range(4)}},
                            pause_at=BIG * 7 // 10 if moment == "receiving" else None)
    written_before = _bytes_written_by(a.server.proc.pid)
    t, outcome = _in_flight(lambda: httpx.post(
        f"{a.base_url}/v1/projects/{pid}/files/bundle", content=iter(bundle), trust_env=False, timeout=WAIT_LIMIT,
        headers={"Authorization": f"Bearer {a.owner_token}", "Content-Type": "application/gzip"}))
    try:
        if moment == "receiving":
            assert bundle.paused.wait(WAIT_LIMIT), "the upload never got that far"
            wait_until(lambda: _bytes_written_by(a.server.proc.pid) - written_before >= BIG // 2,
                       "replica A did not spool half of the upload", a.server.proc, a.server.log)
        else:
            _when_copying(a.workspace, 8, outcome, a.server)
        _kill_9(a.server)
    finally:
        bundle.resume.set()
        t.join(WAIT_LIMIT)
    assert "answer" not in outcome, outcome          # the killed replica answered nothing
    assert _blob_rows(a.workspace) == before           # no blob, no chunk of it
    with _as(b_url, a.owner_token) as b:
        assert b.get("/healthz").status_code == 200
        assert b.get(f"/v1/projects/{pid}/files").json()["files"] == []
        r = b.post(f"/v1/projects/{pid}/files/bundle", content=targz({"after.md": "after the kill"}),
                   headers={"Content-Type": "application/gzip"})
        assert r.json() == {"added": 1, "updated": 0}, r.text
        assert [f["path"] for f in b.get(f"/v1/projects/{pid}/files").json()["files"]] == ["after.md"]
    assert _blob_rows(a.workspace) == (before[0] + 1, before[1] + 1)
    _no_stage_left(_replica_env(pg_databases, a.workspace, tmp_path / "a-home"), a.workspace, tmp_path / "a2.log")


def _stored_whole(url, digests) -> bool:
    """Every blob named is committed with all of its chunks."""
    import psycopg

    with psycopg.connect(str(url), autocommit=True) as c:
        rows = c.execute("SELECT b.sha256, b.chunks, (SELECT count(*) FROM blob_chunk k WHERE k.sha256 = b.sha256) "
                         "FROM blob b WHERE b.sha256 = ANY(%s)", (list(digests),)).fetchall()
    return len(rows) == len(set(digests)) and all(chunks == have for _, chunks, have in rows)


def test_kill_9_of_a_replica_mid_skill_publish_leaves_the_old_version_or_the_whole_new_one(replicas, pg_databases,
                                                                                           tmp_path):
    """A skill at version 1; a 40 MiB version 2 is uploaded, then its publish sent to replica A,
    which is killed with SIGKILL while the publish's transaction stores the new files. Through
    replica B the skill then has exactly the old version list and files, or exactly the new ones
    with every blob whole, never a part; and the same upload publishes through B (once)."""
    a, b_url = replicas
    sid = create(a, "drill-skill")["id"]
    first = a.ok("POST", f"/v1/skills/{sid}/bundle-upload-url")
    assert put_url(first["url"], targz({"SKILL.md": skill_md("drill-skill"), "v1.txt": "one"})) == 200
    a.ok("POST", f"/v1/skills/{sid}/publish", {"uploadId": first["uploadId"]})
    old_files = a.ok("GET", f"/v1/skills/{sid}/files")["files"]
    old_versions = a.ok("GET", f"/v1/skills/{sid}/versions")["versions"]

    bundle = StreamedBundle({"SKILL.md": skill_md("drill-skill", "Version two. Use when testing.").encode(),
                             **{f"assets/part{i}.bin": 10 << 20 for i in range(4)}})
    up = a.ok("POST", f"/v1/skills/{sid}/bundle-upload-url")
    assert httpx.put(up["url"], content=iter(bundle), trust_env=False, timeout=WAIT_LIMIT).status_code == 200
    before = _blob_rows(a.workspace)
    t, outcome = _in_flight(lambda: httpx.post(
        f"{a.base_url}/v1/skills/{sid}/publish", json={"uploadId": up["uploadId"]}, trust_env=False,
        timeout=WAIT_LIMIT, headers={"Authorization": f"Bearer {a.owner_token}"}))
    try:
        _when_copying(a.workspace, 2, outcome, a.server)   # SKILL.md stored, a part under way
        _kill_9(a.server)
    finally:
        t.join(WAIT_LIMIT)
    with _as(b_url, a.owner_token) as b:
        assert b.get("/healthz").status_code == 200
        versions = b.get(f"/v1/skills/{sid}/versions").json()["versions"]
        files = b.get(f"/v1/skills/{sid}/files").json()
        if len(versions) == len(old_versions):           # the publish died before its commit: all old
            assert versions == old_versions and files["version"] == 1 and files["files"] == old_files
            assert _blob_rows(a.workspace) == before
            r = b.post(f"/v1/skills/{sid}/publish", json={"uploadId": up["uploadId"]})
            assert r.status_code == 201, r.text
            files = b.get(f"/v1/skills/{sid}/files").json()
        assert [v["number"] for v in b.get(f"/v1/skills/{sid}/versions").json()["versions"]] == [2, 1]
        assert files["version"] == 2
        assert {f["path"]: f["sha256"] for f in files["files"]} == bundle.sha256
        assert _stored_whole(a.workspace, bundle.sha256.values())
        again = b.post(f"/v1/skills/{sid}/publish", json={"uploadId": up["uploadId"]})
        assert again.status_code == 409, again.text                       # used once, whichever replica
    _no_stage_left(_replica_env(pg_databases, a.workspace, tmp_path / "a-home"), a.workspace, tmp_path / "a2.log")
