"""The vault against a real OAuth 2 authorization server (issue 25): Authlib's, on Flask, started
once per session on 127.0.0.1 (tests/authlib_provider.py), on every door.

- A client registered for HTTP Basic only, one for POST fields only, and a public PKCE client
  (`none`) each connect (code + PKCE), refresh (Authlib rotates the refresh token and retires the
  old one), have their token accepted by the provider's protected resource, and, once the user
  revokes the app at the provider, get `invalid_grant` -> needs_reconnect; deleting the credential
  then revokes at the provider (RFC 7009), authenticated the client's way.
- A burst of 20 token requests on an expired credential, over two replicas (or threads in
  process), causes exactly one refresh at the provider, for 3-second and one-hour tokens.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.conftest import base_env, serve, wait_until, workspace_db
from tests.connect_helpers import path_of
from tests.vault_helpers import (
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    token,
)
from workspacectl import clock

pytestmark = pytest.mark.usefixtures("canary_scan")


def _me(server, access_token: str) -> int:
    return httpx.get(f"{server.url}/api/me", headers={"Authorization": f"Bearer {access_token}"},
                     trust_env=False).status_code


def _connect(door, server, client, service: str) -> str:
    """Connect `service` through the provider's sign-in; answers the credential id."""
    install_service(door.backend.workspace, server.service_toml(service, client))
    c = door.connect(service)
    _, page = door.browser(path_of(c["connectUrl"]))
    assert page.status_code == 200 and "Connected" in page.text, page.text[:300]
    got = door.status(c["id"])
    assert got["status"] == "connected", got
    return got["credentialId"]


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "none"])
def test_connect_refresh_rotate_revoke_with_each_client_authentication(backend, door, authlib_server, method):
    server = authlib_server
    client = server.register_client(method, lifetime=3600)
    cred = _connect(door, server, client, "authlib-crm")
    assert client.grants == [("authorization_code", method)]
    first = token(backend, cred).body["accessToken"]
    assert _me(server, first) == 200
    first_refresh = next(t.refresh_token for t in server.by_access.values() if t.access_token == first)

    r = backend.api("POST", f"/v1/vault/credentials/{cred}/sync")   # a refresh now (and the probe)
    assert r.status == 200 and r.body["status"] == "ok", r.body
    assert client.refresh_attempts == 1 and client.grants[-1] == ("refresh_token", method)
    second = token(backend, cred).body["accessToken"]
    assert second != first and _me(server, second) == 200
    assert server.refresh_state(first_refresh) == "revoked"   # rotated: the old refresh token is retired

    server.revoke_grant(client)   # the user revokes the app at the provider
    assert _me(server, second) == 401
    r = backend.api("POST", f"/v1/vault/credentials/{cred}/sync")
    assert r.status == 200 and r.body["status"] == "needs_reconnect", r.body
    assert client.refresh_attempts == 2 and client.grants[-1][0] == "refresh_token"   # refused: nothing issued
    detail = backend.ok("GET", f"/v1/credentials/{cred}")
    assert detail["statusReason"] == "the provider refused its grant"
    refused = token(backend, cred)
    assert refused.status == 502 and f"--reconnect {cred}" in refused.body["error"]["message"]

    assert backend.api("DELETE", f"/v1/vault/credentials/{cred}").status == 204
    assert client.revocations and set(client.revocations) == {method}   # RFC 7009, the client's own way


# 3 s, not 2: the token's expiry is kept to the second, so a "2 s" token may have only a second left
# when stored, and a burst on a loaded machine could then see it expire (a second refresh, rightly).
@pytest.mark.parametrize("lifetime", [3, 3600], ids=["3s-tokens", "1h-tokens"])
def test_a_burst_over_two_replicas_refreshes_once_at_the_provider(backend, door, authlib_server, lifetime):
    server = authlib_server
    client = server.register_client("client_secret_basic", lifetime=lifetime)
    cred = _connect(door, server, client, "authlib-burst")
    if lifetime > 60:   # a long token: mark it expired here rather than wait an hour
        con = workspace_db(backend.workspace)
        con.execute("UPDATE credentials SET expires_at = ? WHERE id = ?", (clock.later(-5), cred))
        con.close()
    else:               # a short one: wait until it has expired
        end = clock.parse_iso(backend.ok("GET", f"/v1/credentials/{cred}")["expiresAt"])
        wait_until(lambda: clock.now() >= end, "the short token did not expire")
    n = 20
    if backend.kind == "remote":
        with serve(backend.workspace, base_env(backend.workspace.parent / "second-home")) as second:
            urls = [backend.base_url, second]
            clients = [httpx.Client(trust_env=False, base_url=u, timeout=60) for u in urls]
            barrier = threading.Barrier(n)

            def one(i):
                barrier.wait()
                r = clients[i % 2].post(f"/v1/credentials/{cred}/token", json={"reason": f"burst {i}"},
                                        headers={"Authorization": f"Bearer {backend.owner_token}"})
                return r.status_code, r.json()

            try:
                with ThreadPoolExecutor(n) as pool:
                    answers = list(pool.map(one, range(n)))
            finally:
                for c in clients:
                    c.close()
    else:
        barrier = threading.Barrier(n)

        def one(i):
            barrier.wait()
            r = token(backend, cred, reason=f"burst {i}")
            return r.status, r.body

        with ThreadPoolExecutor(n) as pool:
            answers = list(pool.map(one, range(n)))
    assert [s for s, _ in answers] == [200] * n, answers[:2]
    assert client.refresh_attempts == 1
    assert [g for g, _ in client.grants] == ["authorization_code", "refresh_token"]
    handed = {b["accessToken"] for _, b in answers}
    assert len(handed) == 1
    assert server.by_access[handed.pop()].refresh_token is not None   # the token the one refresh issued


def test_import_takes_the_client_authentication_from_the_issuers_metadata(backend, authlib_server):
    """A definition naming its `issuer` and no `clientAuth`: `catalog import` reads the issuer's
    RFC 8414 metadata (token_endpoint_auth_methods_supported); an explicit clientAuth wins, and an
    issuer that cannot be read leaves the default. The client then connects as the metadata says."""
    server = authlib_server
    client = server.register_client("client_secret_basic")
    text = server.service_toml("authlib-meta", client, client_auth=False, issuer=True)
    server.metadata_methods = ["client_secret_basic", "none"]
    r = backend.api("POST", "/v1/admin/catalog", {"content": text, "format": "toml"})
    assert r.status == 201 and r.body["integration"]["clientAuth"] == "client_secret_basic", r.body
    assert r.body["integration"]["issuer"] == server.url
    server.metadata_methods = ["client_secret_post", "client_secret_basic"]
    r = backend.api("POST", "/v1/admin/catalog", {"content": text, "format": "toml"})
    assert r.status == 200 and r.body["integration"]["clientAuth"] == "client_secret_post"
    explicit = text.replace("[oauth2]\n", '[oauth2]\nclientAuth = "client_secret_basic"\n')
    r = backend.api("POST", "/v1/admin/catalog", {"content": explicit, "format": "toml"})
    assert r.status == 200 and r.body["integration"]["clientAuth"] == "client_secret_basic"
    unreadable = text.replace(f'issuer = "{server.url}"', 'issuer = "http://127.0.0.1:9"')
    r = backend.api("POST", "/v1/admin/catalog", {"content": unreadable, "format": "toml"})
    assert r.status == 200 and r.body["integration"]["clientAuth"] == "client_secret_post"
    server.metadata_methods = ["client_secret_basic"]
    backend.ok("POST", "/v1/admin/catalog", {"content": text, "format": "toml"})
    assert backend.ok("GET", "/v1/integrations/authlib-meta")["clientAuth"] == "client_secret_basic"
