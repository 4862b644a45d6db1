"""The PostgreSQL door's writer lock (engine/db/postgres.py): a transaction that only appends (a
token's audit row) holds it shared, beside other appenders; every other writer holds it alone,
as on SQLite. And the round trips it saves: BEGIN with the first statement, SAVEPOINT and RELEASE
with each write, with every rule of the old spelling kept."""
from __future__ import annotations

import threading

import pytest

from tests.conftest import wait_until
from workspacectl.engine.db import IntegrityError


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
            with pytest.raises(IntegrityError):
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


BY_NAME = "EXECUTE by name"   # a prepared statement run on libpq by its name (no text sent)


def _statements(conn) -> list[str]:
    """Wrap the door's psycopg session: answers the list of messages it sends, one per round trip
    (each waits once for its answer): a cursor's text, or BY_NAME."""
    sent: list[str] = []
    texts: list[str] = []
    session = conn._session
    cursor, wait = session.cursor, session.wait

    def spying_cursor(*args, **kwargs):
        cur = cursor(*args, **kwargs)
        execute = cur.execute

        def spy(query, *a, **k):
            texts.append(str(query))
            return execute(query, *a, **k)
        cur.execute = spy
        return cur

    def spying_wait(gen, *args, **kwargs):
        sent.append(texts.pop() if texts else BY_NAME)
        return wait(gen, *args, **kwargs)
    session.cursor, session.wait = spying_cursor, spying_wait
    return sent


def test_an_appender_sends_its_inserts_with_commit_and_a_failed_one_fails_it_whole(pg_workspace):
    """After the first statement (sent with BEGIN and the lock), an appending transaction's
    INSERTs go with its COMMIT in one message, without savepoints; a statement after them sends
    them first; an INSERT that fails at COMMIT rolls the whole transaction back."""
    from workspacectl.engine.db import transaction

    conn, watcher = _conn(pg_workspace), _conn(pg_workspace)
    try:
        sent = _statements(conn)
        with transaction(conn, appends_only=True):
            assert conn.execute("SELECT count(*) FROM settings WHERE key LIKE 'held.%'").fetchone()[0] == 0
            cur = conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("held.a", "50%"))
            assert cur.rowcount == 1 and cur.fetchone() is None
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("held.b", "it's"))
            # not yet sent: another session does not wait for it, and it is not there
            assert watcher.execute("SELECT count(*) FROM settings WHERE key LIKE 'held.%'").fetchone()[0] == 0
        assert [s for s in sent if "held." in s and "INSERT" in s] == [
            "INSERT INTO settings (key, value) VALUES ('held.a', '50%'); "
            "INSERT INTO settings (key, value) VALUES ('held.b', 'it''s'); COMMIT"]
        assert not any("SAVEPOINT" in s for s in sent)
        rows = watcher.execute("SELECT key, value FROM settings WHERE key LIKE 'held.%' ORDER BY key").fetchall()
        assert [tuple(r) for r in rows] == [("held.a", "50%"), ("held.b", "it's")]

        with transaction(conn, appends_only=True):     # a read after a held INSERT sees it
            conn.execute("SELECT 1").fetchone()
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("held.c", "1"))
            assert conn.execute("SELECT count(*) FROM settings WHERE key = 'held.c'").fetchone()[0] == 1

        with pytest.raises(IntegrityError):     # a duplicate fails the transaction at COMMIT
            with transaction(conn, appends_only=True):
                conn.execute("SELECT 1").fetchone()
                conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("held.d", "1"))
                conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("held.a", "again"))
        assert not conn.in_transaction
        assert watcher.execute("SELECT count(*) FROM settings WHERE key = 'held.d'").fetchone()[0] == 0
        assert watcher.execute("SELECT value FROM settings WHERE key = 'held.a'").fetchone()[0] == "50%"

        from workspacectl.errors import ApiError
        with pytest.raises(ApiError) as e:              # a NUL fails at the INSERT, before the COMMIT
            with transaction(conn, appends_only=True):
                conn.execute("SELECT 1").fetchone()
                conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("held.e", "a\x00b"))
        assert e.value.code == "invalid_request"
        assert watcher.execute("SELECT count(*) FROM settings WHERE key = 'held.e'").fetchone()[0] == 0
        with transaction(conn, appends_only=True):      # a rolled-back appender sends nothing held
            conn.execute("SELECT 1").fetchone()
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("held.f", "1"))
            conn.execute("ROLLBACK")
            conn.execute("BEGIN IMMEDIATE")
        assert watcher.execute("SELECT count(*) FROM settings WHERE key = 'held.f'").fetchone()[0] == 0
    finally:
        conn.close()
        watcher.close()


def test_a_prepared_statement_survives_a_migration_that_changes_its_result(pg_workspace):
    """db.Prepared statements are prepared per session; when a migration changes a table under a
    prepared `SELECT *`, the door drops its prepared statements and runs it again. As a writer's
    first statement it runs under the writer lock (BEGIN and the lock go first)."""
    from workspacectl.engine.db import Prepared, transaction

    conn, other = _conn(pg_workspace), _conn(pg_workspace)
    sql = Prepared("SELECT * FROM settings WHERE key = ?")
    try:
        other.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("prep.a", "1"))
        for _ in range(3):
            assert conn.execute(sql, ("prep.a",)).fetchone()["value"] == "1"
        other.execute_script("ALTER TABLE settings ADD COLUMN prep_extra TEXT")
        try:
            row = conn.execute(sql, ("prep.a",)).fetchone()
            assert (row["value"], row["prep_extra"]) == ("1", None)
        finally:
            other.execute_script("ALTER TABLE settings DROP COLUMN prep_extra")
        with transaction(conn):
            assert conn.execute(sql, ("prep.a",)).fetchone()["value"] == "1"
            pid = conn._session.info.backend_pid
            held = other.execute("SELECT count(*) FROM pg_locks WHERE pid = ? AND locktype = 'advisory' AND granted",
                                 (pid,)).fetchone()[0]
            assert held == 1
            assert conn.execute(sql, ("prep.none",)).fetchone() is None
    finally:
        conn.close()
        other.close()


def test_a_token_issue_is_one_round_trip_and_whoami_none(pg_workspace):
    """On the PostgreSQL door, once authentication's cache is in use (its listener confirmed, the
    session read once), a token issue sends one message (the prepared call of m029's
    wsctl_issue_token, run by its name: the read and the audit row) and whoami none. A token the function
    leaves to the engine (an OAuth token near its end, ...) goes the transaction's way: BEGIN, the
    lock and the credential read in one message, the audit row with COMMIT in another."""
    from tests.conftest import _owner_and_token, wait_until
    from tests.vault_helpers import APIKEY_TOML, install_service, make_credential
    from workspacectl.engine.dispatch import Engine
    from workspacectl.engine.workspaces import open_workspace

    owner, token = _owner_and_token(pg_workspace)
    service = install_service(pg_workspace, APIKEY_TOML.format(base="http://127.0.0.1:9"))
    cred = make_credential(pg_workspace, owner["id"], service, {"apiKey": "sk-rt"})["id"]
    ws = open_workspace(str(pg_workspace))
    try:
        engine = Engine(ws)
        path = f"/v1/credentials/{cred}/token"
        cache = ws.conn().auth_cache
        wait_until(cache.usable, "authentication's cache confirmed by its listener")
        assert engine.handle("POST", path, None, {"reason": "warm"}, token).status == 200   # PREPAREs, caches
        sent = _statements(ws.conn())
        r = engine.handle("POST", path, None, {"reason": "counted"}, token)
        assert r.status == 200 and r.body["apiKey"] == "sk-rt"
        assert sent == [BY_NAME]
        sent.clear()
        me = engine.handle("GET", "/v1/auth/whoami", None, None, token)
        assert me.status == 200 and me.body["member"] == owner and me.body["workspace"] == "Test Workspace"
        assert sent == []
        ws.conn().execute("UPDATE credentials SET status = 'needs_reconnect' WHERE id = ?", (cred,))
        sent.clear()
        assert engine.handle("POST", path, None, {"reason": "left"}, token).status == 502
        assert len(sent) == 3, sent     # the call, then the engine's transaction (which refuses)
        assert sent[1].startswith("BEGIN; SELECT pg_advisory_xact_lock_shared(") and "; EXECUTE wsctl_q" in sent[1]
        log = engine.handle("GET", f"/v1/credentials/{cred}/access-log", None, None, token).body["entries"]
        assert [e["reason"] for e in log] == ["counted", "warm"]
    finally:
        ws.close()


def test_a_prepared_read_survives_a_rolled_back_transaction(pg_workspace):
    """A session's SQL-level PREPAREs (db.Prepared reads) outlive a ROLLBACK: psycopg's own
    protocol-level prepares are off, since with one in the session psycopg answers a ROLLBACK with
    DEALLOCATE ALL (a 500 on the request after any 409, seen on skill revert)."""
    from workspacectl.engine.db import Prepared, transaction
    from workspacectl.engine.store import blob_chunks

    conn = _conn(pg_workspace)
    read = Prepared("SELECT value FROM settings WHERE key = ?")
    try:
        assert conn.execute(read, ("name",)).fetchone() is not None
        with pytest.raises(RuntimeError):
            with transaction(conn):
                for _ in range(8):   # past psycopg's threshold (5) for preparing a repeated statement
                    with blob_chunks._cursor(conn) as cur:   # server-side binding, as the blob store reads
                        cur.execute("SELECT count(*) FROM members WHERE role = %s", ("owner",))
                raise RuntimeError("rolled back")
        assert conn.execute(read, ("name",)).fetchone() is not None
        assert conn.execute("SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'wsctl_q%'").fetchone()[0] == 1
    finally:
        conn.close()


def test_a_statement_first_prepared_in_a_rolled_back_transaction_is_prepared_again(pg_workspace):
    """A PREPARE inside a transaction is undone by its ROLLBACK (or a savepoint's): the door keeps
    such a name only once the transaction commits, and a name the server no longer has is prepared
    again, never a 500."""
    from workspacectl.engine.db import Prepared, savepoint, transaction

    conn = _conn(pg_workspace)
    sql = Prepared("SELECT value FROM settings WHERE key = ?")
    try:
        conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("rb.a", "1"))
        with pytest.raises(RuntimeError):
            with transaction(conn):
                assert conn.execute(sql, ("rb.a",)).fetchone()[0] == "1"   # PREPAREd with BEGIN
                raise RuntimeError("rolled back")
        assert conn.execute(sql, ("rb.a",)).fetchone()[0] == "1"           # outside: prepared again
        with transaction(conn):
            conn.execute("SELECT 1")
            with pytest.raises(RuntimeError):
                with savepoint(conn):
                    other = Prepared("SELECT count(*) FROM settings WHERE key = ?")
                    assert conn.execute(other, ("rb.a",)).fetchone()[0] == 1
                    raise RuntimeError("the savepoint rolled back")
        assert conn.execute(other, ("rb.a",)).fetchone()[0] == 1
        with transaction(conn):                                            # kept once committed
            assert conn.execute(sql, ("rb.a",)).fetchone()[0] == "1"
        assert conn.execute(sql, ("rb.a",)).fetchone()[0] == "1"
        from workspacectl.engine.db.postgres import translate

        assert translate(sql) in conn._sql_prepared
        conn._sql_prepared[translate(sql)] = "wsctl_gone"                   # a name the server lost
        assert conn.execute(sql, ("rb.a",)).fetchone()[0] == "1"
        assert conn._sql_prepared[translate(sql)] != "wsctl_gone"
    finally:
        conn.close()
