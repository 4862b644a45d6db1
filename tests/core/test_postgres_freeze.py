"""A replica whose PostgreSQL server stops answering (every process of it SIGSTOPped: a frozen
machine, a partition that drops packets without a reset) ends each request with 503 and
Retry-After instead of hanging, answers /readyz 503 while /healthz stays 200, and serves again
once the server is resumed, with no restart (engine/db/pg_session.py).

The PostgreSQL server is the test's own (initdb + pg_ctl on a free port, in a temporary folder):
freezing the shared one would stall every other test. initdb refuses to run as root, so as root
it runs as the `postgres` user (runuser); the test skips, saying why, where neither works."""
from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import httpx
import pytest

from tests.conftest import PgLocation, base_env, free_port, make_backend, run_wsctl, start_server, wait_until

PG_BIN = Path("/usr/lib/postgresql/15/bin")
DB_TIMEOUT_MS = 2000   # the replica's WSCTL_DB_TIMEOUT_MS here (default 10 s)
ENDED_WITHIN = 60.0    # a generous bound on each request's end: it bounds a hang, it times nothing


def _as_owner(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return argv
    return ["runuser", "-u", "postgres", "--", *argv]


class OwnCluster:
    def __init__(self):
        self.root = Path(tempfile.mkdtemp(prefix="wsctl-pgfreeze-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        initdb = subprocess.run(_as_owner([str(PG_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U",
                                           "postgres", "-N"]), capture_output=True, text=True, timeout=120)
        if initdb.returncode != 0:
            pytest.skip(f"initdb failed here: {initdb.stderr.strip()[-300:]}")
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60"
        subprocess.run(_as_owner([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", options, "-l",
                                  str(self.root / "log"), "-w", "start"]), check=True, capture_output=True,
                       timeout=120)

    def processes(self) -> list[int]:
        """The postmaster and every process it started (backends, checkpointer, walwriter...)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        pids = [postmaster]
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                if int(stat.rpartition(")")[2].split()[1]) == postmaster:
                    pids.append(int(entry.name))
        return pids

    def signal_all(self, sig: int) -> None:
        for pid in self.processes():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        self.signal_all(signal.SIGCONT)
        if (self.data / "postmaster.pid").exists():
            subprocess.run(_as_owner([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"]),
                           capture_output=True, timeout=120)
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="module")
def own_cluster():
    if not (PG_BIN / "initdb").exists():
        pytest.skip(f"no PostgreSQL 15 binaries in {PG_BIN}")
    if os.geteuid() == 0 and (shutil.which("runuser") is None or _no_user("postgres")):
        pytest.skip("running as root without runuser or a postgres user: initdb cannot run")
    cluster = OwnCluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def _no_user(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        return True
    return False


def _assert_unavailable(r: httpx.Response) -> None:
    assert r.status_code == 503, r.text
    assert r.json()["error"]["code"] == "unreachable"
    assert int(r.headers["retry-after"]) > 0
    assert "\n" not in r.json()["error"]["message"]


def test_a_frozen_database_is_503_and_not_ready_then_served_again(own_cluster, tmp_path, monkeypatch):
    key = base64.b64encode(os.urandom(32)).decode()
    monkeypatch.setenv("WSCTL_MASTER_KEY", key)
    env = {**base_env(tmp_path / "home"), "WSCTL_MASTER_KEY": key}
    run_wsctl(["init", "--workspace", own_cluster.url, "--name", "Freeze", "--owner-name", "Olive Owner",
               "--owner-email", "olive@example.com"], env)
    loc = PgLocation(own_cluster.url, tmp_path)
    server_env = {**base_env(tmp_path / "server-home"), "WSCTL_MASTER_KEY": key,
                  "WSCTL_DB_TIMEOUT_MS": str(DB_TIMEOUT_MS), "WSCTL_BUSY_TIMEOUT_MS": "1000"}
    server = start_server(loc, server_env, log=tmp_path / "server.log", args=("--memory-interval", "0"))
    b = make_backend("remote", loc, tmp_path / "home", server=server)
    http = httpx.Client(base_url=server.url, timeout=ENDED_WITHIN, trust_env=False)
    auth = {"Authorization": f"Bearer {b.owner_token}"}
    try:
        assert http.get("/v1/auth/whoami", headers=auth).status_code == 200   # the replica's session is open
        assert http.get("/readyz").status_code == 200

        own_cluster.signal_all(signal.SIGSTOP)
        try:
            # a read on the replica's open session, a write, a read on a session opened meanwhile:
            # each ends (the client's timeout would raise), 503 with Retry-After
            _assert_unavailable(http.get("/v1/auth/whoami", headers=auth))
            _assert_unavailable(http.post("/v1/keys", headers=auth,
                                          json={"kind": "personal", "scopes": ["projects:manage"], "name": "frozen"}))
            _assert_unavailable(http.get("/v1/auth/whoami", headers=auth))
            ready = http.get("/readyz")
            assert ready.status_code == 503 and int(ready.headers["retry-after"]) > 0
            assert http.get("/healthz").status_code == 200    # liveness: the process itself answers
        finally:
            own_cluster.signal_all(signal.SIGCONT)

        wait_until(lambda: http.get("/readyz").status_code == 200, "/readyz 200 after the database resumed",
                   server.proc, server.log)
        assert http.get("/v1/auth/whoami", headers=auth).json()["member"]["email"] == "olive@example.com"
        made = http.post("/v1/keys", headers=auth, json={"kind": "personal", "scopes": ["projects:manage"],
                                                         "name": "after"})
        assert made.status_code == 201, made.text
        names = [k["name"] for k in http.get("/v1/keys", headers=auth).json()["keys"]]
        assert "after" in names and "frozen" not in names    # the refused write left nothing
        assert server.proc.poll() is None                      # served again with no restart
    finally:
        http.close()
        b.close()
    assert "Traceback" not in server.log_text()


def test_the_database_timeout_setting_is_whole_milliseconds(monkeypatch):
    from workspacectl.engine.db import DB_TIMEOUT_MS, db_timeout_ms
    from workspacectl.errors import ApiError

    monkeypatch.delenv("WSCTL_DB_TIMEOUT_MS", raising=False)
    assert db_timeout_ms() == DB_TIMEOUT_MS == 10000
    monkeypatch.setenv("WSCTL_DB_TIMEOUT_MS", "2500")
    assert db_timeout_ms() == 2500
    for bad in ("0", "-1", "1.5", "ten", "3600001"):
        monkeypatch.setenv("WSCTL_DB_TIMEOUT_MS", bad)
        with pytest.raises(ApiError, match="WSCTL_DB_TIMEOUT_MS must be a whole number of milliseconds from 1"):
            db_timeout_ms()
