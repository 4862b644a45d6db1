"""Issue 15 item 1 and issue 14 items 2-3 at call time: a catalog change must not send secrets elsewhere.

The attack: an admin re-imports an OAuth service with its tokenUrl (or revokeUrl, baseUrl with the
probe, auth placement, authorizeUrl) pointed at a listener of theirs; the next refresh would POST
every member's refresh token and the client secret there. The listener must never hear anything.
"""
from __future__ import annotations

import json

import pytest

from tests.catalog.test_catalog_import import connection_recorder
from tests.conftest import workspace_db
from tests.vault_helpers import install_service, make_credential, member_with_session, oauth_credential, token


def redirected(provider, listener: str, field: str) -> str:
    """The definition as the attacker re-imports it: one destination moved (no client secret: it is sealed)."""
    text = provider.service_toml("loopcrm", client_secret=False)
    if field == "tokenUrl":
        return text.replace(f'tokenUrl = "{provider.url}/token"', f'tokenUrl = "{listener}/token"')
    if field == "revokeUrl":
        return text.replace(f'revokeUrl = "{provider.url}/revoke"', f'revokeUrl = "{listener}/revoke"')
    if field == "authorizeUrl":
        return text.replace(f'authorizeUrl = "{provider.url}/authorize"', f'authorizeUrl = "{listener}/authorize"')
    if field == "baseUrl":
        return text.replace(f'baseUrl = "{provider.url}"', f'baseUrl = "{listener}"')
    assert field == "auth"
    return text.replace("[oauth2]", 'auth = { type = "query", name = "token" }\n[oauth2]')


def history(backend, secret=None) -> list:
    return backend.ok("GET", "/v1/admin/catalog/history", secret=secret, query={"service": "loopcrm"})["changes"]


def test_an_admin_cannot_redirect_secrets_and_the_owner_forces_without_leaking(backend, provider):
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    owner_cred, _ = oauth_credential(backend, provider, expires_in=10)          # due for refresh
    member, _ = member_with_session(backend, "mo@example.com")
    member_cred, _ = oauth_credential(backend, provider, expires_in=10, owner_id=member["id"])
    _admin, admin_token = member_with_session(backend, "ada@example.com", role="admin")
    before = backend.ok("GET", "/v1/integrations/loopcrm")
    with connection_recorder() as (port, hits):
        listener = f"http://127.0.0.1:{port}"
        for field in ("tokenUrl", "revokeUrl", "authorizeUrl", "baseUrl", "auth"):
            body = {"content": redirected(provider, listener, field), "filename": "loopcrm.toml"}
            r = backend.api("POST", "/v1/admin/catalog", body, secret=admin_token)
            assert (r.status, r.code) == (409, "conflict"), (field, r.body)
            assert r.body["error"]["detail"] == {"credentials": 2, "pendingConnections": 0, "changed": [field]}
            assert "2 credentials" in r.body["error"]["message"]
            r = backend.api("POST", "/v1/admin/catalog", {**body, "force": True}, secret=admin_token)
            assert (r.status, r.code) == (403, "forbidden"), (field, r.body)   # admin is not enough
        assert backend.ok("GET", "/v1/integrations/loopcrm") == before
        # the CLI door: conflict exits 6, an admin's --force 4
        f = backend.workspace.parent / "loopcrm.toml"
        f.write_text(redirected(provider, listener, "tokenUrl"))
        admin_env = backend.env_for(admin_token)
        r = backend.wsctl("catalog", "import", f, env=admin_env, expect=6)
        assert "2 credentials" in r.err and "--force" in r.err
        backend.wsctl("catalog", "import", f, "--force", env=admin_env, expect=4)
        # the credentials still refresh at the real provider
        assert token(backend, owner_cred["id"]).status == 200
        assert provider.refreshes == 1
        # the owner forces: every credential needs reconnecting, its secrets erased, nothing sent
        r = backend.wsctl("catalog", "import", f, "--force", "--json")
        assert r.json["created"] is False
        for cred in (owner_cred, member_cred):
            assert backend.ok("GET", f"/v1/credentials/{cred['id']}", secret=None if cred is owner_cred else
                              backend.session(member["id"]))["status"] == "needs_reconnect"
        r = token(backend, owner_cred["id"])
        assert (r.status, r.code) == (502, "upstream_failed") and "reconnect" in r.body["error"]["message"]
        assert backend.ok("POST", f"/v1/vault/credentials/{owner_cred['id']}/sync")["status"] == "needs_reconnect"
        assert backend.api("DELETE", f"/v1/vault/credentials/{owner_cred['id']}").status == 204
        assert hits == []
    assert provider.refreshes == 1 and provider.revoked == []
    detail = backend.ok("GET", "/v1/integrations/loopcrm")
    assert detail["tokenUrl"] == f"{listener}/token" and detail["oauthClientConfigured"] is False  # secret dropped
    changes = history(backend)
    assert len(changes) == 1   # refused attempts change nothing, so they are not changes
    entry = changes[0]
    assert entry["membershipId"] == backend.owner["id"] and entry["action"] == "replace" and entry["forced"]
    assert entry["credentialsReset"] == 2
    fields = {c["field"]: c for c in entry["changes"]}
    assert fields["tokenUrl"] == {"field": "tokenUrl", "from": f"{provider.url}/token", "to": f"{listener}/token"}
    assert fields["oauthClientSecret"] == {"field": "oauthClientSecret", "from": "set", "to": None}
    assert provider.client_secret not in json.dumps(changes)
    r = backend.wsctl("catalog", "history", "--service", "loopcrm")
    assert "tokenUrl" in r.out and "forced: 2 credentials reset" in r.out


def test_history_is_for_owners_and_admins(backend, provider):
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    backend.ok("POST", "/v1/admin/catalog", {"content": provider.service_toml("loopcrm", name="Loop Two", client_secret=False),
                                             "filename": "l.toml"})
    backend.api("DELETE", "/v1/admin/catalog/loopcrm")
    actions = [(c["action"], [x["field"] for x in c["changes"]]) for c in history(backend)]
    assert actions == [("delete", []), ("replace", ["name"])]
    _, member_token = member_with_session(backend, "m@example.com")
    r = backend.api("GET", "/v1/admin/catalog/history", secret=member_token)
    assert (r.status, r.code) == (403, "forbidden")
    key = backend.key("platform", ["docs:read", "vault:read"])
    assert backend.api("GET", "/v1/admin/catalog/history", secret=key).code == "insufficient_scope"


def test_a_move_without_credentials_is_allowed_and_drops_the_client_secret(backend, provider):
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    with connection_recorder() as (port, hits):
        text = redirected(provider, f"http://127.0.0.1:{port}", "tokenUrl")
        r = backend.api("POST", "/v1/admin/catalog", {"content": text, "filename": "l.toml"})
        assert r.status == 200 and r.body["integration"]["oauthClientConfigured"] is False
        assert hits == []


# --- the call-time guards -------------------------------------------------------------------

def _set_setup(workspace, service: str, **changes) -> None:
    """Test setup only: a catalog row as an older version (before the import rules) may hold it."""
    con = workspace_db(workspace)
    row = con.execute("SELECT setup_json, env_vars_json FROM integrations WHERE service = ?", (service,)).fetchone()
    setup = {**json.loads(row[0]), **{k: v for k, v in changes.items() if k != "envVars"}}
    env = changes.get("envVars", json.loads(row[1]))
    con.execute("UPDATE integrations SET setup_json = ?, env_vars_json = ? WHERE service = ?",
                (json.dumps(setup), json.dumps(env), service))
    con.commit()
    con.close()


@pytest.mark.parametrize("token_url", ["http://2852039166/token", "http://169.254.169.254/token",
                                       "http://[fe80::1]/token", "http://metadata.google.internal/token"])
def test_a_refresh_never_calls_a_metadata_address_in_the_catalog(backend, provider, token_url):
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    cred, _ = oauth_credential(backend, provider, expires_in=10)
    _set_setup(backend.workspace, "loopcrm", tokenUrl=token_url)
    r = token(backend, cred["id"])
    assert (r.status, r.code) == (409, "conflict") and "Nothing was sent" in r.body["error"]["message"], r.body
    _set_setup(backend.workspace, "loopcrm", tokenUrl=f"{provider.url}/token")
    assert token(backend, cred["id"]).status == 200   # no back-off was recorded: the catalog's fault
    assert provider.refreshes == 1


def test_a_probe_filled_from_a_members_field_never_reaches_metadata(backend, provider):
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    toml = ('service = "inst"\nname = "Inst"\ncredentialType = "apiKey"\nfields = ["instanceUrl"]\n'
            'baseUrl = "{instanceUrl}/api"\nprobe = "me"\n[[operations]]\nname = "me"\nmethod = "GET"\npath = "/me"\n')
    install_service(backend.workspace, toml)
    cred = make_credential(backend.workspace, backend.owner["id"], "inst", {"apiKey": "k-CANARY-1"},
                           {"instanceUrl": "http://0xa9fea9fe"})
    r = backend.api("POST", f"/v1/vault/credentials/{cred['id']}/sync")
    assert (r.status, r.code) == (409, "conflict") and "169.254.169.254" in r.body["error"]["message"], r.body
    r = backend.wsctl("vault", "sync", cred["id"], expect=6)
    assert "Refused to call" in r.err


@pytest.mark.parametrize("var", ["LD_PRELOAD", "PATH", "lower_case"])
def test_injection_refuses_a_hijacking_name_held_by_an_old_catalog_row(backend, var):
    install_service(backend.workspace, 'service = "envsvc"\nname = "E"\ncredentialType = "apiKey"\n'
                                       'envVars = { apiKey = "ENVSVC_KEY" }\n')
    cred = make_credential(backend.workspace, backend.owner["id"], "envsvc", {"apiKey": "k-CANARY-2"})
    _set_setup(backend.workspace, "envsvc", envVars={"apiKey": var})
    for args in (("vault", "env", cred["id"], "--reason", "r"), ("vault", "token", cred["id"], "--reason", "r",
                                                                "--format", "env"),
                 ("vault", "run", cred["id"], "--reason", "r", "--", "true")):
        r = backend.wsctl(*args, expect=7)
        assert "Nothing was issued" in r.err and "k-CANARY-2" not in r.out + r.err, (args, r.err)
    entries = backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"]
    assert entries == []
