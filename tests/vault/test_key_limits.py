"""Issue 25 item 4: platform keys limited to named credentials, on every door.

A limited key sees only its credentials: the list holds only them, and any other credential is
404 to it on every route that names one (the routes are read from the engine's own table, so a
route added under /v1/credentials/{id} or /v1/vault/credentials/{id} is covered here), exactly as
an unknown id is, with nothing issued and nothing logged.
"""
from __future__ import annotations

from tests.api_helpers import assert_error
from tests.cli_helpers import one_error_line
from tests.vault_helpers import make_credential, member_with_session
from workspacectl.engine.scopes import PLATFORM_SCOPES, ROUTE_SCOPES
from workspacectl.engine.vault.key_limits import CREDENTIAL_PATHS

# A body each credential route would accept from the owner (so a 404 is the limit, not the body).
BODIES = {"/v1/credentials/{id}/token": {"reason": "limits"},
          "/v1/credentials/{id}/sharing": {"workspace": True, "role": "viewer"},
          "/v1/vault/credentials/{id}/data": {"apiKey": "sk-replaced"},
          "/v1/vault/credentials/{id}": {"name": "renamed-by-key"}}


def _limited_key(backend, cred_ids, scopes=PLATFORM_SCOPES) -> dict:
    r = backend.api("POST", "/v1/keys", {"kind": "platform", "scopes": list(scopes), "name": "limited",
                                         "credentials": cred_ids})
    assert r.status == 201, r.body
    return r.body


def _world(backend):
    """stripe-a and stripe-b of the owner; Bob's stripe-c shared with the owner as viewer; Bob's stripe-d."""
    owner = backend.owner["id"]
    a = make_credential(backend.workspace, owner, "stripe", {"apiKey": "sk-a"})
    b = make_credential(backend.workspace, owner, "stripe", {"apiKey": "sk-b"})
    bob, bob_session = member_with_session(backend, "bob@example.com")
    c = make_credential(backend.workspace, bob["id"], "stripe", {"apiKey": "sk-c"})
    d = make_credential(backend.workspace, bob["id"], "stripe", {"apiKey": "sk-d"})
    backend.ok("PUT", f"/v1/credentials/{c['id']}/sharing", {"membershipId": backend.owner["id"], "role": "viewer"},
               secret=bob_session)
    return a, b, c, d


def test_a_limited_key_reaches_only_its_credentials_on_every_route(backend):
    a, b, c, d = _world(backend)
    key = _limited_key(backend, [a["id"], a["id"]])
    assert key["credentials"] == [a["id"]] and key["secret"].startswith("ws_platform_")
    secret = key["secret"]
    listed = {k["id"]: k["credentials"] for k in backend.ok("GET", "/v1/keys")["keys"]}
    assert listed[key["id"]] == [a["id"]]
    unlimited = backend.ok("POST", "/v1/keys", {"kind": "platform", "scopes": ["vault:read"]})
    assert unlimited["credentials"] is None

    assert backend.ok("GET", "/v1/auth/whoami", secret=secret)["credentials"] == [a["id"]]
    assert backend.ok("GET", "/v1/auth/whoami")["credentials"] is None

    # The list, and name lookups through it: only its credential.
    assert [x["id"] for x in backend.ok("GET", "/v1/credentials", secret=secret)["credentials"]] == [a["id"]]
    assert backend.ok("GET", "/v1/credentials", secret=secret, query={"name": b["name"]})["credentials"] == []
    assert backend.ok("GET", "/v1/credentials", secret=secret, query={"service": "stripe"})["credentials"][0]["id"] \
        == a["id"]

    # Every route naming a credential: another one is 404 exactly as an unknown id is; its own passes.
    assert {p for _, p in ROUTE_SCOPES if p.startswith(("/v1/credentials/{id}",
                                                                             "/v1/vault/credentials/{id}"))} == CREDENTIAL_PATHS
    routes = sorted((m, p) for m, p in ROUTE_SCOPES if p in CREDENTIAL_PATHS)
    assert len(routes) >= 9
    for method, template in routes:
        body = BODIES.get(template) if method != "DELETE" else None
        unknown = backend.api(method, template.replace("{id}", "cred_nosuchthing"), body, secret=secret)
        for other in (b, c, d):
            r = backend.api(method, template.replace("{id}", other["id"]), body, secret=secret)
            assert_error(r, 404, "not_found")
            assert r.body["error"]["message"] == unknown.body["error"]["message"].replace("cred_nosuchthing",
                                                                                          other["id"]), (method, template)
    r = backend.api("POST", f"/v1/credentials/{a['id']}/token", {"reason": "mine"}, secret=secret)
    assert r.status == 200 and r.body["apiKey"] == "sk-a"
    assert backend.ok("GET", f"/v1/credentials/{a['id']}", secret=secret)["id"] == a["id"]

    # The event feed: only its credential's events, though its creator (the owner) sees every event.
    assert {e["subjectId"] for e in backend.ok("GET", "/v1/events", secret=secret)["events"]} == {a["id"]}
    assert {b["id"], c["id"], d["id"]} <= {e["subjectId"] for e in backend.ok("GET", "/v1/events")["events"]}

    # Nothing was changed, issued or logged for the others; the owner still sees them as they were.
    assert backend.ok("GET", f"/v1/credentials/{b['id']}")["name"] == b["name"]
    assert backend.ok("GET", f"/v1/credentials/{b['id']}")["sharing"] == []
    assert backend.ok("GET", f"/v1/credentials/{b['id']}/access-log")["entries"] == []
    assert backend.ok("POST", f"/v1/credentials/{b['id']}/token", {"reason": "owner"})["apiKey"] == "sk-b"
    (entry,) = backend.ok("GET", f"/v1/credentials/{a['id']}/access-log")["entries"]
    assert (entry["outcome"], entry["reason"], entry["keyId"]) == ("issued", "mine", key["id"])


def test_limits_are_refused_where_they_cannot_hold(backend):
    a, b, c, d = _world(backend)
    for body, status, code in (
            ({"kind": "personal", "scopes": ["projects:manage"], "credentials": [a["id"]]}, 400, "invalid_request"),
            ({"kind": "platform", "scopes": ["vault:token"], "credentials": []}, 400, "invalid_request"),
            ({"kind": "platform", "scopes": ["vault:token"], "credentials": a["id"]}, 400, "invalid_request"),
            ({"kind": "platform", "scopes": ["vault:token"], "credentials": [5]}, 400, "invalid_request"),
            ({"kind": "platform", "scopes": ["vault:token"], "credentials": [a["id"], d["id"]]}, 404, "not_found"),
            ({"kind": "platform", "scopes": ["vault:token"], "credentials": [c["id"]]}, 404, "not_found"),
            ({"kind": "platform", "scopes": ["vault:token"], "credentials": ["cred_nosuchthing"]}, 404, "not_found")):
        assert_error(backend.api("POST", "/v1/keys", body), status, code)
    r = backend.api("POST", "/v1/keys", {"kind": "platform", "scopes": ["vault:token"], "credentials": [a["name"]]})
    assert_error(r, 404, "not_found")
    assert "takes credentials' ids (cred_…), not their names" in r.body["error"]["message"]
    assert backend.ok("GET", "/v1/keys")["keys"] == []   # nothing was made
    # Connecting: a new credential is 403 (naming why); a reconnect of another credential is 404.
    secret = _limited_key(backend, [a["id"]], ["vault:connect", "vault:read"])["secret"]
    r = backend.api("POST", "/v1/connections", {"service": "stripe"}, secret=secret)
    assert_error(r, 403, "insufficient_scope", "Insufficient scope")
    assert "limited to named credentials" in r.body["error"]["detail"]["hint"]
    assert_error(backend.api("POST", "/v1/connections", {"service": "stripe", "credentialId": b["id"]},
                             secret=secret), 404, "not_found")
    mine = backend.api("POST", "/v1/connections", {"service": "stripe", "credentialId": a["id"]}, secret=secret)
    if backend.kind == "remote":   # a hosted link needs a server's address
        assert mine.status == 201, mine.body
        assert backend.ok("GET", f"/v1/connections/{mine.body['id']}", secret=secret)["id"] == mine.body["id"]
    else:
        assert mine.status == 400 and "needs a server" in mine.body["error"]["message"]
    if backend.kind == "remote":
        other = backend.ok("POST", "/v1/connections", {"service": "stripe"})   # the owner's session: a new one
        assert_error(backend.api("GET", f"/v1/connections/{other['id']}", secret=secret), 404, "not_found")


def test_the_command_line_limits_keys_by_name_and_shows_the_limit(backend):
    a, b, _c, _d = _world(backend)
    secret = backend.wsctl("keys", "create", "--kind", "platform", "--scope", "vault:read,vault:token,vault:connect",
                           "--credential", a["name"], "--credential", a["id"], "--name", "ci").out.strip()
    env = backend.env_for(secret)
    assert backend.wsctl("auth", "whoami", env=env).out.strip().endswith("via platform, limited to 1 credential(s)")
    listed = backend.wsctl("keys", "list", "--json").json["keys"]
    assert [k["credentials"] for k in listed] == [[a["id"]]]
    backend.wsctl("keys", "create", "--kind", "platform", "--scope", "docs:read", "--name", "docs")
    rows = [line.split("\t") for line in backend.wsctl("keys", "list").out.splitlines()]
    assert {(r[2], r[4]) for r in rows} == {("ci", a["name"]), ("docs", "all")}
    assert backend.wsctl("vault", "list", "--json", "id", env=env).json["credentials"] == [{"id": a["id"]}]
    assert backend.wsctl("vault", "token", a["name"], "--reason", "r", "--format", "json", env=env).json["apiKey"] \
        == "sk-a"
    for ref in (b["name"], b["id"]):
        r = backend.wsctl("vault", "token", ref, "--reason", "r", env=env, expect=5)
        assert "that you can see" in one_error_line(r)
    r = backend.wsctl("vault", "connect", "stripe", "--no-open", input="sk-new\n", env=env, expect=4)
    assert "limited to named credentials" in one_error_line(r)
    assert len(backend.ok("GET", "/v1/credentials")["credentials"]) == 3   # nothing connected
    r = backend.wsctl("keys", "create", "--kind", "personal", "--scope", "projects:manage", "--credential", a["name"],
                      expect=7)
    assert "personal key reaches no credential" in one_error_line(r)
    r = backend.wsctl("keys", "create", "--kind", "platform", "--scope", "vault:token", "--credential", "stripe-zzz",
                      expect=5)
    assert "stripe-zzz" in one_error_line(r)
    assert backend.ok("GET", f"/v1/credentials/{b['id']}/access-log")["entries"] == []


def test_a_workspace_from_before_m024_opens_with_its_keys_unlimited(workspace):
    """m024 adds the limit column: a workspace made without it opens, and its keys reach as before."""
    import sqlite3

    from tests.conftest import make_backend

    b = make_backend("local", workspace, workspace.parent / "home-old")
    try:
        old_key = b.key("platform", ["vault:read"])
    finally:
        b.close()
    con = sqlite3.connect(workspace / "workspace.db")
    con.execute("ALTER TABLE secrets DROP COLUMN credential_ids")
    con.execute("DELETE FROM migrations WHERE name = 'm024_key_credentials'")
    con.commit()
    con.close()
    b = make_backend("local", workspace, workspace.parent / "home-old")   # opening applies m024
    try:
        assert [k["credentials"] for k in b.ok("GET", "/v1/keys")["keys"]] == [None]
        assert b.ok("GET", "/v1/credentials", secret=old_key)["credentials"] == []
    finally:
        b.close()
