"""Quick routes (whoami, token issue) answered on the server's event loop (Engine.handle_quick):
the same answers and rows as on an engine thread, reads going on while a writer holds the
workspace, a revoked key refused at once, and no token without its committed audit row, even
when the server is killed mid-load.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import threading

import httpx
import pytest

from tests.conftest import base_env, make_backend, start_server, wait_until
from tests.vault_helpers import APIKEY_TOML, install_service, make_credential, open_ws
from workspacectl.engine import registry
from workspacectl.engine.store.vault import count_access_log

WHOAMI = ("GET", "/v1/auth/whoami")
TOKEN = ("POST", "/v1/credentials/{id}/token")


def _credential(workspace, owner_id: str) -> str:
    install_service(workspace, APIKEY_TOML.format(base="http://127.0.0.1:9"))
    return make_credential(workspace, owner_id, "keysvc", {"apiKey": "sk-quick"},
                           fields={"instanceUrl": "https://keysvc.example"})["id"]


def _issued(workspace, cred: str) -> int:
    ws = open_ws(workspace)
    try:
        return count_access_log(ws.conn(), cred, "issued")
    finally:
        ws.close()


def test_only_declared_routes_are_quick():
    registry.load_all()
    assert {WHOAMI, TOKEN} == registry.QUICK


def test_handle_quick_refuses_other_routes_and_waits_with_nothing_written(workspace, home):
    """In-process: a route that is not quick, and a token whose write lock is held by another
    thread of the process, raise WouldBlock before anything is written; handle() then answers."""
    from workspacectl.engine.db import WouldBlock, _write_lock_for
    from workspacectl.engine.dispatch import Engine

    b = make_backend("local", workspace, home)
    cred = _credential(workspace, b.owner["id"])
    ws = open_ws(workspace)
    engine = Engine(ws)
    quick = ws.quick_conn()
    path = f"/v1/credentials/{cred}/token"
    try:
        with pytest.raises(WouldBlock):
            engine.handle_quick(quick, "GET", "/v1/credentials", None, None, b.owner_token)
        engine.handle("POST", path, None, {"reason": "load the keys"}, b.owner_token)   # keys are loaded off the loop
        lock = _write_lock_for(str(workspace / "workspace.db"))
        held = threading.Event()
        release = threading.Event()

        def hold():
            with lock:
                held.set()
                release.wait(30)

        t = threading.Thread(target=hold)
        t.start()
        held.wait(30)
        try:
            with pytest.raises(WouldBlock):
                engine.handle_quick(quick, "POST", path, None, {"reason": "blocked"}, b.owner_token)
            assert engine.handle_quick(quick, *WHOAMI, None, None, b.owner_token).status == 200   # reads go on
        finally:
            release.set()
            t.join()
        assert _issued(workspace, cred) == 1   # the blocked attempt wrote nothing
        r = engine.handle_quick(quick, "POST", path, None, {"reason": "free"}, b.owner_token)
        assert r.status == 200 and r.body["apiKey"] == "sk-quick"
        assert _issued(workspace, cred) == 2
    finally:
        quick.close()
        ws.close()
        b.close()


def test_reads_go_on_while_another_process_writes_and_the_token_waits_its_turn(workspace, home, tmp_path):
    """A real server: another process holds the write lock (BEGIN IMMEDIATE). A token request
    waits on an engine thread (not on the event loop), so whoami keeps answering meanwhile; once
    the lock is free the token comes with its one row."""
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=tmp_path / "server.log")
    b = make_backend("remote", workspace, home, server=server)
    try:
        cred = _credential(workspace, b.owner["id"])
        assert b.api("POST", f"/v1/credentials/{cred}/token", {"reason": "warm"}).status == 200
        holder = sqlite3.connect(str(workspace / "workspace.db"), isolation_level=None)
        got: dict = {}
        try:
            holder.execute("BEGIN IMMEDIATE")
            t = threading.Thread(target=lambda: got.setdefault(
                "token", httpx.post(f"{server.url}/v1/credentials/{cred}/token", json={"reason": "waits"},
                                    headers={"Authorization": f"Bearer {b.owner_token}"}, trust_env=False,
                                    timeout=60)))
            t.start()
            for _ in range(5):
                assert b.ok(*WHOAMI)["kind"] == "session"
            assert "token" not in got and t.is_alive()   # still waiting for the other process
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        t.join(60)
        assert got["token"].status_code == 200 and got["token"].json()["apiKey"] == "sk-quick"
        assert _issued(workspace, cred) == 2
    finally:
        b.close()


def test_a_revoked_key_is_refused_at_once_on_the_quick_routes(backend):
    cred = _credential(backend.workspace, backend.owner["id"])
    key = backend.key("platform", ["vault:token"])
    assert backend.ok(*WHOAMI, secret=key)["kind"] == "platform"
    assert backend.api("POST", f"/v1/credentials/{cred}/token", {"reason": "before"}, secret=key).status == 200
    key_id = backend.ok(*WHOAMI, secret=key)["keyId"]
    assert backend.api("DELETE", f"/v1/keys/{key_id}").status == 204
    for r in (backend.api(*WHOAMI, secret=key),
              backend.api("POST", f"/v1/credentials/{cred}/token", {"reason": "after"}, secret=key)):
        assert r.status == 401 and r.body["error"]["code"] == "unauthenticated"
    assert _issued(backend.workspace, cred) == 1


def test_killed_mid_load_no_token_was_received_without_its_row(workspace, home, tmp_path):
    """Clients issue tokens on 8 connections; the server is killed (SIGKILL) mid-load. Every token
    a client received has its committed audit row (rows >= tokens: a row may be committed for
    an answer the kill cut off)."""
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=tmp_path / "server.log")
    b = make_backend("remote", workspace, home, server=server)
    received = []
    lock = threading.Lock()
    stop = threading.Event()
    try:
        cred = _credential(workspace, b.owner["id"])

        def client():
            with httpx.Client(trust_env=False, base_url=server.url, timeout=30,
                              headers={"Authorization": f"Bearer {b.owner_token}"}) as c:
                while not stop.is_set():
                    try:
                        r = c.post(f"/v1/credentials/{cred}/token", json={"reason": "drill"})
                    except httpx.HTTPError:
                        return
                    if r.status_code == 200 and r.json().get("apiKey") == "sk-quick":
                        with lock:
                            received.append(1)

        threads = [threading.Thread(target=client) for _ in range(8)]
        for t in threads:
            t.start()
        wait_until(lambda: len(received) >= 300, "tokens did not flow", server.proc, server.log)
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait()
        stop.set()
        for t in threads:
            t.join(60)
        assert _issued(workspace, cred) >= len(received) >= 300
    finally:
        stop.set()
        b.close()


def test_a_turns_group_commit_keeps_each_calls_transaction_its_own(tmp_path):
    """db.QuickGroup: the transactions of one turn are savepoints of one write transaction; a call
    that fails loses its own writes only; a COMMIT that fails writes nothing and frees the lock."""
    from workspacectl.engine.db import quick_calls, transaction
    from workspacectl.engine.db.quick import QuickGroup, open_quick_db

    path = tmp_path / "g.db"
    conn = open_quick_db(path)
    conn.execute("CREATE TABLE p (id INTEGER PRIMARY KEY)")
    conn.execute("CREATE TABLE t (x INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)")
    opened = []
    conn.quick_group = QuickGroup(conn, lambda: opened.append(1))
    with quick_calls():
        with transaction(conn):
            conn.execute("INSERT INTO p VALUES (1)")
        with pytest.raises(ValueError), transaction(conn):
            conn.execute("INSERT INTO p VALUES (2)")
            raise ValueError("this call fails")
        with transaction(conn):
            conn.execute("INSERT INTO p VALUES (3)")
    assert opened == [1] and conn.in_transaction   # one transaction for the turn, still open
    other = sqlite3.connect(path)
    assert other.execute("SELECT count(*) FROM p").fetchone()[0] == 0   # nothing visible before the commit
    conn.quick_group.commit()
    assert [r[0] for r in other.execute("SELECT id FROM p ORDER BY id")] == [1, 3]

    with quick_calls(), transaction(conn):   # a turn whose COMMIT fails (deferred foreign key)
        conn.execute("INSERT INTO p VALUES (4)")
        conn.execute("INSERT INTO t VALUES (99)")
    with pytest.raises(sqlite3.IntegrityError):
        conn.quick_group.commit()
    assert not conn.in_transaction and opened == [1, 1]
    assert other.execute("SELECT count(*) FROM p").fetchone()[0] == 2
    other.execute("BEGIN IMMEDIATE")   # the write lock is free again
    other.execute("ROLLBACK")
    other.close()
    conn.close()


def _quick_counts(log) -> dict:
    """The `quick path counts {...}` line a stopped server logged (QuickWriter.summary)."""
    lines = [line for line in log.read_text(errors="replace").splitlines() if "quick path counts {" in line]
    assert len(lines) == 1, lines
    return json.loads(lines[0].split("quick path counts ", 1)[1])


def test_concurrent_token_issues_each_get_one_committed_row(workspace, home, tmp_path):
    """16 clients at once through a real server (their transactions share commits): every answer
    is 200 with the token, and there is exactly one audit row per token. No token leaves the event
    loop for the engine pool because the write lock was held (the first ones do while the keys
    load, and those pool transactions hold the lock: the loop's tokens wait for it and stay on
    the loop), as the server's shutdown line counts."""
    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=tmp_path / "server.log")
    b = make_backend("remote", workspace, home, server=server)
    statuses: list = []
    lock = threading.Lock()
    try:
        cred = _credential(workspace, b.owner["id"])

        def client(i):
            with httpx.Client(trust_env=False, base_url=server.url, timeout=60,
                              headers={"Authorization": f"Bearer {b.owner_token}"}) as c:
                for j in range(25):
                    r = c.post(f"/v1/credentials/{cred}/token", json={"reason": f"c{i} {j}"})
                    with lock:
                        statuses.append((r.status_code, r.json().get("apiKey")))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert statuses == [(200, "sk-quick")] * 400
        assert _issued(workspace, cred) == 400
        reasons = [e["reason"] for e in b.ok("GET", f"/v1/credentials/{cred}/access-log", query={"limit": 500})["entries"]]
        assert sorted(reasons) == sorted(f"c{i} {j}" for i in range(16) for j in range(25))
        server.stop()
        token = _quick_counts(server.log)["calls"]["POST /v1/credentials/{id}/token"]
        pooled = {k: n for k, n in token.items() if k.startswith("pool: ")}
        assert set(pooled) <= {"pool: loading the workspace's keys"}, token
        assert token["loop"] + sum(pooled.values()) == 400 and "busy" not in token, token
    finally:
        b.close()


WAL_TOKENS = int(os.environ.get("WSCTL_TEST_WAL_TOKENS", "3000"))


def test_token_load_keeps_the_wal_bounded_with_checkpoints_off_the_loop(workspace, home, tmp_path):
    """The event loop's connection never checkpoints (wal_autocheckpoint=0, quick.open_quick_db); an
    engine thread does once the WAL passes SQLite's autocheckpoint size (PASSIVE, no lock; TRUNCATE
    past HARD_WAL_FACTOR times it). Under a token-only load on a real server (8 clients), the -wal
    file never grows past the hard bound and a size more, though the load writes several times
    that much WAL; every token has its one row; the server's shutdown line counts the checkpoints."""
    from workspacectl.engine.db.quick import HARD_WAL_FACTOR

    server = start_server(workspace, base_env(tmp_path / "srv-home"), log=tmp_path / "server.log")
    b = make_backend("remote", workspace, home, server=server)
    wal = workspace / "workspace.db-wal"
    probe = sqlite3.connect(str(workspace / "workspace.db"))
    limit = 1000 * probe.execute("PRAGMA page_size").fetchone()[0]   # SQLite's default wal_autocheckpoint
    probe.close()
    sizes: list[int] = []
    statuses: list = []
    lock = threading.Lock()
    per_client = WAL_TOKENS // 8
    try:
        cred = _credential(workspace, b.owner["id"])

        def client(i):
            with httpx.Client(trust_env=False, base_url=server.url, timeout=60,
                              headers={"Authorization": f"Bearer {b.owner_token}"}) as c:
                for j in range(per_client):
                    r = c.post(f"/v1/credentials/{cred}/token", json={"reason": f"w{i} {j}"})
                    size = wal.stat().st_size if wal.exists() else 0
                    with lock:
                        statuses.append((r.status_code, r.json().get("apiKey")))
                        sizes.append(size)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        print(f"WAL max {max(sizes)} limit {limit} final {sizes[-1]}")
        assert statuses == [(200, "sk-quick")] * (per_client * 8)
        assert _issued(workspace, cred) == per_client * 8
        assert max(sizes) < (HARD_WAL_FACTOR + 1) * limit
        server.stop()
        counts = _quick_counts(server.log)
        print(counts)
        assert counts["checkpoints"] and set(counts["checkpoints"]) <= {"PASSIVE", "TRUNCATE"}
    finally:
        b.close()


def test_a_commit_the_disk_refuses_answers_503_on_the_loop_and_on_the_pool(workspace, home, tmp_path):
    """A real server whose file writes are refused past a size (RLIMIT_FSIZE set on the running
    process: the next WAL frames fail with an I/O error, as on a full disk). A token whose commit
    fails answers 503 `unreachable` with one line, no token, no row, on the event loop's group
    commit and on an engine thread alike (the token waits on the pool while another process holds
    the write lock); whoami keeps answering; once writes are allowed again tokens flow, one row each."""
    import resource
    import subprocess

    from tests.conftest import WSCTL, Server, answers_health, free_port

    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as out:   # SIGXFSZ ignored: a refused write fails (EFBIG) instead of killing
        proc = subprocess.Popen([*WSCTL, "serve", "--workspace", str(workspace), "--host", "127.0.0.1",
                                 "--port", str(port)], env=base_env(tmp_path / "srv-home"), stdout=out,
                                stderr=subprocess.STDOUT,
                                preexec_fn=lambda: signal.signal(signal.SIGXFSZ, signal.SIG_IGN))
    server = Server(f"http://127.0.0.1:{port}", proc, log)
    b = None
    try:
        wait_until(lambda: answers_health(server.url), "wsctl serve did not answer /healthz", proc, log)
        b = make_backend("remote", workspace, home, server=server)
        cred = _credential(workspace, b.owner["id"])
        path = f"/v1/credentials/{cred}/token"
        assert b.api("POST", path, {"reason": "before"}).status == 200
        wal = workspace / "workspace.db-wal"
        unlimited = resource.prlimit(proc.pid, resource.RLIMIT_FSIZE)
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (wal.stat().st_size + 4096, unlimited[1]))
        ok = 1
        answers = []
        for i in range(200):   # the WAL reaches the limit within a few commits
            r = b.api("POST", path, {"reason": f"quick {i}"})
            if r.status == 200:
                ok += 1
                continue
            answers.append(r)
            if len(answers) == 3:
                break
        holder = sqlite3.connect(str(workspace / "workspace.db"), isolation_level=None)
        got: dict = {}
        try:   # another process writes: the token goes to an engine thread and commits there
            holder.execute("BEGIN IMMEDIATE")
            t = threading.Thread(target=lambda: got.setdefault("r", httpx.post(
                f"{server.url}{path}", json={"reason": "pool"}, trust_env=False, timeout=60,
                headers={"Authorization": f"Bearer {b.owner_token}"})))
            t.start()
            assert b.ok(*WHOAMI)["kind"] == "session"   # reads go on
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        t.join(60)
        pooled = got["r"]
        assert len(answers) == 3
        for status, body in [(r.status, r.body) for r in answers] + [(pooled.status_code, pooled.json())]:
            assert status == 503, body
            assert body["error"]["code"] == "unreachable" and "apiKey" not in body
            assert body["error"]["message"].startswith("The workspace could not be written (")
            assert "\n" not in body["error"]["message"]
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, unlimited)
        for i in range(3):
            assert b.api("POST", path, {"reason": f"after {i}"}).status == 200
        assert _issued(workspace, cred) == ok + 3
        assert "Traceback" not in log.read_text(errors="replace")
    finally:
        if b is not None:
            b.close()
        server.stop()


def _writer_on(workspace, home):
    """A real engine on a folder workspace with the server's quick writer on this thread's event loop
    (engine/db/quick.py QuickWriter; checkpoints on an engine pool thread)."""
    from workspacectl.engine.db.quick import QuickWriter
    from workspacectl.engine.dispatch import Engine
    from workspacectl.server.engine_pool import EnginePool

    b = make_backend("local", workspace, home)
    cred = _credential(workspace, b.owner["id"])
    ws = open_ws(workspace)
    engine = Engine(ws)
    pool = EnginePool(on_thread_exit=ws.close)
    writer = QuickWriter(ws.quick_conn(), pool.submit, ws.conn)
    path = f"/v1/credentials/{cred}/token"
    assert engine.handle("POST", path, None, {"reason": "load the keys"}, b.owner_token).status == 200
    return b, ws, engine, pool, writer, cred, path


def _hold_in_a_transaction(ws):
    """Another thread of the process inside a write transaction (as an engine thread's request):
    answers (held, release, thread)."""
    from workspacectl.engine.db import transaction

    held, release = threading.Event(), threading.Event()

    def hold():
        with transaction(ws.conn()):
            held.set()
            release.wait(60)
        ws.close()

    t = threading.Thread(target=hold)
    t.start()
    assert held.wait(60)
    return release, t


LABEL = "POST /v1/credentials/{id}/token"


def test_a_quick_token_finding_the_write_lock_held_waits_on_the_loop_and_is_answered_there(workspace, home):
    """A token issue on the event loop while an engine thread's transaction holds the write lock:
    it is not handed to the engine pool; the loop waits for the release (the releasing thread wakes
    it) and answers it on the loop, with its one row; whoami answers meanwhile. Counted by the
    writer: one call waited, both on the loop, none on the pool."""
    import functools

    b, ws, engine, pool, writer, cred, path = _writer_on(workspace, home)

    async def scenario():
        release, t = _hold_in_a_transaction(ws)
        try:
            call = functools.partial(engine.handle_quick, writer.conn, "POST", path, None, {"reason": "waits"},
                                     b.owner_token)
            task = asyncio.ensure_future(writer.run(call, LABEL))
            while writer.counts[LABEL, "waited"] == 0:
                await asyncio.sleep(0.01)
            who = functools.partial(engine.handle_quick, writer.conn, *WHOAMI, None, None, b.owner_token)
            assert (await writer.run(who, "whoami")).status == 200   # reads go on while it waits
            assert not task.done() and _issued(workspace, cred) == 1
        finally:
            release.set()
            t.join(60)
        return await task

    try:
        r = asyncio.run(scenario())
        assert r.status == 200 and r.body["apiKey"] == "sk-quick"
        assert _issued(workspace, cred) == 2
        assert dict(writer.counts) == {(LABEL, "waited"): 1, (LABEL, "loop"): 1, ("whoami", "loop"): 1}
    finally:
        pool.shutdown()
        writer.conn.close()
        ws.close()
        b.close()


def test_a_write_lock_held_past_the_busy_timeout_is_409_on_the_loop_with_nothing_written(workspace, home,
                                                                                       monkeypatch):
    """The loop waits for the write lock no longer than the busy timeout (WSCTL_BUSY_TIMEOUT_MS):
    then 409 "retry", as an engine thread answers, nothing written, counted as busy."""
    import functools

    from workspacectl.errors import ApiError

    monkeypatch.setenv("WSCTL_BUSY_TIMEOUT_MS", "300")
    b, ws, engine, pool, writer, cred, path = _writer_on(workspace, home)
    release, t = _hold_in_a_transaction(ws)
    try:
        call = functools.partial(engine.handle_quick, writer.conn, "POST", path, None, {"reason": "blocked"},
                                 b.owner_token)
        with pytest.raises(ApiError) as e:
            asyncio.run(writer.run(call, LABEL))
        assert e.value.status == 409 and e.value.code == "conflict" and "retry" in str(e.value)
        assert dict(writer.counts) == {(LABEL, "waited"): 1, (LABEL, "busy"): 1}
    finally:
        release.set()
        t.join(60)
    try:
        assert _issued(workspace, cred) == 1
    finally:
        pool.shutdown()
        writer.conn.close()
        ws.close()
        b.close()


def test_a_passive_checkpoint_takes_no_write_lock_and_a_truncate_waits_for_it(tmp_path, monkeypatch):
    """quick.checkpoint_wal: PASSIVE copies the WAL while another thread holds the process's write
    lock (writers never wait for it); TRUNCATE queues on that lock like a writer, giving up after
    the busy timeout with nothing done, answers busy while another connection reads an older
    snapshot (its connection's busy timeout set back afterwards), and empties the WAL once free."""
    from workspacectl.engine.db import open_db, transaction
    from workspacectl.engine.db.quick import checkpoint_wal, open_quick_db

    monkeypatch.setenv("WSCTL_BUSY_TIMEOUT_MS", "200")
    path = tmp_path / "c.db"
    quick = open_quick_db(path)
    quick.execute("CREATE TABLE t (x TEXT)")
    for _ in range(50):
        with transaction(quick):
            quick.execute("INSERT INTO t VALUES (?)", ("x" * 2000,))
    holder = open_db(path)
    done: dict = {}
    with holder.write_lock:   # another thread of the process writes
        t = threading.Thread(target=lambda: done.setdefault("passive", checkpoint_wal(open_db(path), "PASSIVE")))
        t.start()
        t.join(60)
        busy, frames, copied = done["passive"]
        assert busy == 0 and frames > 0 and copied == frames   # copied while the lock was held
        t = threading.Thread(target=lambda: done.setdefault("truncate", checkpoint_wal(open_db(path), "TRUNCATE")))
        t.start()
        t.join(60)
        assert done["truncate"] == (1, -1, -1)   # it waited for the lock, then gave up
    assert (tmp_path / "c.db-wal").stat().st_size > 0
    with transaction(quick):   # a frame the reader below does not see
        quick.execute("INSERT INTO t VALUES ('later')")
    reader = sqlite3.connect(path, isolation_level=None)   # another process's reader of an older snapshot
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM t").fetchone()
    with transaction(quick):
        quick.execute("INSERT INTO t VALUES ('newer')")
    assert checkpoint_wal(holder, "TRUNCATE")[0] == 1   # it cannot empty a WAL a reader still uses
    assert holder.execute("PRAGMA busy_timeout").fetchone()[0] == 200   # its own bound set back
    reader.execute("COMMIT")
    reader.close()
    assert checkpoint_wal(holder, "TRUNCATE")[0] == 0
    assert (tmp_path / "c.db-wal").stat().st_size == 0
    holder.close()
    quick.close()
