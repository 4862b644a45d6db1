"""Shared fixtures: every behaviour runs through both backends with real parts.

- `home`: a fresh WSCTL_HOME for the test (also set in os.environ for in-process code).
- `backend`: parametrized local/remote over the test's own workspace. remote = a real
  `wsctl serve` subprocess on 127.0.0.1; local = the in-process engine (for `.api`) and the
  real CLI with WSCTL_WORKSPACE (for `.wsctl`).
- `serve(path, env=None, offset=0)`: a context manager running `wsctl serve`, yielding its URL.
- PostgreSQL (issue 11): the `backend` fixture's third door `postgres` is the remote backend
  against `wsctl serve` on a PostgreSQL workspace. The server is WSCTL_TEST_POSTGRES_URL (default
  postgresql://postgres@127.0.0.1:5432/postgres when it answers; `none` turns the door off); when
  none answers those tests skip saying why, or fail when WSCTL_REQUIRE_POSTGRES=1 (.ci/run). Each
  test gets a fresh database copied from a template made once per session by `wsctl init`;
  databases of the session are dropped in batches as tests end, the last ones by a detached
  process at its end (PgDatabases.close).

Workspaces are copied from one template made per session (creating one loads the built-in
catalog, which every test would otherwise pay for).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests import forkserver

WSCTL = [sys.executable, "-m", "workspacectl"]
OWNER = {"name": "Olive Owner", "email": "olive@example.com"}


def base_env(home: Path) -> dict:
    """Environment for a wsctl subprocess: no inherited WSCTL_* and no usable OS keyring."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WSCTL_")}
    env.update({"WSCTL_HOME": str(home), "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200",
                "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", "PYTHONUNBUFFERED": "1"})
    return env


# For a command that is expected to find no server (or a misbehaving one): its retries go at once, as
# many as by default (WSCTL_RETRY_BACKOFF_MS=0), instead of waiting ~2.5-3 s of backoff each.
# tests/cli/test_remote_errors.py keeps one command on the default waits and checks them.
NO_BACKOFF = {"WSCTL_RETRY_BACKOFF_MS": "0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self):
        return json.loads(self.out)


def run_wsctl(args, env: dict, input: str | None = None, expect: int | None = 0, timeout: float = 120,
              fresh: bool = False, text: bool = True, cwd: Path | None = None) -> Result:
    """`wsctl *args` in a process of its own, as subprocess.run would run `python -m workspacectl`:
    forked from tests/forkserver.py (its imports already done) when it can, else (and with `fresh`)
    a fresh interpreter. With text=False its output is bytes, exactly as written (no newline
    translation); `cwd` is its working directory."""
    args = [str(a) for a in args]
    proc = None if fresh else forkserver.spawn(args, env, stdin=subprocess.PIPE if input is not None else None,
                                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=text, cwd=cwd)
    if proc is None:
        p = subprocess.run([*WSCTL, *args], env=env, input=input, capture_output=True, text=text, timeout=timeout,
                           cwd=cwd)
        r = Result(p.returncode, p.stdout, p.stderr)
    else:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        r = Result(proc.returncode, out, err)
    if expect is not None:
        assert r.code == expect, f"wsctl {' '.join(map(str, args))} exited {r.code}, expected {expect}\n" \
                                 f"stdout: {r.out[-2000:]}\nstderr: {r.err[-2000:]}"
    return r


class Server:
    def __init__(self, url: str, proc: subprocess.Popen, log: Path):
        self.url, self.proc, self.log = url, proc, log

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop_later(self) -> None:
        """Stop it without waiting here: a thread asks it to stop and reaps it while the next test
        runs. A server takes 0.2-0.5 s to stop (uvicorn notices the signal at its next 0.1 s tick,
        then shuts down), nearly all of it idle; a door server is done with once its test ends, so
        nothing needs to wait for that. The session's end waits for every one (stop_all_later)."""
        thread = threading.Thread(target=self.stop, name=f"stop {self.url}", daemon=True)
        thread.start()
        with _stopping_lock:
            _stopping[:] = [t for t in _stopping if t.is_alive()] + [thread]


_stopping: list[threading.Thread] = []
_stopping_lock = threading.Lock()


def stop_all_later() -> None:
    """Wait for every server Server.stop_later is stopping (stop() kills one not gone in 60 s)."""
    with _stopping_lock:
        threads, _stopping[:] = list(_stopping), []
    for t in threads:
        t.join()


# How long a test waits for something that happens on its own (a server starting, a timer
# firing, a log line appearing) before calling it hung. Generous on purpose: it bounds a hang,
# it does not time a healthy run, so a machine busy with other work only makes the wait longer.
WAIT_LIMIT = 180.0


def wait_until(condition, what: str, proc: subprocess.Popen | None = None, log: Path | None = None,
               limit: float = WAIT_LIMIT, every: float = 0.05):
    """Poll condition() until it answers something true, and return that. Fail after `limit`
    seconds, or as soon as `proc` exits, saying `what` did not happen, with the tail of `log`."""
    deadline = time.monotonic() + limit
    while True:
        result = condition()
        if result:
            return result
        tail = log.read_text(errors="replace")[-3000:] if log is not None and log.exists() else ""
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: wsctl serve exited {proc.returncode}\n{tail}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {limit:.0f} s\n{tail}")
        time.sleep(every)


def finish_all(procs: list[subprocess.Popen], timeout: float = WAIT_LIMIT) -> list[tuple[int, str, str]]:
    """(exit code, stdout, stderr) of each process started in parallel with its pipes, each read to
    the end. Whatever happens (a timeout, an error), every process is killed if still running,
    reaped and its pipes closed: no child or pipe is left to the garbage collector."""
    try:
        results = []
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            results.append((p.returncode, out, err))
        return results
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            with p:  # closes the pipes and waits
                pass


def answers_health(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=10, trust_env=False).status_code == 200
    except httpx.HTTPError:
        return False


# The door servers fold no memory on a timer: a server started ahead of its test may sit in the pool
# for minutes under load, and a fold the test did not ask for changes the versions it counts. Tests
# of the timer start their own server with --memory-interval.
DOOR_SERVER_ARGS = ("--memory-interval", "0")


def start_server(workspace: Path, env: dict | None = None, offset: int = 0, log: Path | None = None,
                 args: tuple = ()) -> Server:
    """`wsctl serve` on a free port of 127.0.0.1 (extra `args` appended), once it answers /healthz.
    `workspace` is a folder, or a PgLocation (its URL is served, its folder holds home and log)."""
    port = free_port()
    env = dict(env or base_env(workspace.parent / "server-home"))
    if isinstance(workspace, PgLocation):     # another replica of a PostgreSQL door's workspace
        env.setdefault("WSCTL_MASTER_KEY", os.environ.get("WSCTL_MASTER_KEY", ""))
        env.setdefault("WSCTL_BLOB_DIR", str(workspace / "blobs"))
    if offset:
        env["WSCTL_NOW_OFFSET_SECONDS"] = str(offset)
    log = log or workspace.parent / f"server-{port}.log"
    argv = ["serve", "--workspace", str(workspace), "--host", "127.0.0.1", "--port", str(port), *map(str, args)]
    with log.open("wb") as out:   # the server writes to its own copy of the descriptor
        proc = forkserver.spawn(argv, env, stdout=out, stderr=subprocess.STDOUT) or \
            subprocess.Popen([*WSCTL, *argv], env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: answers_health(url), "wsctl serve did not answer /healthz", proc, log)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return Server(url, proc, log)


@contextlib.contextmanager
def serve(workspace: Path, env: dict | None = None, offset: int = 0):
    """Run `wsctl serve` on a workspace folder for the block; yields the base URL."""
    s = start_server(workspace if isinstance(workspace, PgLocation) else Path(workspace), env, offset)
    try:
        yield s.url
    finally:
        s.stop()


# ---------------------------------------------------------------- workspaces

@pytest.fixture(scope="session")
def template_workspace(tmp_path_factory) -> Path:
    """One workspace made by `wsctl init` (built-in catalog loaded); tests get copies."""
    root = tmp_path_factory.mktemp("template")
    run_wsctl(["init", "--workspace", root / "ws", "--name", "Test Workspace", "--owner-name", OWNER["name"],
               "--owner-email", OWNER["email"]], base_env(root / "home"))
    con = sqlite3.connect(root / "ws" / "workspace.db")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return root / "ws"


def copy_workspace(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest, ignore=shutil.ignore_patterns("*-wal", "*-shm"))
    return dest


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    h = tmp_path / "home"
    h.mkdir()
    for k in list(os.environ):
        if k.startswith("WSCTL_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("WSCTL_HOME", str(h))
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    return h


@pytest.fixture
def workspace(tmp_path, home, template_workspace) -> Path:
    return copy_workspace(template_workspace, tmp_path / "ws")


@pytest.fixture
def local_ws():
    """local_ws(location): the workspace (a folder or a PostgreSQL door's URL) opened in this
    process for the test's own reads and writes; each one opened is closed when the test ends
    (Workspace.close: this thread's connection)."""
    from workspacectl.engine.workspaces import open_workspace

    opened = []

    def open_(location):
        ws = open_workspace(str(location))
        opened.append(ws)
        return ws

    yield open_
    for ws in opened:
        ws.close()


# ---------------------------------------------------------------- the backend fixture

@dataclass
class ApiResult:
    status: int
    body: object
    headers: dict = field(default_factory=dict)   # the answer's headers, names lower-cased

    @property
    def code(self) -> str | None:
        if isinstance(self.body, dict) and isinstance(self.body.get("error"), dict):
            return self.body["error"].get("code")
        return None


@dataclass
class Backend:
    kind: str
    workspace: Path
    home: Path
    owner: dict
    owner_token: str
    base_url: str | None = None
    server: Server | None = None
    env: dict = field(default_factory=dict)
    door: str = ""                 # local | remote | postgres (remote against a PostgreSQL workspace)
    on_close: list = field(default_factory=list)
    _engine: object = None
    _http: object = None

    # -- the CLI
    def wsctl(self, *args, input: str | None = None, env: dict | None = None, expect: int | None = 0) -> Result:
        return run_wsctl(args, {**self.env, **(env or {})}, input=input, expect=expect)

    def env_for(self, secret: str) -> dict:
        """Environment for a wsctl subprocess presenting `secret` (a session token or an API key)."""
        var = "WSCTL_TOKEN" if secret.startswith("ws_session_") else "WSCTL_API_KEY"
        env = {**self.env, "WSCTL_TOKEN": "", "WSCTL_API_KEY": ""}  # "" = unset, and survives wsctl()'s merge
        env[var] = secret
        return env

    # -- the API
    def api(self, method: str, path: str, body=None, secret: str | None = None, query: dict | None = None,
            raw: bytes | None = None) -> ApiResult:
        secret = self.owner_token if secret is None else secret
        if self.kind == "remote":
            headers = {"Authorization": f"Bearer {secret}"} if secret else {}
            kw = {"params": query, "headers": headers}
            if raw is not None:
                kw["content"] = raw
            elif body is not None:
                kw["json"] = body
            r = self._http.request(method, path, **kw)
            try:
                data = r.json() if r.content else None
            except ValueError:
                data = r.content
            return ApiResult(r.status_code, data, {k.lower(): v for k, v in r.headers.items()})
        payload = raw if raw is not None else (json.loads(json.dumps(body)) if body is not None else None)
        resp = self._engine.handle(method, path, query, payload, secret or None, None)
        headers = {k.lower(): str(v) for k, v in resp.headers.items()}
        if resp.stream is not None:
            return ApiResult(resp.status, b"".join(resp.stream), headers)
        return ApiResult(resp.status, json.loads(json.dumps(resp.body)) if resp.body is not None else None, headers)

    def ok(self, method: str, path: str, body=None, secret: str | None = None, query: dict | None = None):
        r = self.api(method, path, body, secret, query)
        assert r.status < 300, f"{method} {path} -> {r.status} {r.body}"
        return r.body

    # -- people and secrets
    def add_member(self, email: str, name: str | None = None, role: str = "member") -> dict:
        return self.ok("POST", "/v1/members", {"email": email, "name": name or email.split("@", maxsplit=1)[0].title(),
                                               "role": role})

    def session(self, member_id: str | None = None) -> str:
        member_id = member_id or self.owner["id"]
        code = self.ok("POST", f"/v1/members/{member_id}/login-codes")["code"]
        token = self.ok("POST", "/v1/auth/session", {"code": code}, secret="")["token"]
        assert token.startswith("ws_session_")
        return token

    def key(self, kind: str, scopes, member_id: str | None = None) -> str:
        token = self.owner_token if member_id in (None, self.owner["id"]) else self.session(member_id)
        body = self.ok("POST", "/v1/keys", {"kind": kind, "scopes": list(scopes), "name": f"test-{kind}"},
                       secret=token)
        return body["secret"]

    def close(self, wait: bool = True):
        """Close the client, stop the server (with `wait=False` while the next test runs:
        Server.stop_later), close the in-process engine's connection, run on_close."""
        if self._http is not None:
            self._http.close()
        if self.server is not None:
            if wait:
                self.server.stop()
            else:
                self.server.stop_later()
        if self._engine is not None:
            self._engine.ws.close()
        for fn in self.on_close:
            fn()


def _owner_and_token(ws_path: Path) -> tuple[dict, str]:
    """The owner record and a real session for it, made through a login code in-process."""
    from workspacectl.engine.db import transaction
    from workspacectl.engine.identity.auth import new_session
    from workspacectl.engine.identity.render import member_json
    from workspacectl.engine.store import identity
    from workspacectl.engine.workspaces import open_workspace

    with open_workspace(str(ws_path)) as ws:
        conn = ws.conn()
        owner = member_json(identity.first_owner(conn))
        with transaction(conn):
            token, _ = new_session(conn, owner["id"], "tests")
    return owner, token


def make_backend(kind: str, workspace: Path, home: Path, server: Server | None = None) -> Backend:
    owner, token = _owner_and_token(workspace)
    env = base_env(home)
    b = Backend(kind, workspace, home, owner, token, door=kind)
    if kind == "remote":
        b.server = server or start_server(workspace, base_env(workspace.parent / "server-home"),
                                          log=workspace.parent / "server.log", args=DOOR_SERVER_ARGS)
        b.base_url = b.server.url
        b._http = httpx.Client(trust_env=False, base_url=b.base_url, timeout=60)
        env.update({"WSCTL_SERVER": b.base_url, "WSCTL_TOKEN": token})
    else:
        from workspacectl.engine.dispatch import Engine
        from workspacectl.engine.workspaces import open_workspace

        b._engine = Engine(open_workspace(str(workspace)))
        env["WSCTL_WORKSPACE"] = str(workspace)
    b.env = env
    return b


class ServerPool:
    """Servers started ahead of need, each on its own fresh copy of the template workspace.

    Starting `wsctl serve` costs about half a second; the pool overlaps it with the tests
    that run meanwhile. Each server is used by exactly one test and stopped after it.
    """

    def __init__(self, root: Path, template: Path, ahead: int = 2):
        from concurrent.futures import ThreadPoolExecutor

        self.root, self.template, self.ahead = root, template, ahead
        self.executor = ThreadPoolExecutor(ahead)
        self.pending: list = []
        self.count = 0

    def _make(self, n: int) -> tuple[Path, Server]:
        d = self.root / f"srv{n}"
        d.mkdir()
        ws = copy_workspace(self.template, d / "ws")
        return ws, start_server(ws, base_env(d / "server-home"), log=d / "server.log", args=DOOR_SERVER_ARGS)

    def _fill(self) -> None:
        while len(self.pending) < self.ahead:
            self.count += 1
            self.pending.append(self.executor.submit(self._make, self.count))

    def take(self) -> tuple[Path, Server]:
        self._fill()
        fut = self.pending.pop(0)
        self._fill()
        return fut.result()

    def close(self) -> None:
        for fut in self.pending:
            try:
                fut.result()[1].stop()
            except Exception:
                pass
        self.executor.shutdown(wait=True)


@pytest.fixture(scope="session")
def server_pool(tmp_path_factory, template_workspace):
    pool = ServerPool(tmp_path_factory.mktemp("pool"), template_workspace)
    yield pool
    pool.close()


@pytest.fixture(params=["local", "remote", "postgres"])
def backend(request, home):
    if request.param == "postgres":
        pool = request.getfixturevalue("pg_server_pool")
        ws, server = pool.take()
        mp = request.getfixturevalue("monkeypatch")
        mp.setenv("WSCTL_MASTER_KEY", pool.databases.key)        # in-process opens (tests' helpers)
        mp.setenv("WSCTL_BLOB_DIR", str(ws / "blobs"))            # ... see the server's blobs
        b = make_backend("remote", ws, home, server=server)
        b.door = "postgres"
        b.on_close.append(lambda: pool.databases.drop(ws))
    elif request.param == "remote":
        ws, server = request.getfixturevalue("server_pool").take()
        b = make_backend("remote", ws, home, server=server)
    else:
        b = make_backend("local", request.getfixturevalue("workspace"), home)
    yield b
    b.close(wait=False)   # the test is over: its server stops while the next test runs


@pytest.fixture(scope="session", autouse=True)
def _servers_stopped_at_the_end():
    """No server outlives the session: the ones stopping in the background are waited for."""
    yield
    stop_all_later()


# ---------------------------------------------------------------- PostgreSQL

class PgLocation(str):
    """A PostgreSQL workspace URL that tests may use where they use the workspace folder's Path:
    `.parent` is the test's own folder; `/ "blobs"` (any name) and rglob() reach what the workspace
    keeps on this machine (its blob folder, WSCTL_BLOB_DIR of the server and of the test process). A
    test that opens the SQLite file (`/ "workspace.db"`) or the key file skips on this door, saying
    so; workspace_db() and workspace_at_rest() reach the database on both stores."""

    parent: Path
    folder: Path

    def __new__(cls, url: str, parent: Path):
        s = super().__new__(cls, url)
        s.parent = parent
        s.folder = parent / "pg-local"
        (s.folder / "blobs").mkdir(parents=True, exist_ok=True)
        return s

    def __truediv__(self, name):
        if str(name).startswith(("workspace.db", "master.key")):
            pytest.skip(f"reads the workspace folder's {name}, which a PostgreSQL workspace does not have "
                        "(its rows are in the database, its key in WSCTL_MASTER_KEY; see workspace_db)")
        return self.folder / name      # blobs/, or what must not appear beside them

    def rglob(self, pattern: str):
        return self.folder.rglob(pattern)


def workspace_db(location):
    """A connection to a workspace's database for a test's own reads and writes, autocommit: sqlite3
    on the folder's workspace.db, or on the PostgreSQL door the store's driver, which takes the
    same SQL (`?` placeholders, sqlite3-like rows). Close it when done."""
    if isinstance(location, PgLocation):
        from workspacectl.engine.db.postgres import PgConnection

        return PgConnection(str(location))
    return sqlite3.connect(Path(location) / "workspace.db", timeout=15, isolation_level=None)


def workspace_at_rest(location) -> dict[str, bytes]:
    """Everything a workspace keeps at rest, by place, for plaintext scans: every file of its folder
    (database, WAL, blobs) and an SQL dump of its database. On the PostgreSQL door: the blob folder
    on this machine and a real `pg_dump` of the test database (rows and blob chunks), whose binary
    (bytea) columns are also given decoded, so a plaintext kept there is seen as well."""
    if isinstance(location, PgLocation):
        import re

        files = {str(p.relative_to(location.folder)): p.read_bytes() for p in sorted(location.rglob("*"))
                 if p.is_file()}
        dump = subprocess.run(["pg_dump", "--no-owner", "--dbname", str(location)], capture_output=True,
                              timeout=300, check=True).stdout
        assert b"CREATE TABLE public.secrets" in dump and b"CREATE TABLE public.login_codes" in dump
        decoded = b"\n".join(bytes.fromhex(h.decode()) for h in re.findall(rb"\\x((?:[0-9a-f]{2})+)", dump))
        return {**files, "pg_dump": dump, "pg_dump bytea decoded": decoded}
    folder = Path(location)
    files = {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    assert "workspace.db" in files, sorted(files)
    con = sqlite3.connect(folder / "workspace.db")
    try:
        dump = "\n".join(con.iterdump())
    finally:
        con.close()
    assert "CREATE TABLE secrets" in dump and "CREATE TABLE login_codes" in dump
    return {**files, "sqlite dump": dump.encode()}


def postgres_server() -> tuple[str | None, str]:
    """(admin URL, "") of the test PostgreSQL server, or (None, why not)."""
    raw = os.environ.get("WSCTL_TEST_POSTGRES_URL", "").strip() or "postgresql://postgres@127.0.0.1:5432/postgres"
    if raw.lower() == "none":
        return None, "WSCTL_TEST_POSTGRES_URL=none turns the PostgreSQL door off"
    try:
        import psycopg
    except ImportError:
        return None, "psycopg is not installed (pip install -e '.[test]' installs it)"
    try:
        psycopg.connect(raw, connect_timeout=5, autocommit=True).close()
    except psycopg.Error as e:
        return None, f"no PostgreSQL answers at WSCTL_TEST_POSTGRES_URL ({str(e).strip().splitlines()[0][:200]})"
    return raw, ""


class PgDatabases:
    """This session's databases on the test server: a template made once by `wsctl init`, and a
    fresh copy (CREATE DATABASE ... TEMPLATE) per test, dropped after it and at the session end.

    Dropping is deferred and batched: PostgreSQL's DROP DATABASE waits for a forced checkpoint
    (2-11 s each on a loaded machine, paid in every PostgreSQL test's teardown), and checkpoints
    asked for at once are one checkpoint. So drop() only notes the name; every DROP_BATCH names are
    dropped together, DROP_PARALLEL at a time, by a background thread, and the rest at the session
    end. DROP_PARALLEL bounds the connections a dropper holds while other tests run (the suite must
    fit a server's default max_connections of 100 with its replicas and listeners: 16 at a time per
    xdist worker once took 32 of them and refused a replica's connection)."""

    DROP_BATCH = 16
    DROP_PARALLEL = 4

    def __init__(self, admin_url: str, root: Path):
        import base64

        self.admin_url, self.root = admin_url, root
        self.prefix = f"wsctl_t{os.getpid()}_{int(time.time()) % 100000}_"
        self.key = base64.b64encode(os.urandom(32)).decode()   # the workspace key every replica is given
        self.count = 0
        self.lock = threading.Lock()
        self.made: set[str] = set()
        self.doomed: list[str] = []
        self.dropper: threading.Thread | None = None
        self.template = self.prefix + "template"
        self._sql(f"CREATE DATABASE {self.template}")
        self.made.add(self.template)
        env = {**base_env(root / "template-home"), "WSCTL_MASTER_KEY": self.key}
        run_wsctl(["init", "--workspace", self.url(self.template), "--name", "Test Workspace",
                   "--owner-name", OWNER["name"], "--owner-email", OWNER["email"]], env)

    def url(self, db: str) -> str:
        base, _, _ = self.admin_url.rpartition("/")
        query = self.admin_url.partition("?")[2]
        return f"{base}/{db}" + (f"?{query}" if query else "")

    def _sql(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as c:
            c.execute(statement)

    def fresh(self, folder: Path, empty: bool = False) -> PgLocation:
        """A new database: a copy of the workspace template, or with `empty` one holding nothing."""
        with self.lock:
            self.count += 1
            name = f"{self.prefix}{self.count}"
        self._sql(f"CREATE DATABASE {name}" + ("" if empty else f" TEMPLATE {self.template}"))
        self.made.add(name)
        return PgLocation(self.url(name), folder)

    def drop(self, location: str) -> None:
        """The test is done with this database: it goes with the next batch (see the class)."""
        name = location.rpartition("/")[2].partition("?")[0]
        with self.lock:
            if name not in self.made or name in self.doomed:
                return
            self.doomed.append(name)
            if len(self.doomed) < self.DROP_BATCH or (self.dropper is not None and self.dropper.is_alive()):
                return
            batch, self.doomed = self.doomed, []
            self.dropper = threading.Thread(target=self._drop_all, args=(batch,), daemon=True)
            self.dropper.start()

    def _drop_all(self, names) -> None:
        from concurrent.futures import ThreadPoolExecutor

        def one(name: str) -> None:
            try:
                self._sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            except Exception:
                return
            with self.lock:
                self.made.discard(name)

        with ThreadPoolExecutor(max(1, min(len(names), self.DROP_PARALLEL))) as pool:
            list(pool.map(one, names))

    def close(self) -> None:
        """The session's end: what is left (the template last) is dropped by a process of its own,
        started detached, so the run's last test does not wait for those checkpoints (5-140 s on a
        loaded machine). It drops each IF EXISTS (a batch still being dropped here may be among
        them) and ends."""
        with self.lock:
            names = [*sorted(self.made - {self.template}), self.template]
        # sh starts it in the background and ends: it is nobody's child to wait for
        subprocess.run(["sh", "-c", '"$@" </dev/null >/dev/null 2>&1 &', "sh", sys.executable, "-c", DROP_LATER,
                        self.admin_url, *names], check=True, timeout=60, start_new_session=True)


# PgDatabases.close's dropper: the copies four at a time (their checkpoints coalesce; another xdist
# worker may still be running tests beside it: PgDatabases.DROP_PARALLEL), then the template.
DROP_LATER = """
import sys
from concurrent.futures import ThreadPoolExecutor
import psycopg

def drop(name):
    try:
        with psycopg.connect(sys.argv[1], autocommit=True, connect_timeout=30) as c:
            c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    except psycopg.Error:
        pass

*copies, template = sys.argv[2:]
with ThreadPoolExecutor(4) as pool:
    list(pool.map(drop, copies))
drop(template)
"""


def postgres_admin_url() -> str:
    """The test PostgreSQL server's admin URL; skips the test saying why when none answers, or
    fails it when WSCTL_REQUIRE_POSTGRES=1 (.ci/run)."""
    url, why = postgres_server()
    if url is None:
        if os.environ.get("WSCTL_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"WSCTL_REQUIRE_POSTGRES=1 but {why}", pytrace=False)
        pytest.skip(f"PostgreSQL door skipped: {why}")
    return url


@pytest.fixture(scope="session")
def pg_databases(tmp_path_factory):
    dbs = PgDatabases(postgres_admin_url(), tmp_path_factory.mktemp("pg"))
    yield dbs
    dbs.close()


@pytest.fixture
def pg_workspace(tmp_path, home, pg_databases, monkeypatch) -> PgLocation:
    """A fresh PostgreSQL workspace for the test (its key in WSCTL_MASTER_KEY)."""
    monkeypatch.setenv("WSCTL_MASTER_KEY", pg_databases.key)
    loc = pg_databases.fresh(tmp_path)
    yield loc
    pg_databases.drop(loc)


def pg_env(home: Path, databases: PgDatabases) -> dict:
    return {**base_env(home), "WSCTL_MASTER_KEY": databases.key}


class PgServerPool(ServerPool):
    """Servers on fresh PostgreSQL databases, started ahead of need like ServerPool's."""

    def __init__(self, root: Path, databases: PgDatabases, ahead: int = 2):
        super().__init__(root, None, ahead)
        self.databases = databases

    def _make(self, n: int):
        d = self.root / f"pg{n}"
        d.mkdir()
        loc = self.databases.fresh(d)
        env = {**pg_env(d / "server-home", self.databases), "WSCTL_BLOB_DIR": str(loc / "blobs")}
        return loc, start_server(loc, env, log=d / "server.log", args=DOOR_SERVER_ARGS)


@pytest.fixture(scope="session")
def pg_server_pool(tmp_path_factory, pg_databases):
    pool = PgServerPool(tmp_path_factory.mktemp("pgpool"), pg_databases)
    yield pool
    pool.close()


# ---------------------------------------------------------------- the shared OpenAPI corpus

@pytest.fixture(scope="session")
def shared_corpus(tmp_path_factory) -> tuple[Path, dict]:
    """A workspace holding exactly the 12 shared OpenAPI documents (../shared/data/openapi),
    each imported once through POST /v1/admin/catalog with `service` = its file stem.
    Answers (workspace path, {file name: (status, answer body)}). Tests copy it or only read it:
    importing the 3,481 operations takes ~10 s, paid once per session."""
    from tests.search_labels import make_corpus_workspace

    path = tmp_path_factory.mktemp("shared-corpus") / "ws"
    answers: dict = {}
    ws = make_corpus_workspace(path, answers)
    conn = ws.conn()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")     # copies leave the -wal file behind
    conn.close()
    return path, answers


@pytest.fixture
def provider():
    """A real OAuth2 provider on loopback (tests/oauth_provider.py), one per test."""
    from tests.oauth_provider import OAuthProvider

    with OAuthProvider() as p:
        yield p


@pytest.fixture(scope="session")
def authlib_server():
    """A real OAuth 2 authorization server (Authlib on Flask, tests/authlib_provider.py) on
    127.0.0.1, started once per session; each test registers its own clients on it."""
    from tests.authlib_provider import AuthlibServer

    server = AuthlibServer()
    yield server
    server.close()


@pytest.fixture
def door(backend):
    """The connection flow of tests/connect_helpers.py over the test's backend."""
    from tests.connect_helpers import open_door

    d = open_door(backend)
    yield d
    d.close()


def pytest_collection_modifyitems(items):
    """Markers from what a test uses (registered in pyproject.toml): `-m "not browser"` leaves out
    the Chromium tests, `-m "not remote"` every test on a real `wsctl serve`."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "chromium" in names:
            item.add_marker(pytest.mark.browser)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("backend") == "remote":
            item.add_marker(pytest.mark.remote)


# The browser tests: Debian's chromium driven by playwright (skips, saying how to install, when absent).
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium_executable() -> str | None:
    for path in ("/usr/bin/chromium", shutil.which("chromium")):
        if path and os.access(path, os.X_OK):
            return path
    return None


@pytest.fixture
def chromium(tmp_path):
    """A headless Chromium with a fresh user-data-dir; yields its (persistent) browser context."""
    path = chromium_executable()
    if path is None:
        pytest.skip("browser test skipped: Chromium is not installed (no /usr/bin/chromium and no `chromium` on "
                    "PATH). Install Debian's package (`apt-get install chromium`; .ci/run does) to run it.")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser test skipped: the `playwright` Python package is missing; "
                    "`pip install -e '.[test]'` installs it (the browser itself is Debian's chromium).")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(str(tmp_path / "chromium-profile"), executable_path=path,
                                                       headless=True, args=CHROMIUM_ARGS)
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()
