"""Locks where the data is, on the PostgreSQL door (engine/db/postgres.py, db.transaction's
`locks`): a writer that names the resources it changes holds the workspace's writer lock shared
and each resource's lock alone, so writes on different specialists' files, skills, credentials or
memories proceed together on every replica, the same write on one thing waits for the other, and a
writer naming nothing still runs alone. Observed through pg_locks, never through time."""
from __future__ import annotations

import threading

import pytest

from tests.conftest import make_backend, wait_until
from tests.projects.test_project_files import listing, post_bundle, tgz


def _conn(url):
    from workspacectl.engine.db.postgres import PgConnection

    return PgConnection(str(url))


def _halves(name: str) -> tuple[int, int]:
    """pg_locks' classid and objid of a resource's bigint advisory key."""
    from workspacectl.engine.db.postgres import resource_key

    key = resource_key(name)
    return (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF


def _resource_lock_states(watcher, name: str) -> list[bool]:
    """`granted` of every holder or waiter of the resource's lock (one entry per backend)."""
    classid, objid = _halves(name)
    rows = watcher.execute("SELECT granted FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 "
                           "AND classid::bigint = ? AND objid::bigint = ? ORDER BY granted DESC",
                           (classid, objid)).fetchall()
    return [bool(r[0]) for r in rows]


def _waiting_pids(watcher) -> set[int]:
    rows = watcher.execute("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").fetchall()
    return {r[0] for r in rows}


def _writer(conn, locks, key: str, done: list):
    from workspacectl.engine.db import transaction

    def run():
        with transaction(conn, locks=locks):
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", (key, "1"))
        done.append(key)
    t = threading.Thread(target=run)
    t.start()
    return t


def test_writers_of_different_things_hold_their_locks_together_and_of_one_thing_in_turn(pg_workspace):
    from workspacectl.engine.blobs import blob_lock
    from workspacectl.engine.db import transaction
    from workspacectl.engine.memory import memory_lock
    from workspacectl.engine.projects.files import files_lock
    from workspacectl.engine.skills.versions import skill_lock
    from workspacectl.engine.vault.credentials import credential_lock

    kinds = [(files_lock("p_a"), files_lock("p_b")), (skill_lock("s_a"), skill_lock("s_b")),
             (credential_lock("c_a"), credential_lock("c_b")), (memory_lock("membership", "m_a"),
                                                                memory_lock("membership", "m_b")),
             (blob_lock("a" * 64), blob_lock("b" * 64))]
    a, b, c, watcher = (_conn(pg_workspace) for _ in range(4))
    done: list[str] = []
    try:
        for n, (one, other) in enumerate(kinds):
            with transaction(a, locks=[one]):
                a.execute("INSERT INTO settings (key, value) VALUES (?, ?)", (f"rl.{n}.a", "1"))
                # another thing: it commits while the first is open, both locks granted meanwhile
                with transaction(b, locks=[other]):
                    b.execute("INSERT INTO settings (key, value) VALUES (?, ?)", (f"rl.{n}.b", "1"))
                    assert _resource_lock_states(watcher, one) == [True]
                    assert _resource_lock_states(watcher, other) == [True]
                # the same thing: the second writer waits, its lock not granted
                same = _writer(c, [one], f"rl.{n}.c", done)
                c_pid = c._session.info.backend_pid
                wait_until(lambda pid=c_pid: pid in _waiting_pids(watcher), f"the second writer of {one} waiting")
                assert _resource_lock_states(watcher, one) == [True, False]
                assert f"rl.{n}.c" not in done
            same.join()
            assert done[-1] == f"rl.{n}.c"
        keys = [r[0] for r in watcher.execute("SELECT key FROM settings WHERE key LIKE 'rl.%' ORDER BY key")]
        assert keys == sorted(f"rl.{n}.{x}" for n in range(len(kinds)) for x in "abc")
    finally:
        for conn in (a, b, c, watcher):
            conn.close()


def test_a_writer_naming_nothing_still_runs_alone_and_appenders_run_beside_resource_writers(pg_workspace):
    from workspacectl.engine.db import transaction
    from workspacectl.engine.skills.versions import skill_lock

    a, b, c, watcher = (_conn(pg_workspace) for _ in range(4))
    done: list[str] = []
    try:
        with transaction(a, locks=[skill_lock("s_x")]):
            a.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("ws.a", "1"))
            with transaction(b, appends_only=True):     # a token's audit row: beside it
                b.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("ws.b", "1"))
            alone = _writer(c, [], "ws.c", done)       # a workspace-wide writer: waits
            c_pid = c._session.info.backend_pid
            wait_until(lambda: c_pid in _waiting_pids(watcher), "the workspace-wide writer waiting")
            assert done == []
        alone.join()
        assert done == ["ws.c"]
    finally:
        for conn in (a, b, c, watcher):
            conn.close()


@pytest.fixture
def pg_backend(pg_server_pool, home, monkeypatch):
    ws, server = pg_server_pool.take()
    monkeypatch.setenv("WSCTL_MASTER_KEY", pg_server_pool.databases.key)
    monkeypatch.setenv("WSCTL_BLOB_DIR", str(ws / "blobs"))
    b = make_backend("remote", ws, home, server=server)
    b.door = "postgres"
    yield b
    b.close(wait=False)
    pg_server_pool.databases.drop(ws)


def test_bundle_uploads_to_two_specialists_proceed_together_and_to_one_in_turn(pg_backend):
    """Through the served door: with one specialist's file set locked (a transaction held open at
    a known point), an upload to another specialist is answered at once, and an upload to the
    locked one waits (its lock not granted in pg_locks) until the holder commits, then lands."""
    from workspacectl.engine.db import transaction
    from workspacectl.engine.projects.files import files_lock

    b = pg_backend
    p1, p2 = (b.ok("POST", "/v1/projects", {"name": f"Files {n}"})["project"]["id"] for n in (1, 2))
    holder, watcher = _conn(b.workspace), _conn(b.workspace)
    answers: list = []
    try:
        with transaction(holder, locks=[files_lock(p1)]):
            holder.execute("SELECT 1")    # BEGIN and the locks go with the first statement
            r = post_bundle(b, p2, tgz({"other.txt": b"two"}))
            assert r.status == 200 and r.body == {"added": 1, "updated": 0}, r.body
            waiting = threading.Thread(target=lambda: answers.append(post_bundle(b, p1, tgz({"one.txt": b"1"}))))
            waiting.start()
            wait_until(lambda: _resource_lock_states(watcher, files_lock(p1)) == [True, False],
                       "the upload to the locked specialist waiting for its lock")
            assert answers == []
        waiting.join()
        assert answers[0].status == 200 and answers[0].body == {"added": 1, "updated": 0}
        assert list(listing(b, p1)) == ["one.txt"] and list(listing(b, p2)) == ["other.txt"]
    finally:
        holder.close()
        watcher.close()
