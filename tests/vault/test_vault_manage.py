"""Manage routes: editable fields, replace a hand-entered key, sync (probe/refresh), delete (revoke)."""
from __future__ import annotations

import json

import pytest

from tests.vault_helpers import (
    APIKEY_TOML,
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    make_credential,
    member_with_session,
    oauth_credential,
    token,
)

pytestmark = pytest.mark.usefixtures("canary_scan")


@pytest.fixture
def keycred(backend, provider):
    install_service(backend.workspace, APIKEY_TOML.format(base=provider.url))
    provider.api_keys.add("sk-CANARY-good")
    return make_credential(backend.workspace, backend.owner["id"], "keysvc", {"apiKey": "sk-CANARY-good"},
                           {"instanceUrl": "https://one.example"})


@pytest.fixture
def loopcrm(backend, provider):
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    return "loopcrm"


def test_editable_fields_show_values_and_secret_shape_only(backend, keycred):
    r = backend.api("GET", f"/v1/vault/credentials/{keycred['id']}/editable-fields")
    assert r.status == 200
    assert r.body == {"fields": {"instanceUrl": "https://one.example"},
                      "secretFields": [{"name": "apiKey", "set": True}]}


def test_editable_fields_of_oauth_credential(backend, provider, loopcrm):
    cred, grant = oauth_credential(backend, provider)
    r = backend.api("GET", f"/v1/vault/credentials/{cred['id']}/editable-fields")
    assert r.body["secretFields"] == [{"name": "accessToken", "set": True}, {"name": "refreshToken", "set": True}]
    assert grant["access_token"] not in json.dumps(r.body)


def test_replace_key_keeps_the_id(backend, keycred):
    r = backend.api("PUT", f"/v1/vault/credentials/{keycred['id']}/data",
                    {"apiKey": "sk-CANARY-new", "instanceUrl": "https://two.example"})
    assert r.status == 200, r.body
    assert r.body["id"] == keycred["id"] and r.body["fields"] == {"instanceUrl": "https://two.example"}
    assert "sk-CANARY-new" not in json.dumps(r.body)
    t = token(backend, keycred["id"])
    assert t.body == {"apiKey": "sk-CANARY-new", "instanceUrl": "https://two.example"}
    assert [c["id"] for c in backend.api("GET", "/v1/credentials").body["credentials"]] == [keycred["id"]]


@pytest.mark.parametrize("body", [None, {}, {"apiKey": ""}, {"apiKey": 3}, {"refreshToken": "x"},
                                  {"instanceUrl": "https://x.example"}, {"nope": "x"}, ["apiKey"]])
def test_replace_key_body_rules(backend, keycred, body):
    r = backend.api("PUT", f"/v1/vault/credentials/{keycred['id']}/data", body)
    assert r.status == 400 and r.code == "invalid_request", r.body
    assert token(backend, keycred["id"]).body["apiKey"] == "sk-CANARY-good"


def test_replace_key_refused_for_oauth(backend, provider, loopcrm):
    cred, _ = oauth_credential(backend, provider)
    r = backend.api("PUT", f"/v1/vault/credentials/{cred['id']}/data", {"accessToken": "x"})
    assert r.status == 400 and "wsctl vault connect loopcrm" in r.body["error"]["message"]


def test_sync_api_key_probes_the_provider(backend, provider, keycred):
    r = backend.api("POST", f"/v1/vault/credentials/{keycred['id']}/sync")
    assert r.status == 200, r.body
    assert r.body["status"] == "ok" and r.body["syncedAt"]
    assert ("GET", "/probe") in provider.requests
    provider.api_keys.clear()  # the provider no longer accepts the key
    r = backend.api("POST", f"/v1/vault/credentials/{keycred['id']}/sync")
    assert r.body["status"] == "invalid"
    assert backend.api("GET", "/v1/credentials").body["credentials"][0]["status"] == "invalid"
    provider.api_keys.add("sk-CANARY-fixed")
    backend.api("PUT", f"/v1/vault/credentials/{keycred['id']}/data", {"apiKey": "sk-CANARY-fixed"})
    assert backend.api("POST", f"/v1/vault/credentials/{keycred['id']}/sync").body["status"] == "ok"


def test_sync_with_unreachable_probe_is_502(backend, provider, keycred):
    provider.close()
    r = backend.api("POST", f"/v1/vault/credentials/{keycred['id']}/sync")
    assert r.status == 502 and r.code == "upstream_failed"


def test_sync_oauth_refreshes_and_probes(backend, provider, loopcrm):
    cred, _grant = oauth_credential(backend, provider, expires_in=3600)
    r = backend.api("POST", f"/v1/vault/credentials/{cred['id']}/sync")
    assert r.status == 200, r.body
    assert provider.refreshes == 1 and r.body["status"] == "ok" and r.body["syncedAt"]
    assert token(backend, cred["id"]).body["accessToken"] == provider.issued[-1]["access_token"]
    provider.mode = "invalid_grant"
    r = backend.api("POST", f"/v1/vault/credentials/{cred['id']}/sync")
    assert r.status == 200 and r.body["status"] == "needs_reconnect"
    assert token(backend, cred["id"]).status == 502


def test_delete_revokes_at_the_provider(backend, provider, loopcrm):
    cred, grant = oauth_credential(backend, provider)
    r = backend.api("DELETE", f"/v1/vault/credentials/{cred['id']}")
    assert r.status == 204 and r.body is None
    assert grant["refresh_token"] in provider.revoked and grant["access_token"] in provider.revoked
    assert backend.api("GET", f"/v1/credentials/{cred['id']}").status == 404
    assert backend.api("DELETE", f"/v1/vault/credentials/{cred['id']}").status == 404


def test_delete_keeps_the_credential_when_revocation_fails(backend, provider, loopcrm):
    cred, _ = oauth_credential(backend, provider)
    provider.close()
    r = backend.api("DELETE", f"/v1/vault/credentials/{cred['id']}")
    assert r.status == 502 and "--force" in r.body["error"]["message"]
    assert backend.api("GET", f"/v1/credentials/{cred['id']}").status == 200
    r = backend.api("DELETE", f"/v1/vault/credentials/{cred['id']}", query={"force": "true"})
    assert r.status == 204
    assert backend.api("GET", f"/v1/credentials/{cred['id']}").status == 404


def test_delete_api_key_credential_without_revoke_url(backend, keycred):
    bob, bob_s = member_with_session(backend, "bob@example.com")
    backend.api("PUT", f"/v1/credentials/{keycred['id']}/sharing", {"membershipId": bob["id"], "role": "user"})
    assert backend.api("DELETE", f"/v1/vault/credentials/{keycred['id']}", secret=bob_s).status == 403
    assert backend.api("DELETE", f"/v1/vault/credentials/{keycred['id']}").status == 204
    assert backend.api("GET", "/v1/credentials", secret=bob_s).body["credentials"] == []


def test_manage_routes_need_vault_manage_on_a_platform_key(backend, keycred):
    read_only = backend.key("platform", ["vault:read", "vault:token"])
    for method, path in [("GET", f"/v1/vault/credentials/{keycred['id']}/editable-fields"),
                         ("POST", f"/v1/vault/credentials/{keycred['id']}/sync"),
                         ("DELETE", f"/v1/vault/credentials/{keycred['id']}")]:
        r = backend.api(method, path, secret=read_only)
        assert r.status == 403 and r.code == "insufficient_scope"
    manager = backend.key("platform", ["vault:manage"])
    assert backend.api("GET", f"/v1/vault/credentials/{keycred['id']}/editable-fields", secret=manager).status == 200


BASIC_TOML = """
service = "basicsvc"
name = "Basic SMS"
description = "Account id (non-secret) plus auth token, presented with HTTP Basic, like Twilio."
credentialType = "apiKey"
envVars = {{ accountSid = "BASIC_ACCOUNT_SID", authToken = "BASIC_AUTH_TOKEN" }}
fields = ["accountSid"]
secretFields = ["authToken"]
baseUrl = "{base}"
probe = "get-account"
auth = {{ type = "basic", username = "accountSid", password = "authToken" }}
[[operations]]
name = "get-account"
summary = "The account"
method = "GET"
path = "/probe/Accounts/{{AccountSid}}.json"
"""


def test_basic_auth_probe_with_path_placeholder_and_usable_fields(backend, provider):
    install_service(backend.workspace, BASIC_TOML.format(base=provider.url))
    provider.api_keys.add("tok-CANARY-basic")
    cred = make_credential(backend.workspace, backend.owner["id"], "basicsvc", {"authToken": "tok-CANARY-basic"},
                           {"accountSid": "AC123"})
    assert token(backend, cred["id"]).body == {"accountSid": "AC123", "authToken": "tok-CANARY-basic"}
    r = backend.api("POST", f"/v1/vault/credentials/{cred['id']}/sync")
    assert r.status == 200 and r.body["status"] == "ok"
    assert ("GET", "/probe/Accounts/AC123.json") in provider.requests
    provider.api_keys.clear()
    assert backend.api("POST", f"/v1/vault/credentials/{cred['id']}/sync").body["status"] == "invalid"


def test_probe_without_auth_table_cannot_mark_a_key_invalid(backend, provider):
    toml = APIKEY_TOML.format(base=provider.url).replace('auth = { type = "bearer" }\n', "")
    assert "auth =" not in toml
    install_service(backend.workspace, toml)
    cred = make_credential(backend.workspace, backend.owner["id"], "keysvc", {"apiKey": "sk-CANARY-unknown"})
    r = backend.api("POST", f"/v1/vault/credentials/{cred['id']}/sync")
    assert r.status == 200 and r.body["status"] == "ok" and r.body["syncedAt"]
    assert ("GET", "/probe") in provider.requests, "the probe ran; its 401 proves nothing without [auth]"
