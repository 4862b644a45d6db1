"""The PostgreSQL door's writer lock (engine/db/postgres.py): a transaction that only appends (a
token's audit row) holds it shared, beside other appenders; every other writer holds it alone,
as on SQLite. And the round trips it saves: BEGIN with the first statement, SAVEPOINT and RELEASE
with each write, with every rule of the old spelling kept."""
from __future__ import annotations

import sqlite3
import threading

import pytest

from tests.conftest import wait_until


def _conn(pg_workspace):
    from workspacectl.engine.db.postgres import PgConnection

    return PgConnection(str(pg_workspace))


def _waits_for_writer_lock(watcher, pid: int) -> bool:
    """True while backend `pid` waits for an advisory lock (the writer lock) it has not got."""
    return watcher.execute("SELECT count(*) FROM pg_locks WHERE pid = ? AND locktype = 'advisory' AND NOT granted",
                           (pid,)).fetchone()[0] == 1


def _in_thread(conn, appends_only: bool, key: str, done: list) -> threading.Thread:
    from workspacectl.engine.db import transaction

    def write():
        with transaction(conn, appends_only=appends_only):
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", (key, "1"))
        done.append(key)

    t = threading.Thread(target=write)
    t.start()
    return t


def test_appenders_share_the_writer_lock_and_other_writers_hold_it_alone(pg_workspace):
    from workspacectl.engine.db import transaction

    a, b, c, watcher = (_conn(pg_workspace) for _ in range(4))
    done: list[str] = []
    try:
        with transaction(a, appends_only=True):
            a.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("lock.a", "1"))
            # a second appender runs and commits while the first is open
            with transaction(b, appends_only=True):
                b.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("lock.b", "1"))
            # an ordinary writer waits for the open appender ...
            writer = _in_thread(c, False, "lock.c", done)
            c_pid = c._session.info.backend_pid
            wait_until(lambda: _waits_for_writer_lock(watcher, c_pid), "the writer waiting for the lock")
            assert done == []
        writer.join()   # ... and goes once it has committed
        assert done == ["lock.c"]

        # and an appender waits for an open ordinary writer
        with transaction(a):
            a.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("lock.d", "1"))
            appender = _in_thread(b, True, "lock.e", done)
            b_pid = b._session.info.backend_pid
            wait_until(lambda: _waits_for_writer_lock(watcher, b_pid), "the appender waiting for the lock")
            assert done == ["lock.c"]
        appender.join()
        assert done == ["lock.c", "lock.e"]
        rows = watcher.execute("SELECT key FROM settings WHERE key LIKE 'lock.%' ORDER BY key").fetchall()
        assert [r[0] for r in rows] == ["lock.a", "lock.b", "lock.c", "lock.d", "lock.e"]
    finally:
        for conn in (a, b, c, watcher):
            conn.close()


@pytest.mark.parametrize("appends_only", [False, True])
def test_a_failed_first_write_rolls_back_alone(pg_workspace, appends_only):
    """The first statement travels with BEGIN and the lock; when it fails, its savepoint still
    holds the transaction, which goes on and commits what came after."""
    from workspacectl.engine.db import transaction

    conn = _conn(pg_workspace)
    try:
        conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("first.dup", "0"))
        with transaction(conn, appends_only=appends_only):
            with pytest.raises(sqlite3.IntegrityError):
                conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("first.dup", "1"))
            cur = conn.execute("UPDATE settings SET value = ? WHERE key LIKE ?", ("2", "first.%"))
            assert cur.rowcount == 1
        assert conn.execute("SELECT value FROM settings WHERE key = 'first.dup'").fetchone()[0] == "2"
    finally:
        conn.close()


def test_first_statement_answers_its_own_rows_and_an_empty_transaction_costs_nothing(pg_workspace):
    from workspacectl.engine.db import transaction

    conn, watcher = _conn(pg_workspace), _conn(pg_workspace)
    try:
        with transaction(conn):
            row = conn.execute("SELECT count(*) AS n, 'x;y' AS s FROM members").fetchone()
            assert (row["n"], row["s"]) == (1, "x;y")
            assert conn.in_transaction
        assert not conn.in_transaction
        with transaction(conn):        # nothing sent: no transaction opened on the server
            assert conn.in_transaction
        with pytest.raises(RuntimeError):
            with transaction(conn):
                raise RuntimeError("before any statement")
        assert not conn.in_transaction
        pid = conn._session.info.backend_pid
        state = watcher.execute("SELECT state FROM pg_stat_activity WHERE pid = ?", (pid,)).fetchone()[0]
        assert state == "idle"
    finally:
        conn.close()
        watcher.close()
