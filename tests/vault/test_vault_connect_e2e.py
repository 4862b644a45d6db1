"""End to end through the hosted connect pages (a server is needed, so these run remote only):
OAuth connect via the loopback provider (state + PKCE), then the vault's token, refresh and
revoke on that credential; and a key rotation in the middle of a connection loses nothing.
"""
from __future__ import annotations

import urllib.parse

import httpx
import pytest

from tests.conftest import make_backend
from tests.vault_helpers import (
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    token,
)

pytestmark = pytest.mark.usefixtures("canary_scan")


@pytest.fixture
def remote(workspace, home):
    b = make_backend("remote", workspace, home)
    yield b
    b.close()


@pytest.fixture
def browser():
    """browser(backend, next_path): a browser signed in as the owner (web sign-in link), not yet on
    `next_path`; each one is closed when the test ends."""
    clients: list[httpx.Client] = []

    def signed_in(backend, next_path: str) -> httpx.Client:
        link = backend.ok("POST", "/v1/auth/web-link", {"next": next_path})
        b = httpx.Client(trust_env=False, follow_redirects=False, timeout=30)
        clients.append(b)
        r = b.get(link["url"])
        assert r.status_code in (302, 303, 307), r.text[:300]
        return b

    yield signed_in
    for b in clients:
        b.close()


def _start(backend) -> tuple[dict, str]:
    r = backend.api("POST", "/v1/connections", {"service": "loopcrm"})
    assert r.status == 201, r.body
    return r.body, urllib.parse.urlparse(r.body["connectUrl"]).path


def test_oauth_connect_then_token_refresh_and_revoke(remote, provider, browser):
    install_service(remote.workspace, provider.service_toml("loopcrm"))
    conn, path = _start(remote)
    b = browser(remote, path)
    b.follow_redirects = True
    page = b.get(remote.base_url + path)
    assert page.status_code == 200, page.text[:500]
    assert provider.exchanges == 1
    got = remote.ok("GET", f"/v1/connections/{conn['id']}")
    assert got["status"] == "connected"
    cred_id = got["credentialId"]
    detail = remote.ok("GET", f"/v1/credentials/{cred_id}")
    assert detail["credentialType"] == "oauth2" and detail["access"] == "owner"
    assert detail["scopes"] == ["contacts.read", "contacts.write"]
    first = token(remote, cred_id)
    assert first.status == 200 and first.body["accessToken"] == provider.issued[0]["access_token"]
    assert provider.refreshes == 0
    r = remote.api("POST", f"/v1/vault/credentials/{cred_id}/sync")
    assert r.status == 200 and r.body["status"] == "ok" and provider.refreshes == 1
    assert token(remote, cred_id).body["accessToken"] == provider.issued[-1]["access_token"]
    assert remote.api("DELETE", f"/v1/vault/credentials/{cred_id}").status == 204
    assert provider.issued[-1]["refresh_token"] in provider.revoked


def test_key_rotation_during_a_connection_loses_nothing(remote, provider, browser):
    install_service(remote.workspace, provider.service_toml("loopcrm"))
    conn, path = _start(remote)
    b = browser(remote, path)
    r = b.get(remote.base_url + path)  # the signed-in redirect to the connect page
    while r.status_code in (302, 303, 307) and not r.headers["location"].startswith(provider.url):
        r = b.get(urllib.parse.urljoin(str(r.url), r.headers["location"]))
    assert r.headers["location"].startswith(provider.url + "/authorize"), r.headers.get("location")
    authorize = r.headers["location"]
    # The PKCE verifier and the link are sealed now; rotate the key before the provider answers.
    rot = remote.api("POST", "/v1/admin/rotate-key")
    assert rot.status == 200 and rot.body["connections"] >= 1 and rot.body["retiredKeys"] == 1, rot.body
    b.follow_redirects = True
    done = b.get(authorize)
    assert done.status_code == 200, done.text[:500]
    got = remote.ok("GET", f"/v1/connections/{conn['id']}")
    assert got["status"] == "connected" and got["connectUrl"] == conn["connectUrl"]
    assert token(remote, got["credentialId"]).status == 200
