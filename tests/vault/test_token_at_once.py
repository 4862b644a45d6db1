"""A token issue in one statement on PostgreSQL (m029_token_issue, store.vault.issue_token_at_once).

The function decides what engine/vault/routes.issue_token's transaction decides, or leaves the
decision to it: for each shape of credential, what it logs is what token_fields releases, and
what it does not decide it does not write. Through the door, a token issue on PostgreSQL is one
call of the function (counted by PostgreSQL's function statistics, not timed).
"""
from __future__ import annotations

import json

import httpx
import pytest

from tests.conftest import _owner_and_token, serve, wait_until, workspace_db
from tests.vault_helpers import APIKEY_TOML, TWO_SECRET_TOML, install_service, make_credential, open_ws

OAUTH_TOML = """
service = "oauthsvc"
name = "OAuth Service"
description = "An OAuth service for the one-statement token tests."
credentialType = "oauth2"
envVars = { accessToken = "OAUTHSVC_TOKEN", instanceUrl = "OAUTHSVC_URL" }
[oauth2]
authorizeUrl = "https://oauth.example/authorize"
tokenUrl = "https://oauth.example/token"
scopes = ["read"]
clientId = "client-1"
[[operations]]
name = "me"
summary = "Who I am"
method = "GET"
path = "/me"
"""


@pytest.fixture
def pg(pg_workspace):
    install_service(pg_workspace, APIKEY_TOML.format(base="https://keys.example"))
    install_service(pg_workspace, TWO_SECRET_TOML)
    install_service(pg_workspace, OAUTH_TOML)
    ws = open_ws(pg_workspace)
    yield ws
    ws.close()


def _owner(conn) -> str:
    return conn.execute("SELECT id FROM members WHERE role = 'owner'").fetchone()[0]


def _rows(conn, cred_id: str) -> list:
    return conn.execute("SELECT outcome, fields_json, reason, member_id, key_id, caller_kind "
                        "FROM credential_access_log WHERE credential_id = ? ORDER BY id", (cred_id,)).fetchall()


def _issue(conn, cred_id: str, member_id: str):
    from workspacectl.engine.store import vault as store
    from workspacectl.engine.vault.credentials import precise_now

    return store.issue_token_at_once(conn, cred_id=cred_id, member_id=member_id, key_id="key_t",
                                     caller_kind="session", reason="one statement", at="2026-01-01T00:00:00Z",
                                     now=precise_now())


def _released(ws, row) -> list[str]:
    from workspacectl.engine.vault.credentials import env_vars, open_secrets
    from workspacectl.engine.vault.routes import token_fields

    return sorted(token_fields(row, open_secrets(ws, row), env_vars(row)))


@pytest.mark.parametrize("service, secrets, fields, expires_in", [
    ("keysvc", {"apiKey": "k-1"}, {"instanceUrl": "https://acme.example"}, None),
    ("keysvc", {"apiKey": "k-1"}, {"instanceUrl": ""}, None),
    ("keysvc", {"apiKey": "k-1"}, {"other": "y", "instanceUrl": "u"}, None),
    ("twosecret", {"accountSid": "AC-1", "authToken": "t-2"}, {}, None),
    ("oauthsvc", {"accessToken": "at-1", "refreshToken": "rt-1"}, {}, 3600),
    ("oauthsvc", {"accessToken": "at-1"}, {"instanceUrl": "https://i.example"}, None),
])
def test_what_it_logs_is_what_the_engine_releases(pg, service, secrets, fields, expires_in):
    conn = pg.conn()
    owner = _owner(conn)
    cred = make_credential(pg.url, owner, service, secrets, fields, expires_in=expires_in)
    row = _issue(conn, cred["id"], owner)
    assert row["outcome"] == "issued" and row["access"] == "owner"
    assert json.loads(row["logged_fields"]) == _released(pg, row)
    ((outcome, logged, reason, member, key, kind),) = _rows(conn, cred["id"])
    assert (outcome, json.loads(logged), reason, member, key, kind) == \
        ("issued", _released(pg, row), "one statement", owner, "key_t", "session")


def test_what_it_does_not_decide_it_does_not_write(pg):
    conn = pg.conn()
    owner = _owner(conn)
    near = make_credential(pg.url, owner, "oauthsvc", {"accessToken": "a", "refreshToken": "r"}, expires_in=30)
    reconnect = make_credential(pg.url, owner, "keysvc", {"apiKey": "k"})
    conn.execute("UPDATE credentials SET status = 'needs_reconnect' WHERE id = ?", (reconnect["id"],))
    odd = make_credential(pg.url, owner, "keysvc", {"apiKey": "k"})
    conn.execute("UPDATE credentials SET fields_json = '{not json' WHERE id = ?", (odd["id"],))
    odd_expiry = make_credential(pg.url, owner, "oauthsvc", {"accessToken": "a", "refreshToken": "r"}, expires_in=3600)
    conn.execute("UPDATE credentials SET expires_at = '2999-01-01 00:00:00' WHERE id = ?", (odd_expiry["id"],))
    for cred in (near, reconnect, odd, odd_expiry):
        row = _issue(conn, cred["id"], owner)
        assert row is not None and row["outcome"] is None and row["logged_fields"] is None
        assert _rows(conn, cred["id"]) == []


def test_a_viewer_is_refused_with_its_row_and_a_stranger_sees_nothing(pg):
    from workspacectl.engine.db import transaction
    from workspacectl.engine.store import identity
    from workspacectl.engine.store import vault as store

    conn = pg.conn()
    owner = _owner(conn)
    cred = make_credential(pg.url, owner, "keysvc", {"apiKey": "k"})
    with transaction(conn):
        viewer = identity.insert_member(conn, "Vi", "vi@example.com", "member")["id"]
        stranger = identity.insert_member(conn, "St", "st@example.com", "member")["id"]
        store.set_grant(conn, cred["id"], viewer, "viewer", "2026-01-01T00:00:00Z")
    row = _issue(conn, cred["id"], viewer)
    assert (row["access"], row["outcome"], row["logged_fields"]) == ("viewer", "refused", "[]")
    assert [(r[0], r[1], r[3]) for r in _rows(conn, cred["id"])] == [("refused", "[]", viewer)]
    assert _issue(conn, cred["id"], stranger) is None
    assert _issue(conn, "cred_nothere", owner) is None
    assert len(_rows(conn, cred["id"])) == 1


def test_through_the_door_a_token_is_one_call(pg_workspace, pg_databases):
    """Counted by PostgreSQL (track_functions for this database's new sessions): each issue through
    `wsctl serve` is one call of wsctl_issue_token; the answers and the audit rows are the door's."""
    import psycopg

    install_service(pg_workspace, APIKEY_TOML.format(base="https://keys.example"))
    owner, session = _owner_and_token(pg_workspace)
    cred = make_credential(pg_workspace, owner["id"], "keysvc", {"apiKey": "k-door"}, {"instanceUrl": "https://a.b"})
    dbname = psycopg.conninfo.conninfo_to_dict(str(pg_workspace))["dbname"]
    with psycopg.connect(pg_databases.admin_url, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{dbname}" SET track_functions = \'pl\'')

    def calls() -> int:
        with psycopg.connect(str(pg_workspace), autocommit=True) as c:
            row = c.execute("SELECT calls FROM pg_stat_user_functions WHERE funcname = 'wsctl_issue_token'").fetchone()
            return row[0] if row else 0

    with serve(pg_workspace) as url:
        for i in range(3):
            r = httpx.post(f"{url}/v1/credentials/{cred['id']}/token", json={"reason": f"door {i}"},
                           headers={"Authorization": f"Bearer {session}"}, timeout=30, trust_env=False)
            assert r.status_code == 200 and r.json() == {"apiKey": "k-door", "instanceUrl": "https://a.b"}
        # statistics reach the shared view when the server's session is idle (at most a few seconds)
        wait_until(lambda: calls() == 3, "three calls of wsctl_issue_token counted")
    conn = workspace_db(pg_workspace)
    try:
        assert [(r[0], json.loads(r[1]), r[2]) for r in _rows(conn, cred["id"])] == \
            [("issued", ["apiKey", "instanceUrl"], f"door {i}") for i in range(3)]
    finally:
        conn.close()


def test_the_function_holds_the_writer_lock_as_appenders_do():
    """m029 names the lock by number (it cannot import the driver's module): the same numbers."""
    from workspacectl.engine.db.postgres import LOCK_CLASS, WRITER_LOCK
    from workspacectl.engine.migrations.m029_token_issue import POSTGRES_SQL

    assert f"pg_advisory_xact_lock_shared({LOCK_CLASS}, {WRITER_LOCK})" in POSTGRES_SQL


def test_a_nul_in_a_value_is_refused_whole_on_the_prepared_path(pg):
    """The call run by name on libpq would read a text value only to its first NUL: such a value
    takes the cursor's path, which refuses it (400), and nothing is written."""
    from workspacectl.errors import ApiError

    conn = pg.conn()
    owner = _owner(conn)
    cred = make_credential(pg.url, owner, "keysvc", {"apiKey": "k"})
    assert _issue(conn, cred["id"], owner)["outcome"] == "issued"     # prepared now
    with pytest.raises(ApiError) as refused:
        _issue(conn, cred["id"], owner + "\x00tail")
    assert refused.value.code == "invalid_request" and "NUL" in refused.value.message
    assert len(_rows(conn, cred["id"])) == 1
