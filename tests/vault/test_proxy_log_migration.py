"""m028_proxy_log: an access log written before it (token rows only) opens with every row and id
kept, and takes proxied rows afterwards; on SQLite and on PostgreSQL."""
from __future__ import annotations

import sqlite3

import pytest

from tests.vault_helpers import open_ws

OLD_SQLITE = """
CREATE TABLE credential_access_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT, credential_id TEXT NOT NULL, at TEXT NOT NULL, member_id TEXT NOT NULL,
    key_id TEXT, caller_kind TEXT NOT NULL, reason TEXT NOT NULL, fields_json TEXT NOT NULL DEFAULT '[]',
    outcome TEXT NOT NULL CHECK (outcome IN ('issued', 'refused')));
CREATE INDEX credential_access_log_cred ON credential_access_log(credential_id, id);
"""
ROWS = [(7, "cred_a", "2026-01-01T00:00:00Z", "um_1", "local", "session", "why", '["apiKey"]', "issued"),
        (9, "cred_a", "2026-01-02T00:00:00Z", "um_2", None, "session", "peek", "[]", "refused")]


def _after(conn):
    from workspacectl.engine.store import vault as store

    rows = [tuple(r) for r in conn.execute("SELECT id, credential_id, at, member_id, key_id, caller_kind, reason, "
                                           "fields_json, outcome, method, path, upstream_status "
                                           "FROM credential_access_log ORDER BY id")]
    assert rows == [(*r, None, None, None) for r in ROWS]
    log_id = store.insert_proxy_log(conn, cred_id="cred_a", at="2026-01-03T00:00:00Z", member_id="um_1",
                                    key_id="local", caller_kind="session", reason="call", fields=["apiKey"],
                                    outcome="failed", method="GET", path="/x")
    assert log_id > 9
    store.set_proxy_outcome(conn, log_id, "proxied", 200)
    assert [r[0] for r in store.list_access_log(conn, "cred_a", None, 10)] == [log_id, 9, 7]


def test_m028_on_sqlite(workspace):
    con = sqlite3.connect(workspace / "workspace.db")
    with con:   # the log as m004 made it
        con.execute("DROP TABLE credential_access_log")
        for statement in OLD_SQLITE.split(";"):
            if statement.strip():
                con.execute(statement)
        con.executemany("INSERT INTO credential_access_log VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", ROWS)
        con.execute("DELETE FROM migrations WHERE name = 'm028_proxy_log'")
    con.close()
    ws = open_ws(workspace)
    try:
        _after(ws.conn())
        with pytest.raises(sqlite3.IntegrityError):
            ws.conn().execute("UPDATE credential_access_log SET outcome = 'other' WHERE id = 7")
    finally:
        ws.close()


def test_m028_on_postgresql(pg_workspace):
    import psycopg

    with psycopg.connect(str(pg_workspace), autocommit=True) as c:
        c.execute("ALTER TABLE credential_access_log DROP COLUMN method, DROP COLUMN path, DROP COLUMN upstream_status, "
                  "DROP CONSTRAINT credential_access_log_outcome_check")
        c.execute("ALTER TABLE credential_access_log ADD CONSTRAINT credential_access_log_outcome_check "
                  "CHECK (outcome IN ('issued', 'refused'))")
        for r in ROWS:
            c.execute("INSERT INTO credential_access_log (id, credential_id, at, member_id, key_id, caller_kind, reason, "
                      "fields_json, outcome) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", r)
        c.execute("SELECT setval(pg_get_serial_sequence('credential_access_log', 'id'), 9)")
        c.execute("DELETE FROM migrations WHERE name = 'm028_proxy_log'")
    ws = open_ws(pg_workspace)
    try:
        _after(ws.conn())
    finally:
        ws.close()
