"""Two `wsctl serve` replicas on one PostgreSQL workspace (issue 11 item 4 and the drills of item 6).

Both replicas are given the same key (WSCTL_MASTER_KEY) and, until blobs move into PostgreSQL,
the same blob folder (WSCTL_BLOB_DIR, as a shared mount would be); each has its own home.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

import httpx
import pytest

from tests.conftest import WSCTL, free_port, make_backend, pg_env, start_server
from tests.oauth_provider import OAuthProvider
from tests.project_helpers import make_project
from tests.skill_helpers import create, put_url, skill_md, targz
from tests.vault_helpers import install_service, make_credential, open_ws
from tests.vault.test_refresh_concurrency import _burst


def _replica_env(pg_databases, ws, folder):
    return {**pg_env(folder, pg_databases), "WSCTL_BLOB_DIR": str(ws / "blobs")}


@pytest.fixture
def replicas(pg_workspace, pg_databases, home, tmp_path, monkeypatch):
    """(backend on replica A, URL of replica B) on one fresh PostgreSQL workspace."""
    monkeypatch.setenv("WSCTL_BLOB_DIR", str(pg_workspace / "blobs"))
    a = start_server(pg_workspace, _replica_env(pg_databases, pg_workspace, tmp_path / "a-home"), log=tmp_path / "a.log")
    b = start_server(pg_workspace, _replica_env(pg_databases, pg_workspace, tmp_path / "b-home"), log=tmp_path / "b.log")
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
        assert [r.status_code for r in responses] == [200] * 50, responses[0].text
        assert provider.refreshes == 1
        assert {r.json()["accessToken"] for r in responses} == {provider.issued[-1]["access_token"]}
    log = a.ok("GET", f"/v1/credentials/{cred['id']}/access-log", query={"limit": "500"})["entries"]
    assert len(log) == 50


def test_processes_starting_together_apply_each_migration_once(pg_databases, tmp_path):
    """Two processes migrating one empty database at the same moment (as replicas of a new
    version do on start): every migration is applied exactly once, by one of them, and neither
    fails on a table the other made."""
    import json
    import sys

    from workspacectl.engine.migrations import MIGRATIONS

    url = pg_databases.fresh(tmp_path)
    pg_databases._sql(f"DROP DATABASE {url.rpartition('/')[2]} WITH (FORCE)")
    pg_databases._sql(f"CREATE DATABASE {url.rpartition('/')[2]}")
    code = ("import json, sys; from workspacectl.engine.db_postgres import PgConnection; "
            "from workspacectl.engine.migrations import apply_migrations; "
            "sys.stdin.readline(); print(json.dumps(apply_migrations(PgConnection(sys.argv[1]))))")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(url)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:                      # both are up and connected to nothing yet: go together
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]

    applied = [json.loads(out) for out, _ in outs]
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
    p = subprocess.run([*WSCTL, "serve", "--workspace", str(pg_workspace), "--port", str(free_port())],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 3, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "WSCTL_MASTER_KEY" in lines[0]
    assert "postgres@" in lines[0] or "workspace" in lines[0]


def _slow_bundle(total: int, started: threading.Event):
    """A large upload streamed slowly enough that the replica can be killed in the middle."""
    import gzip
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for i in range(4):
            data = os.urandom(total // 4)
            info = tarfile.TarInfo(f"part{i}.bin")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    packed = gzip.compress(buf.getvalue(), compresslevel=1)
    step = 256 << 10

    def gen():
        for i in range(0, len(packed), step):
            if i >= len(packed) // 2:
                started.set()
                time.sleep(0.2)
            yield packed[i:i + step]
    return gen()


def test_kill_9_of_a_replica_mid_upload_and_mid_publish_leaves_nothing_half_visible(replicas, tmp_path):
    a, b_url = replicas
    pid = make_project(a, "Big")
    started = threading.Event()
    errors = []

    def upload():
        try:
            httpx.post(f"{a.base_url}/v1/projects/{pid}/files/bundle", content=_slow_bundle(24 << 20, started),
                      headers={"Authorization": f"Bearer {a.owner_token}", "Content-Type": "application/gzip"},
                      trust_env=False, timeout=120)
        except httpx.HTTPError as e:
            errors.append(e)

    t = threading.Thread(target=upload)
    t.start()
    assert started.wait(120), "the upload never got half-way"
    a.server.proc.send_signal(signal.SIGKILL)
    a.server.proc.wait(60)
    t.join(120)
    with _as(b_url, a.owner_token) as b:
        assert b.get("/healthz").status_code == 200
        assert b.get(f"/v1/projects/{pid}/files").json()["files"] == []     # nothing half-visible
        # a skill publish on B while A is gone: whole or not at all, and B keeps serving
        sid = b.post("/v1/skills", json={"name": "after-kill", "description": "Does a thing. Use when testing."}).json()["id"]
        up = b.post(f"/v1/skills/{sid}/bundle-upload-url").json()
        assert put_url(up["url"], targz({"SKILL.md": skill_md("after-kill")})) == 200
        assert b.post(f"/v1/skills/{sid}/publish", json={"uploadId": up["uploadId"]}).status_code in (200, 201)
        got = b.get(f"/v1/skills/{sid}").json()
        assert got["version"] == 1
