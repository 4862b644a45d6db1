"""Credential names (issue 12): a handle of their own, unique in the workspace, set on connect,
changed with `vault rename`, and accepted wherever a command takes a credential. Both doors."""
from __future__ import annotations

import sqlite3

import pytest

from tests.cli_helpers import one_error_line
from tests.connect_helpers import credential_ids, parse_form, path_of
from tests.vault_helpers import TWO_SECRET_TOML, install_service, make_credential, member_with_session
from workspacectl.engine.db import INTEGRITY_ERRORS

SECRETS = {"accountSid": "AC-CANARY-1", "authToken": "tok-CANARY-1"}


@pytest.fixture
def twosecret(backend):
    return install_service(backend.workspace, TWO_SECRET_TOML)


def _names(backend, secret=None) -> dict:
    return {c["id"]: c["name"] for c in backend.ok("GET", "/v1/credentials", secret=secret)["credentials"]}


def test_default_names_follow_the_service_and_rename_keeps_them_unique(backend, twosecret):
    first = make_credential(backend.workspace, backend.owner["id"], twosecret, SECRETS)
    second = make_credential(backend.workspace, backend.owner["id"], twosecret, SECRETS)
    assert (first["name"], second["name"]) == ("twosecret", "twosecret-2")
    assert _names(backend) == {first["id"]: "twosecret", second["id"]: "twosecret-2"}

    path = f"/v1/vault/credentials/{first['id']}"
    renamed = backend.ok("PATCH", path, {"name": "sms-live"})
    assert renamed["id"] == first["id"] and renamed["name"] == "sms-live"
    assert backend.ok("GET", f"/v1/credentials/{first['id']}")["name"] == "sms-live"
    # a name another credential has, in any case, is a conflict; nothing changes
    clash = backend.api("PATCH", f"/v1/vault/credentials/{second['id']}", {"name": "SMS-Live"})
    assert clash.status == 409 and clash.code == "conflict"
    # renaming to its own name (another case) is allowed
    assert backend.ok("PATCH", path, {"name": "SMS-live"})["name"] == "SMS-live"
    for bad in ("", "two words", "cred_abc", "-lead", "x" * 65, "a/b", 7, None):
        r = backend.api("PATCH", path, {"name": bad})
        assert r.status == 400 and r.code == "invalid_request", (bad, r.body)
    assert backend.api("PATCH", path, {"name": "ok", "service": "x"}).status == 400
    assert backend.api("PATCH", path, {}).status == 400
    assert _names(backend) == {first["id"]: "SMS-live", second["id"]: "twosecret-2"}
    # the freed default is taken again by the next credential of the service
    third = make_credential(backend.workspace, backend.owner["id"], twosecret, SECRETS)
    assert third["name"] == "twosecret"


def test_only_the_owner_renames(backend, twosecret):
    cred = make_credential(backend.workspace, backend.owner["id"], twosecret, SECRETS)
    member, session = member_with_session(backend, "mia@example.com")
    path = f"/v1/vault/credentials/{cred['id']}"
    assert backend.api("PATCH", path, {"name": "mine"}, secret=session).status == 404
    backend.ok("PUT", f"/v1/credentials/{cred['id']}/sharing", {"membershipId": member["id"], "role": "user"})
    r = backend.api("PATCH", path, {"name": "mine"}, secret=session)
    assert r.status == 403 and r.code == "forbidden"
    platform_read = backend.key("platform", ["vault:read"])
    assert backend.api("PATCH", path, {"name": "mine"}, secret=platform_read).status == 403
    assert backend.ok("GET", f"/v1/credentials/{cred['id']}")["name"] == "twosecret"


def test_a_connection_names_its_credential(door, backend, twosecret):
    existing = make_credential(backend.workspace, backend.owner["id"], twosecret, SECRETS)
    for name, status in (("TwoSecret", 409), ("bad name", 400), ("cred_x", 400)):
        r = door.api("POST", "/v1/connections", {"service": twosecret, "name": name})
        assert r.status == status, (name, r.body)
    r = door.api("POST", "/v1/connections", {"service": twosecret, "name": "x", "credentialId": existing["id"]})
    assert r.status == 400
    c = door.api("POST", "/v1/connections", {"service": twosecret, "name": "sms-test"}).body
    b, page = door.browser(path_of(c["connectUrl"]))
    form = parse_form(page)
    done = b.post(form["action_url"], data={**form["inputs"], "accountSid": "AC-CANARY-2", "authToken": "t-CANARY-2"})
    assert done.status_code == 200, done.text[:300]
    final = door.status(c["id"])
    assert final["status"] == "connected"
    assert _names(backend)[final["credentialId"]] == "sms-test"
    assert len(credential_ids(door)) == 2


def test_commands_take_a_name_wherever_they_take_an_id(backend, twosecret):
    cred = make_credential(backend.workspace, backend.owner["id"], twosecret, SECRETS)
    backend.wsctl("vault", "rename", "twosecret", "sms-live")
    shown = backend.wsctl("vault", "show", "SMS-LIVE", "--json").json
    assert shown["id"] == cred["id"] and shown["name"] == "sms-live"
    env = backend.wsctl("vault", "env", "sms-live", cred["id"], "--reason", "names", "--format", "json").json
    assert env == {"TWO_ACCOUNT_SID": "AC-CANARY-1", "TWO_AUTH_TOKEN": "tok-CANARY-1"}
    log = backend.wsctl("vault", "log", "sms-live", "--json").json["entries"]
    assert len(log) == 1 and log[0]["reason"] == "names"  # one credential, issued once
    assert backend.wsctl("vault", "fields", "sms-live", "--json").json["secretFields"]
    # an unknown name is "not found"; a taken or malformed new name changes nothing
    r = backend.wsctl("vault", "show", "nope", expect=5)
    assert "No credential named 'nope'" in one_error_line(r)
    other = make_credential(backend.workspace, backend.owner["id"], twosecret, SECRETS)
    assert other["name"] == "twosecret"
    one_error_line(backend.wsctl("vault", "rename", "twosecret", "SMS-LIVE", expect=6))
    one_error_line(backend.wsctl("vault", "rename", "twosecret", "has space", expect=7))
    assert _names(backend) == {cred["id"]: "sms-live", other["id"]: "twosecret"}
    # an id always wins, and shows in `vault list`
    assert backend.wsctl("vault", "show", other["id"], "--json").json["name"] == "twosecret"
    listed = backend.wsctl("vault", "list").out
    assert "sms-live" in listed and "twosecret" in listed


def test_names_of_specialists_members_and_keys(backend):
    a = backend.ok("POST", "/v1/projects", {"name": "Ops"})["project"]["id"]
    b = backend.ok("POST", "/v1/projects", {"name": "ops"})["project"]["id"]
    c = backend.ok("POST", "/v1/projects", {"name": "Sales"})["project"]["id"]
    assert backend.wsctl("specialist", "show", "Ops", "--json").json["project"]["id"] == a  # exact case first
    assert backend.wsctl("specialist", "show", "sales", "--json").json["project"]["id"] == c
    backend.ok("PATCH", f"/v1/projects/{b}", {"name": "Ops"})
    r = backend.wsctl("specialist", "show", "Ops", expect=7)
    lines = r.err.strip().splitlines()
    assert lines[0].startswith("error: 2 specialists are named 'Ops'")
    assert sorted(line.split()[0] for line in lines[1:]) == sorted([a, b])
    assert "Traceback" not in r.err

    mia = backend.add_member("mia@example.com", name="Mia Park")
    backend.add_member("max@example.com", name="Max\x1b[31m Park")
    r = backend.wsctl("specialist", "grant", "Sales", "--member", "mia park", "--role", "viewer", "--json")
    assert any(g.get("membershipId") == mia["id"] for g in r.json["project"]["grants"])
    code = backend.wsctl("members", "login-code", "Mia Park", "--json").json
    assert code["code"]
    backend.ok("PATCH", f"/v1/projects/{b}", {"name": "Mia Park"})  # no cross-kind confusion
    backend.add_member("mia2@example.com", name="Mia Park")
    r = backend.wsctl("members", "login-code", "Mia Park", expect=7)
    assert len(r.err.strip().splitlines()) == 3 and "\x1b" not in r.err

    key = backend.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["projects:manage"], "name": "ci-bot"})
    backend.wsctl("keys", "revoke", "ci-bot")
    assert key["id"] not in [k["id"] for k in backend.ok("GET", "/v1/keys")["keys"]]
    backend.wsctl("keys", "revoke", "ci-bot", expect=5)
    if backend.kind == "local":  # acting locally as another member, named by name
        backend.ok("PATCH", f"/v1/projects/{b}", {"name": "Ops"})
        r = backend.wsctl("auth", "login", "--member", "max\x1b[31m park", "--json")
        assert r.json["member"]["email"] == "max@example.com"


def test_migration_names_existing_credentials(workspace, home):
    """m014 on a workspace whose credentials still carry display names: renamed after their
    service in creation order, and the names are unique from then on."""
    install_service(workspace, TWO_SECRET_TOML)
    from tests.vault_helpers import open_ws
    from workspacectl.engine.store import identity

    ws = open_ws(workspace)
    owner = identity.first_owner(ws.conn())["id"]
    ws.conn().close()
    ids = [make_credential(workspace, owner, "twosecret", SECRETS)["id"] for _ in range(3)]
    con = sqlite3.connect(workspace / "workspace.db")
    with con:  # the workspace as m013 left it
        con.execute("DROP INDEX credentials_name")
        con.execute("ALTER TABLE connections DROP COLUMN name")
        con.execute("UPDATE credentials SET name = 'Two Secret SMS'")
        con.execute("DELETE FROM migrations WHERE name = 'm014_credential_names'")
    con.close()
    ws = open_ws(workspace)
    rows = ws.conn().execute("SELECT id, name FROM credentials ORDER BY id").fetchall()
    assert [(r["id"], r["name"]) for r in rows] == list(zip(ids, ["twosecret", "twosecret-2", "twosecret-3"]))
    with pytest.raises(INTEGRITY_ERRORS):
        ws.conn().execute("UPDATE credentials SET name = 'TWOSECRET' WHERE id = ?", (ids[1],))
    ws.conn().close()


def test_vault_connect_takes_a_name_and_clashing_env_names_are_named(backend, twosecret):
    taken = make_credential(backend.workspace, backend.owner["id"], twosecret, SECRETS)
    for name, code in (("TWOSECRET", 6), ("two words", 7)):  # refused before a link or a key prompt
        r = backend.wsctl("vault", "connect", twosecret, "--name", name, "--no-open", input="", expect=code)
        one_error_line(r)
    assert list(_names(backend).values()) == ["twosecret"]
    if backend.kind == "local":  # the in-place key connect: key lines on stdin
        r = backend.wsctl("vault", "connect", twosecret, "-n", "sms-test", input="AC-CANARY-3\ntok-CANARY-3\n")
        assert "Connected twosecret as sms-test" in r.err
        assert _names(backend)[r.out.strip()] == "sms-test"
        other = "sms-test"
    else:
        other = make_credential(backend.workspace, backend.owner["id"], twosecret, SECRETS)["name"]
    r = backend.wsctl("vault", "env", "twosecret", other, "--reason", "both", expect=7)
    line = one_error_line(r)
    assert f"twosecret ({taken['id']})" in line and f"{other} (cred_" in line and "both set" in line
    assert backend.wsctl("vault", "log", "twosecret", "--json").json["entries"] == []  # nothing was issued


def test_migration_names_existing_credentials_on_postgresql(pg_workspace):
    """m014's POSTGRES_SQL on a PostgreSQL workspace whose credentials still carry display names."""
    import psycopg

    from tests.vault_helpers import open_ws

    with psycopg.connect(str(pg_workspace), autocommit=True) as c:
        owner = c.execute("SELECT id FROM members WHERE role = 'owner' ORDER BY id LIMIT 1").fetchone()[0]
        c.execute("DROP INDEX credentials_name")
        c.execute("ALTER TABLE connections DROP COLUMN name")
        for n, service in enumerate(["stripe", "slack", "stripe", "stripe"]):
            c.execute("INSERT INTO credentials (id, service, name, credential_type, owner_member_id, created_at, "
                      "updated_at) VALUES (%s, %s, %s, 'apiKey', %s, 'now', 'now')",
                      (f"cred_0{n}", service, service.title(), owner))
        c.execute("DELETE FROM migrations WHERE name = 'm014_credential_names'")
    open_ws(pg_workspace).close()  # applies m014 again, and closes the session it used
    with psycopg.connect(str(pg_workspace), autocommit=True) as c:
        rows = c.execute("SELECT id, name FROM credentials ORDER BY id").fetchall()
        assert rows == [("cred_00", "stripe"), ("cred_01", "slack"), ("cred_02", "stripe-2"), ("cred_03", "stripe-3")]
        with pytest.raises(psycopg.errors.UniqueViolation):
            c.execute("UPDATE credentials SET name = 'SLACK' WHERE id = 'cred_00'")
        assert c.execute("SELECT count(*) FROM connections WHERE name IS NULL").fetchone()[0] == 0
