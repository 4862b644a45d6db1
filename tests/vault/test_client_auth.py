"""Client authentication per definition (issue 25): the code exchange, the refresh and the
revocation authenticate the client as the definition's `[oauth2] clientAuth` says, with a form or
a JSON body as `tokenBodyEncoding` says, on every door. The loopback provider accepts only the
one method (and body) it is set to, so a wrong one fails there, not here.
"""
from __future__ import annotations

import pytest

from tests.connect_helpers import path_of
from tests.vault_helpers import (
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
)

pytestmark = pytest.mark.usefixtures("canary_scan")

# (definition's clientAuth, its tokenBodyEncoding, what the provider accepts, how the calls arrive).
# Basic and post with a form, and a public PKCE client, are also run against a real server
# (Authlib, tests/vault/test_authlib_provider.py), which takes no JSON body: Notion's way is here.
CASES = {
    "basic-json": ("client_secret_basic", "json", "basic", "json"),   # Notion
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_exchange_refresh_and_revoke_authenticate_as_the_definition_says(backend, door, provider, case):
    client_auth, body, accepts, encoding = CASES[case]
    provider.client_auth, provider.body_encoding = accepts, encoding
    install_service(backend.workspace, provider.service_toml("loopcrm", client_auth=client_auth, token_body=body,
                                                             client_secret=client_auth != "none"))
    detail = door.ok("GET", "/v1/integrations/loopcrm")
    assert (detail["clientAuth"], detail["tokenBodyEncoding"]) == (client_auth, body or "form")
    assert detail["oauthClientConfigured"] is True
    c = door.connect("loopcrm")
    _, page = door.browser(path_of(c["connectUrl"]))
    assert page.status_code == 200, page.text[:300]
    got = door.status(c["id"])
    assert got["status"] == "connected" and provider.exchanges == 1
    cred = got["credentialId"]
    r = door.api("POST", f"/v1/vault/credentials/{cred}/sync")
    assert r.status == 200 and r.body["status"] == "ok", r.body
    assert provider.refreshes == 1
    issued = door.api("POST", f"/v1/credentials/{cred}/token", {"reason": "client auth"}).body
    assert issued["accessToken"] == provider.issued[-1]["access_token"]
    assert door.api("DELETE", f"/v1/vault/credentials/{cred}").status == 204
    assert provider.issued[-1]["refresh_token"] in provider.revoked
    assert [path for path, _, _ in provider.token_calls] == ["/token", "/token", "/revoke", "/revoke"]
    assert {(how, enc) for _, how, enc in provider.token_calls} == {(accepts, encoding)}


def test_a_provider_taking_only_basic_refuses_a_post_client_and_the_connection_says_why(backend, door, provider):
    provider.client_auth = "basic"
    install_service(backend.workspace, provider.service_toml("loopcrm"))   # clientAuth: the default, post
    assert door.ok("GET", "/v1/integrations/loopcrm")["clientAuth"] == "client_secret_post"
    c = door.connect("loopcrm")
    _, page = door.browser(path_of(c["connectUrl"]))
    assert page.status_code == 502, page.text[:300]
    got = door.status(c["id"])
    assert got["status"] == "failed" and "HTTP 401 (invalid_client)" in got["error"], got
    assert provider.token_calls == [("/token", "post", "form")] and provider.issued == []
    assert door.ok("GET", "/v1/credentials")["credentials"] == []
