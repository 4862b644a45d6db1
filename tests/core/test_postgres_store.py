"""A workspace in PostgreSQL through the local commands (issue 11): the one store's SQL on the
second engine, the URL wherever a workspace is named, its password never shown or kept, the key.

The contract tests run on PostgreSQL through the `backend` fixture's `postgres` door; these are
the local-only parts and the dialect layer itself.
"""
from __future__ import annotations

import json
import sqlite3

import pytest

from tests.conftest import OWNER, pg_env, run_wsctl


def test_translate_keeps_literals_and_spells_postgres():
    pytest.importorskip("psycopg")
    from workspacectl.engine.db.postgres import translate

    assert translate("SELECT a FROM t WHERE b = ? AND c = '?' AND d LIKE '50%'") == \
        "SELECT a FROM t WHERE b = %s AND c = '?' AND d LIKE '50%%'"
    assert translate("SELECT 1 FROM t WHERE m LIKE '%' || :sha || '%'") == "SELECT 1 FROM t WHERE m LIKE '%%' || %(sha)s || '%%'"
    assert translate("INSERT INTO s (k, v) VALUES (?, ?) ON CONFLICT DO NOTHING") == \
        "INSERT INTO s (k, v) VALUES (%s, %s) ON CONFLICT DO NOTHING"
    assert translate("SELECT IFNULL(x, '') FROM t WHERE y = 'it''s ?'") == "SELECT COALESCE(x, '') FROM t WHERE y = 'it''s ?'"
    assert translate("SELECT a::text FROM t") == "SELECT a::text FROM t"


def _cli(env, *args, expect=0, input=None):
    return run_wsctl(list(args), env, expect=expect, input=input)


@pytest.fixture
def pg_env_for(pg_workspace, home, pg_databases):
    env = {**pg_env(home, pg_databases), "WSCTL_WORKSPACE": str(pg_workspace)}
    return env


def test_local_commands_close_their_postgresql_session(pg_env_for, pg_databases, tmp_path):
    """A local command on a PostgreSQL workspace closes its session before the interpreter exits:
    none is left to the garbage collector (psycopg's "deleted while still open" ResourceWarning,
    shown here as every ResourceWarning is), whether the command made the workspace, succeeded,
    failed or completed a name for the shell."""
    env = {**pg_env_for, "PYTHONWARNINGS": "always::ResourceWarning"}   # a fresh interpreter each
    # (a completion's time limit is its own test's: here the names must come however busy the machine)
    empty = pg_databases.fresh(tmp_path / "made", empty=True)
    runs = [
        run_wsctl(["init", "--workspace", empty, "--name", "Made", "--owner-name", OWNER["name"],
                   "--owner-email", OWNER["email"]], {**env, "WSCTL_WORKSPACE": ""}, fresh=True),
        run_wsctl(["members", "list"], env, fresh=True),
        run_wsctl(["members", "login-code", "nobody@example.com"], env, expect=5, fresh=True),
        run_wsctl(["complete-values", "member", ""], {**env, "WSCTL_COMPLETION_SECONDS": "600"}, fresh=True),
    ]
    pg_databases.drop(empty)
    assert OWNER["email"] in runs[1].out and OWNER["name"] in runs[3].out, runs[3]
    for r in runs:
        assert "ResourceWarning" not in r.err and "still open" not in r.err, r.err


def test_local_commands_on_postgres(pg_env_for, tmp_path):
    env = pg_env_for
    members = _cli(env, "members", "list", "--json").json["members"]
    assert [m["email"] for m in members] == [OWNER["email"]]
    added = _cli(env, "members", "add", "Ann@Example.com", "--name", "Ann", "--role", "member", "--json").json
    # emails are unique in any case, as on SQLite (NOCASE)
    dup = _cli(env, "members", "add", "ann@example.COM", "--name", "Other", expect=6)
    assert dup.err.startswith("error: ") and "Traceback" not in dup.err
    assert _cli(env, "members", "list", "--json").json["members"][-1]["id"] == added["id"]
    # a credential's secret sealed under the key from WSCTL_MASTER_KEY, and issued back
    svc = tmp_path / "svc.toml"
    svc.write_text('service = "pgsvc"\nname = "PG svc"\ncredentialType = "apiKey"\n'
                   'envVars = { apiKey = "PGSVC_KEY" }\n[[operations]]\nname = "list-things"\n'
                   'summary = "List things"\nmethod = "GET"\npath = "/things"\n')
    _cli(env, "catalog", "import", str(svc))
    hits = _cli(env, "catalog", "search", "list things", "--json").json
    assert hits["operations"][0]["opId"] == "pgsvc.list-things"
    # a project with files: bytes in and out unchanged
    proj = _cli(env, "specialist", "create", "Crew", "--json").json["project"]
    folder = tmp_path / "files"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "a.md").write_text("alpha\n")
    (folder / "b.bin").write_bytes(bytes(range(256)))
    _cli(env, "specialist", "files", "bundle", "upload", proj["id"], str(folder))
    listed = _cli(env, "specialist", "files", "list", proj["id"], "--json").json["files"]
    assert sorted(f["path"] for f in listed) == ["b.bin", "docs/a.md"]
    # memory: a proposal queued, read back in order
    for i in range(3):
        _cli(env, "memory", "propose", "org", f"note {i}")
    pending = _cli(env, "memory", "show", "org", "--json").json["pendingNotes"]
    assert [n["text"] for n in pending] == ["note 0", "note 1", "note 2"]


def test_nul_in_text_is_400_and_changes_nothing(pg_workspace):
    """PostgreSQL text cannot hold a NUL: the store answers 400 (as the engine's own checks do
    before it), never a 500, and the transaction goes on without the refused write."""
    from tests.vault_helpers import open_ws
    from workspacectl.engine.db import transaction
    from workspacectl.errors import ApiError

    conn = open_ws(pg_workspace).conn()
    try:
        with transaction(conn):
            with pytest.raises(ApiError) as e:
                conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("nul.test", "a\x00b"))
            assert e.value.code == "invalid_request" and e.value.status == 400
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("nul.after", "ok"))
        rows = conn.execute("SELECT key FROM settings WHERE key LIKE 'nul.%' ORDER BY key").fetchall()
        assert [r["key"] for r in rows] == ["nul.after"]
    finally:
        conn.close()


def test_failed_write_rolls_back_to_its_savepoint(pg_workspace):
    """A unique violation inside a transaction is the store's IntegrityError (never a sqlite3
    class on PostgreSQL) the engine catches, and the transaction carries on (PostgreSQL would
    otherwise abort all of it)."""
    from tests.vault_helpers import open_ws
    from workspacectl.engine.db import IntegrityError, StoreError, transaction

    conn = open_ws(pg_workspace).conn()
    try:
        with transaction(conn):
            conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("dup.test", "1"))
            with pytest.raises(IntegrityError) as raised:
                conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("dup.test", "2"))
            assert isinstance(raised.value, StoreError) and not isinstance(raised.value, sqlite3.Error)
            conn.execute("UPDATE settings SET value = ? WHERE key = ?", ("3", "dup.test"))
        assert conn.execute("SELECT value FROM settings WHERE key = 'dup.test'").fetchone()[0] == "3"
        row = conn.execute("SELECT key, value FROM settings WHERE key = ?", ("dup.test",)).fetchone()
        assert dict(row) == {"key": "dup.test", "value": "3"} and tuple(row) == ("dup.test", "3")
    finally:
        conn.close()


def test_a_writer_waits_the_busy_timeout_setting_then_gets_locked(pg_workspace, monkeypatch):
    """WSCTL_BUSY_TIMEOUT_MS is the PostgreSQL writer lock's lock_timeout too: a writer behind
    another one that holds the workspace gets SQLite's "database is locked" (the engine's 409)
    once that bound has passed, and nothing of its own is written."""
    from workspacectl.engine.db import WorkspaceBusy, transaction
    from workspacectl.engine.db.postgres import PgConnection

    monkeypatch.setenv("WSCTL_BUSY_TIMEOUT_MS", "300")
    holder, waiter = PgConnection(pg_workspace), PgConnection(pg_workspace)
    assert waiter.busy_timeout_ms == 300
    try:
        with transaction(holder):
            holder.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("busy.held", "1"))
            with pytest.raises(WorkspaceBusy, match="locked"):
                with transaction(waiter):
                    waiter.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("busy.waiter", "1"))
            assert not waiter.in_transaction
        with transaction(waiter):     # the holder committed: the lock is free again
            waiter.execute("INSERT INTO settings (key, value) VALUES (?, ?)", ("busy.after", "1"))
        keys = [r[0] for r in holder.execute("SELECT key FROM settings WHERE key LIKE 'busy.%' ORDER BY key")]
        assert keys == ["busy.after", "busy.held"]
    finally:
        holder.close()
        waiter.close()


def test_an_upsert_is_written_once_for_both_engines(pg_workspace):
    """The store spells an upsert as both engines read it (ON CONFLICT ... DO UPDATE / DO NOTHING):
    no SQLite-only spelling is translated any more (INSERT OR REPLACE / OR IGNORE)."""
    from tests.vault_helpers import open_ws

    upsert = "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
    conn = open_ws(pg_workspace).conn()
    try:
        conn.executemany(upsert, [("rep.a", "1"), ("rep.b", "2")])
        conn.execute(upsert, ("rep.a", "3"))
        conn.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING", ("rep.b", "9"))
        rows = conn.execute("SELECT key, value FROM settings WHERE key LIKE 'rep.%' ORDER BY key").fetchall()
        assert [tuple(r) for r in rows] == [("rep.a", "3"), ("rep.b", "2")]
    finally:
        conn.close()


def test_init_refuses_a_workspace_already_there(pg_env_for, pg_workspace):
    r = _cli(pg_env_for, "init", "--workspace", str(pg_workspace), expect=6)
    assert "already exists" in r.err


def test_password_never_shown_nor_kept(pg_databases, tmp_path, home):
    """A URL with a password: messages show ***, and a profile keeps the URL without it."""
    base = pg_databases.url("wsctl_no_such_db_h11")
    user_at = base.split("://", 1)[1]
    with_pw = base.replace("://", "://", 1).replace(user_at, user_at.replace("@", ":S3cretPW@", 1), 1)
    env = {**pg_env(home, pg_databases), "WSCTL_WORKSPACE": with_pw}
    r = _cli(env, "members", "list", expect=None)
    assert r.code != 0 and "S3cretPW" not in r.err + r.out and "***" in r.err
    assert "Traceback" not in r.err


def test_profile_keeps_no_password(pg_databases, home, tmp_path):
    loc = pg_databases.fresh(tmp_path)
    try:
        with_pw = loc.replace("postgres@", "postgres:Unused9PW@", 1)
        env = {**pg_env(home, pg_databases)}
        # trust auth ignores the password: the init succeeds, and the profile must not keep it
        empty = pg_databases.fresh(tmp_path, empty=True)
        url = empty.replace("postgres@", "postgres:Unused9PW@", 1)
        r = _cli(env, "init", "--workspace", url, "--owner-email", "o@example.com", "--json")
        assert "Unused9PW" not in r.out + r.err and "PGPASSWORD" in r.err
        assert "Unused9PW" not in (home / "config.toml").read_text()
        status = _cli(env, "auth", "status", "--json").json
        assert status["location"] == empty and status["signedIn"]
        pg_databases.drop(empty)
        assert with_pw
    finally:
        pg_databases.drop(loc)


def test_wrong_key_is_refused(pg_env_for, pg_workspace):
    from tests.vault_helpers import install_service, make_credential, open_ws

    env = pg_env_for
    install_service(pg_workspace, 'service = "keysvc"\nname = "K"\ncredentialType = "apiKey"\n')
    owner = _cli(env, "members", "list", "--json").json["members"][0]
    make_credential(pg_workspace, owner["id"], "keysvc", {"apiKey": "sk-sealed-1"})   # seals: records the key
    open_ws(pg_workspace).conn().close()
    import base64
    import os

    wrong = {**env, "WSCTL_MASTER_KEY": base64.b64encode(os.urandom(32)).decode()}
    r = _cli(wrong, "members", "list", expect=3)
    assert r.err.startswith("error: ") and "WSCTL_MASTER_KEY" in r.err and len(r.err.strip().splitlines()) == 1
    none = {k: v for k, v in env.items() if k != "WSCTL_MASTER_KEY"}
    r = _cli(none, "members", "list", expect=3)
    assert "WSCTL_MASTER_KEY" in r.err
    # `wsctl serve` refuses to start the same way
    r = _cli(wrong, "serve", "--port", "0", expect=3)
    assert "WSCTL_MASTER_KEY" in r.err


def test_local_path_imports_no_psycopg(home):
    """The SQLite path never imports psycopg (tests/cli/test_imports.py checks the rest)."""
    import subprocess
    import sys

    code = ("import sys; from workspacectl.engine.workspaces import workspace_type; "
            "workspace_type('/tmp/x'); print('psycopg' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert sqlite3 and json
