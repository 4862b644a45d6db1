"""The hosted connect pages in a real headless Chromium (Debian's `chromium`, driven by the
`playwright` package with `executable_path`), on both backends: remote, the backend's
`wsctl serve`; local, the loopback server `wsctl vault connect` runs (tests/connect_helpers.py).

One browser per backend, with a fresh profile, walks: another member's refusal, the apiKey form
(HttpOnly SameSite=Lax cookie, password input, CSRF token, a cross-origin post refused), then
the OAuth redirect chain (authorize URL with state + PKCE S256, callback, code exchange), a
forged state and a replayed callback. Where Chromium or playwright is missing the test skips and
says which and how to install it.
"""
from __future__ import annotations

import urllib.parse

import pytest

from tests.connect_helpers import credential_ids, path_of
from tests.vault_helpers import APIKEY_TOML, canary_scan, install_service, member_with_session, token  # noqa: F401

pytestmark = pytest.mark.usefixtures("canary_scan")

def redirect_chain(response) -> list[str]:
    urls, req = [], response.request
    while req is not None:
        urls.append(req.url)
        req = req.redirected_from
    return urls[::-1]


def test_connect_pages_in_headless_chromium(backend, door, provider, chromium):
    install_service(backend.workspace, APIKEY_TOML.format(base=provider.url))
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    provider.api_keys.add("sk-CANARY-chromium")  # keysvc's probe checks the key before connecting
    page = chromium.pages[0] if chromium.pages else chromium.new_page()

    # Another member signed in on this browser: a page that says so, no form, nothing changes.
    c = door.connect("keysvc")
    link_path = path_of(c["connectUrl"])
    _, bob = member_with_session(backend, "bob@example.com")
    resp = page.goto(door.signin_link(link_path, session=bob))
    assert resp.status == 403 and "belongs to another member" in page.inner_text("body")
    assert page.locator("form").count() == 0

    # The creator signs in (the cookie is replaced): the form, behind an HttpOnly SameSite=Lax cookie.
    resp = page.goto(door.signin_link(link_path))
    assert resp.status == 200 and page.url == c["connectUrl"]
    assert page.title().startswith("Connect Key Service")
    (cookie,) = [k for k in chromium.cookies() if k["name"] == "wsctl_web"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    assert page.evaluate("document.cookie") == "", "scripts cannot read the web session"
    assert page.get_attribute("input[name=apiKey]", "type") == "password"
    assert page.get_attribute("input[name=instanceUrl]", "type") == "text"
    assert page.input_value("input[name=csrf]")

    # A tampered CSRF token: refused, nothing changes.
    page.fill("input[name=apiKey]", "sk-CANARY-chromium-forged")
    page.fill("input[name=instanceUrl]", "https://forged.example")
    page.evaluate("document.querySelector('input[name=csrf]').value = 'A'.repeat(43)")
    with page.expect_navigation() as nav:
        page.click("button[type=submit]")
    assert nav.value.status == 403 and "does not match" in page.inner_text("body")
    assert door.status(c["id"])["status"] == "pending"

    # Another origin (the provider's, same site: the cookie is sent) auto-posting to the link: refused.
    attack = provider.url + "/attack"
    chromium.route(attack, lambda route: route.fulfill(status=200, content_type="text/html", body=(
        f'<form id="f" method="post" action="{c["connectUrl"]}"><input name="apiKey" value="sk-CANARY-evil">'
        '<input name="instanceUrl" value="https://evil.example"></form>'
        '<script>document.getElementById("f").submit()</script>')))
    with page.expect_response(lambda r: r.url == c["connectUrl"] and r.request.method == "POST") as posted:
        page.goto(attack)
    assert posted.value.status == 403
    page.wait_for_load_state()
    assert "another site" in page.inner_text("body")
    assert door.status(c["id"])["status"] == "pending" and credential_ids(door) == []

    # The real form, typed and submitted.
    page.goto(c["connectUrl"])
    page.fill("input[name=apiKey]", "sk-CANARY-chromium")
    page.fill("input[name=instanceUrl]", "https://acme.example")
    with page.expect_navigation() as nav:
        page.click("button[type=submit]")
    assert nav.value.status == 200 and "Connected. You can close this tab." in page.inner_text("body")
    assert "sk-CANARY-chromium" not in page.content()
    got = door.status(c["id"])
    assert got["status"] == "connected"
    assert token(backend, got["credentialId"]).body == {"apiKey": "sk-CANARY-chromium",
                                                        "instanceUrl": "https://acme.example"}
    resp = page.goto(c["connectUrl"])
    assert resp.status == 410 and "already used" in page.inner_text("body")

    # OAuth: sign-in link -> connect page -> provider's authorize (state, PKCE) -> callback -> connected.
    o = door.connect("loopcrm")
    resp = page.goto(door.signin_link(path_of(o["connectUrl"])))
    assert resp.status == 200 and "Connected. You can close this tab." in page.inner_text("body")
    chain = redirect_chain(resp)
    assert [urllib.parse.urlsplit(u).path for u in chain] == [
        urllib.parse.urlsplit(chain[0]).path, path_of(o["connectUrl"]), "/authorize", "/connect/callback"]
    authorize, callback = chain[2], chain[3]
    assert authorize.startswith(provider.url + "/authorize?")
    q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(authorize).query))
    assert q["client_id"] == provider.client_id and q["response_type"] == "code"
    assert q["redirect_uri"] == door.base_url + "/connect/callback"
    assert q["code_challenge_method"] == "S256" and len(q["code_challenge"]) == 43 and len(q["state"]) >= 32
    assert callback.startswith(door.base_url + "/connect/callback?")
    assert dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(callback).query))["state"] == q["state"]
    assert provider.exchanges == 1  # the provider checked the PKCE verifier against the challenge
    got = door.status(o["id"])
    assert got["status"] == "connected"
    assert token(backend, got["credentialId"]).body["accessToken"] == provider.issued[-1]["access_token"]

    # A forged state and the replayed callback: pages that say so, nothing changes.
    resp = page.goto(door.base_url + "/connect/callback?code=code-forged&state=" + "S" * 43)
    assert resp.status == 400 and "does not match any connection" in page.inner_text("body")
    resp = page.goto(callback)
    assert resp.status == 410 and "already used" in page.inner_text("body")
    assert provider.exchanges == 1
    assert sorted(credential_ids(door)) == sorted([door.status(c["id"])["credentialId"], got["credentialId"]])
