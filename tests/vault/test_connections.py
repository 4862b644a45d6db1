"""Connections and the hosted connect pages (CONTRACT §4), on both backends.

remote: the backend's `wsctl serve`; local: the same pages on the loopback server that
`wsctl vault connect` runs (see tests/connect_helpers.py). Browsers are httpx clients signed in
through real web sign-in links; the OAuth provider is the loopback one in tests/oauth_provider.py
(it requires PKCE S256 and checks the verifier).
"""
from __future__ import annotations

import urllib.parse

import httpx
import pytest

from tests.conftest import make_backend, serve, workspace_at_rest, workspace_db
from tests.connect_helpers import Door, credential_ids, parse_form, path_of
from tests.vault_helpers import (
    APIKEY_TOML,
    TWO_SECRET_TOML,
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    member_with_session,
    token,
)
from workspacectl.secret import sha256_hex

pytestmark = pytest.mark.usefixtures("canary_scan")

HOUR = 3600


@pytest.fixture
def keysvc(backend):
    return install_service(backend.workspace, APIKEY_TOML.format(base="http://127.0.0.1:9"))


@pytest.fixture
def loopcrm(backend, provider):
    return install_service(backend.workspace, provider.service_toml("loopcrm"))


def submit(browser: httpx.Client, page: httpx.Response, values: dict, drop=(), headers=None) -> httpx.Response:
    form = parse_form(page)
    data = {**form["inputs"], **values}
    for k in drop:
        data.pop(k, None)
    return browser.post(form["action_url"], data=data, headers=headers or {})


# --- the API ----------------------------------------------------------------------------------

def test_create_and_read_a_connection(door, keysvc):
    c = door.connect("keysvc")
    assert c["id"].startswith("conn_")
    assert c["service"] == "keysvc" and c["status"] == "pending"
    assert c["connectUrl"].startswith(door.base_url + "/connect/")
    assert len(path_of(c["connectUrl"]).rsplit("/", 1)[1]) >= 32
    from workspacectl import clock

    lifetime = (clock.parse_iso(c["expiresAt"]) - clock.parse_iso(c["createdAt"])).total_seconds()
    assert HOUR <= lifetime <= HOUR + 1
    assert door.status(c["id"]) == c
    again = door.connect("keysvc")
    assert again["id"] != c["id"] and again["connectUrl"] != c["connectUrl"]


def test_only_the_creator_reads_a_connection(backend, door, keysvc):
    c = door.connect("keysvc")
    _, bob = member_with_session(backend, "bob@example.com")
    r = door.api("GET", f"/v1/connections/{c['id']}", secret=bob)
    assert r.status == 404 and r.code == "not_found"
    assert door.api("GET", "/v1/connections/conn_doesnotexist").status == 404
    platform = backend.key("platform", ["vault:connect"])
    assert door.api("GET", f"/v1/connections/{c['id']}", secret=platform).body["id"] == c["id"]
    made = door.connect("keysvc", secret=platform)
    assert door.status(made["id"])["status"] == "pending"  # the key acts as its creator
    reader = backend.key("platform", ["vault:read"])
    assert door.api("GET", f"/v1/connections/{c['id']}", secret=reader).code == "insufficient_scope"
    personal = backend.key("personal", ["projects:manage"])
    assert door.api("POST", "/v1/connections", {"service": "keysvc"}, secret=personal).code == "insufficient_scope"


def test_platform_and_no_auth_services_have_nothing_to_connect_and_bad_bodies_are_400(door):
    for service, status in [("web-search", 400), ("platform-llm", 400), ("hacker-news", 400),
                            ("open-meteo", 400), ("no-such-service", 404)]:
        r = door.api("POST", "/v1/connections", {"service": service})
        assert r.status == status, (service, r.body)
        if status == 400:
            assert "nothing to connect" in r.body["error"]["message"]
    for body in (None, {}, {"service": ""}, {"service": 7}, ["keysvc"], {"service": "x" * 5000}):
        assert door.api("POST", "/v1/connections", body).status == 400, body


def test_local_backend_without_a_server_says_how_to_connect(workspace, home):
    # Only the local backend can lack a server: a hosted link would point nowhere.
    local = make_backend("local", workspace, home)
    try:
        install_service(workspace, APIKEY_TOML.format(base="http://127.0.0.1:9"))
        r = local.api("POST", "/v1/connections", {"service": "keysvc"})
        assert r.status == 400
        assert "wsctl vault connect" in r.body["error"]["message"]
    finally:
        local.close()


# --- expiry -----------------------------------------------------------------------------------

def test_a_connection_is_pending_at_55_minutes_and_expired_at_60_01(backend, door, keysvc, monkeypatch):
    """Five minutes of slack before the hour: a loaded machine may take a while between steps;
    after the hour, later only means more expired."""
    if backend.kind == "remote":
        # Two more servers on the same workspace, their clocks shifted; started before creating.
        with serve(backend.workspace, offset=HOUR - 5 * 60) as early, serve(backend.workspace, offset=HOUR + 1) as late:
            c = door.connect("keysvc")
            auth = {"Authorization": f"Bearer {backend.owner_token}"}
            assert httpx.get(f"{early}/v1/connections/{c['id']}", headers=auth, trust_env=False).json()["status"] == "pending"
            assert httpx.get(f"{late}/v1/connections/{c['id']}", headers=auth, trust_env=False).json()["status"] == "expired"
            assert door.status(c["id"])["status"] == "pending"
            # The link: a form before the hour (on the server whose clock is right), "expired" after it.
            for url, status in ((backend.base_url, 200), (late, 410)):
                link = httpx.post(f"{url}/v1/auth/web-link", json={"next": path_of(c["connectUrl"])},
                                  headers=auth, trust_env=False).json()["url"]
                with httpx.Client(trust_env=False, follow_redirects=True) as b:
                    page = b.get(link)
                assert page.status_code == status, page.text[:300]
                if status == 410:
                    assert "expired" in page.text
        return
    c = door.connect("keysvc")
    monkeypatch.setenv("WSCTL_NOW_OFFSET_SECONDS", str(HOUR - 5 * 60))
    assert door.status(c["id"])["status"] == "pending"
    b, page = door.browser(path_of(c["connectUrl"]))
    assert page.status_code == 200
    monkeypatch.setenv("WSCTL_NOW_OFFSET_SECONDS", str(HOUR + 1))
    assert door.status(c["id"])["status"] == "expired"
    r = submit(b, page, {"apiKey": "sk-late", "instanceUrl": "https://x.example"})
    assert r.status_code == 410 and "expired" in r.text
    assert door.status(c["id"])["status"] == "expired"
    assert credential_ids(door) == []


# --- the apiKey form --------------------------------------------------------------------------

def test_api_key_form_end_to_end(door, keysvc):
    c = door.connect("keysvc")
    b, page = door.browser(path_of(c["connectUrl"]))
    assert page.status_code == 200
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["cache-control"] == "no-store"
    assert 'Signed in as <strong class="member">Olive Owner</strong>' in page.text   # the page's who header
    form = parse_form(page)
    assert form["method"] == "post"
    assert form["types"]["apiKey"] == ("password", "off")
    assert form["types"]["instanceUrl"][0] == "text"
    assert form["inputs"]["csrf"]
    r = submit(b, page, {"apiKey": "sk-CANARY-form-1", "instanceUrl": "https://acme.example"})
    assert r.status_code == 200 and "Connected. You can close this tab." in r.text
    assert "sk-CANARY-form-1" not in r.text
    got = door.status(c["id"])
    assert got["status"] == "connected" and got["credentialId"].startswith("cred_")
    detail = door.ok("GET", f"/v1/credentials/{got['credentialId']}")
    assert detail["service"] == "keysvc" and detail["fields"] == {"instanceUrl": "https://acme.example"}
    issued = door.api("POST", f"/v1/credentials/{got['credentialId']}/token", {"reason": "connect test"})
    assert issued.body == {"apiKey": "sk-CANARY-form-1", "instanceUrl": "https://acme.example"}
    # The link is used now: both the page and a second submit say so, and nothing changes.
    again = b.get(c["connectUrl"])
    assert again.status_code == 410 and "already used" in again.text
    r2 = submit(b, page, {"apiKey": "sk-CANARY-form-2", "instanceUrl": "https://other.example"})
    assert r2.status_code == 410
    assert credential_ids(door) == [got["credentialId"]]


def test_two_secret_fields_are_both_password_inputs(backend, door):
    install_service(backend.workspace, TWO_SECRET_TOML)
    c = door.connect("twosecret")
    b, page = door.browser(path_of(c["connectUrl"]))
    form = parse_form(page)
    assert {k for k, t in form["types"].items() if t[0] == "password"} == {"accountSid", "authToken"}
    r = submit(b, page, {"accountSid": "AC-CANARY-1", "authToken": "tok-CANARY-1"})
    assert r.status_code == 200
    cred = door.status(c["id"])["credentialId"]
    assert token(backend, cred).body == {"accountSid": "AC-CANARY-1", "authToken": "tok-CANARY-1"}


def test_a_missing_value_shows_the_form_again_and_changes_nothing(door, keysvc):
    c = door.connect("keysvc")
    b, page = door.browser(path_of(c["connectUrl"]))
    r = submit(b, page, {"apiKey": "sk-CANARY-kept-out", "instanceUrl": "  "})
    assert r.status_code == 400 and "instanceUrl" in r.text
    assert "sk-CANARY-kept-out" not in r.text
    assert parse_form(r)["inputs"]["csrf"]
    assert door.status(c["id"])["status"] == "pending" and credential_ids(door) == []
    ok = submit(b, r, {"apiKey": "sk-CANARY-3", "instanceUrl": "https://acme.example"})
    assert ok.status_code == 200
    assert door.status(c["id"])["status"] == "connected"


@pytest.mark.parametrize("case", ["missing", "wrong", "other-connection", "cross-origin"])
def test_csrf_is_checked_and_a_refusal_changes_nothing(door, keysvc, case):
    c = door.connect("keysvc")
    b, page = door.browser(path_of(c["connectUrl"]))
    values = {"apiKey": "sk-CANARY-csrf", "instanceUrl": "https://acme.example"}
    if case == "missing":
        r = submit(b, page, values, drop=["csrf"])
    elif case == "wrong":
        r = submit(b, page, {**values, "csrf": "A" * 43})
    elif case == "other-connection":
        other = door.connect("keysvc")
        other_page = b.get(other["connectUrl"])
        r = submit(b, page, {**values, "csrf": parse_form(other_page)["inputs"]["csrf"]})
    else:
        r = submit(b, page, values, headers={"Origin": "https://evil.example"})
    assert r.status_code == 403, r.text[:300]
    assert "Nothing was changed" in r.text or "nothing was changed" in r.text
    assert door.status(c["id"])["status"] == "pending"
    assert credential_ids(door) == []


def test_csrf_token_of_another_browser_session_is_refused(door, keysvc):
    c = door.connect("keysvc")
    _b1, page1 = door.browser(path_of(c["connectUrl"]))
    b2, page2 = door.browser(path_of(c["connectUrl"]))  # same member, another web session
    r = submit(b2, page2, {"apiKey": "sk-x", "instanceUrl": "https://x.example",
                           "csrf": parse_form(page1)["inputs"]["csrf"]})
    assert r.status_code == 403
    assert door.status(c["id"])["status"] == "pending"


def test_another_members_cookie_is_refused_and_nothing_changes(backend, door, keysvc):
    c = door.connect("keysvc")
    _, bob = member_with_session(backend, "bob@example.com")
    bb, page = door.browser(path_of(c["connectUrl"]), session=bob)
    assert page.status_code == 403
    assert "belongs to another member" in page.text
    assert "<form" not in page.text
    forged = bb.post(c["connectUrl"], data={"apiKey": "sk-bob", "instanceUrl": "https://bob.example",
                                            "csrf": "x"})
    assert forged.status_code == 403 and "belongs to another member" in forged.text
    assert door.status(c["id"])["status"] == "pending"
    assert credential_ids(door, secret=bob) == [] and credential_ids(door) == []
    # The owner can still complete it.
    b, own = door.browser(path_of(c["connectUrl"]))
    assert submit(b, own, {"apiKey": "sk-CANARY-own", "instanceUrl": "https://acme.example"}).status_code == 200


def test_no_cookie_or_an_unknown_link(door, keysvc):
    c = door.connect("keysvc")
    r = httpx.get(c["connectUrl"], trust_env=False)
    assert r.status_code == 401 and "Sign in" in r.text
    r = httpx.post(c["connectUrl"], data={"apiKey": "sk-anon", "instanceUrl": "https://x.example"}, trust_env=False)
    assert r.status_code == 401
    b, _ = door.browser("/")
    assert b.get(door.base_url + "/connect/not-a-real-link-token").status_code == 404
    assert door.status(c["id"])["status"] == "pending"


def test_the_pages_say_what_to_do_next(door, keysvc):
    """Issue 26: the connected page shows a command that works (the name, --reason); a used
    sign-in link says so and how to get a new one (not "Sign in first"); a connect page opened
    without a session says how to sign in."""
    c = door.connect("keysvc")
    anon = httpx.get(c["connectUrl"], trust_env=False)
    assert anon.status_code == 401 and "<h1>Sign in first</h1>" in anon.text
    assert "single-use sign-in link that <code>" not in anon.text   # a message, escaped, not markup
    assert "opens through the single-use sign-in link that `wsctl vault connect` prints or opens" in anon.text
    assert "run `wsctl vault connect SERVICE` again for a new one" in anon.text
    link = door.signin_link(path_of(c["connectUrl"]))
    b = httpx.Client(trust_env=False, follow_redirects=True, timeout=30)
    try:
        page = b.get(link)
        assert page.status_code == 200
        used = httpx.get(link, trust_env=False)
        assert used.status_code == 401 and "<h1>This sign-in link cannot be used</h1>" in used.text
        assert "Sign in first" not in used.text and "was already used: each one signs in once" in used.text
        assert "(e.g. `wsctl vault connect SERVICE`) for a new link" in used.text
        done = submit(b, page, {"apiKey": "sk-next-steps", "instanceUrl": "https://acme.example"})
    finally:
        b.close()
    cred = door.status(c["id"])["credentialId"]
    assert done.status_code == 200
    assert f"<code>keysvc</code> (<code>{cred}</code>)" in done.text
    assert 'wsctl vault env keysvc --reason "first use"' in done.text
    assert 'wsctl vault token keysvc --reason "first use"' in done.text
    assert f"vault env {cred}" not in done.text


# --- OAuth ------------------------------------------------------------------------------------

def walk_to_provider(door: Door, conn: dict, session: str | None = None) -> tuple[httpx.Client, str]:
    """Sign in, open the link, answer the authorize URL it redirects to (not followed)."""
    b, landing = door.browser(path_of(conn["connectUrl"]), session=session, follow=False)
    assert landing.status_code == 303
    r = b.get(door.base_url + landing.headers["location"])
    assert r.status_code in (302, 303), r.text[:300]
    assert r.headers.get("referrer-policy") == "no-referrer"
    return b, r.headers["location"]


def provider_redirect(b: httpx.Client, authorize: str) -> str:
    r = b.get(authorize)
    assert r.status_code == 302, r.text
    return r.headers["location"]


def test_oauth_end_to_end_with_state_and_pkce(door, loopcrm, provider):
    c = door.connect("loopcrm")
    b, authorize = walk_to_provider(door, c)
    u = urllib.parse.urlsplit(authorize)
    q = dict(urllib.parse.parse_qsl(u.query))
    assert f"{u.scheme}://{u.netloc}{u.path}" == provider.url + "/authorize"
    assert q["response_type"] == "code" and q["client_id"] == provider.client_id
    assert q["redirect_uri"] == door.base_url + "/connect/callback"
    assert q["scope"] == "contacts.read contacts.write"
    assert q["code_challenge_method"] == "S256" and len(q["code_challenge"]) == 43
    assert len(q["state"]) >= 32
    callback = provider_redirect(b, authorize)
    page = b.get(callback)
    assert page.status_code == 200 and "Connected. You can close this tab." in page.text
    assert provider.exchanges == 1  # the provider checked the verifier against the challenge
    got = door.status(c["id"])
    assert got["status"] == "connected"
    issued = door.api("POST", f"/v1/credentials/{got['credentialId']}/token", {"reason": "oauth test"}).body
    assert issued["accessToken"] == provider.issued[-1]["access_token"]
    assert "refreshToken" not in issued and provider.issued[-1]["refresh_token"] not in str(issued)
    detail = door.ok("GET", f"/v1/credentials/{got['credentialId']}")
    assert detail["scopes"] == ["contacts.read", "contacts.write"]
    # The same provider answer again: state is single use, nothing changes.
    replay = b.get(callback)
    assert replay.status_code in (400, 410) and provider.exchanges == 1
    assert credential_ids(door) == [got["credentialId"]]
    assert b.get(c["connectUrl"]).status_code == 410


def test_oauth_with_the_acceptance_style_browser_following_every_redirect(door, loopcrm, provider):
    provider.expires_in_answer = 1e20  # an absurd lifetime is clamped to ten years, not a 500
    c = door.connect("loopcrm")
    _b, page = door.browser(path_of(c["connectUrl"]))
    assert page.status_code == 200, page.text[:300]
    got = door.status(c["id"])
    assert got["status"] == "connected"
    expires = door.ok("GET", f"/v1/credentials/{got['credentialId']}")["expiresAt"]
    from workspacectl import clock

    assert 3649 <= (clock.parse_iso(expires) - clock.now()).days <= 3650


def test_a_bad_state_changes_nothing(door, loopcrm, provider):
    c = door.connect("loopcrm")
    b, authorize = walk_to_provider(door, c)
    callback = provider_redirect(b, authorize)
    q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(callback).query))
    for bad in ({"code": q["code"], "state": "forged-state-value"}, {"code": q["code"]}, {"state": ""}):
        r = b.get(door.base_url + "/connect/callback", params=bad)
        assert r.status_code == 400, r.text[:300]
    assert provider.exchanges == 0
    assert door.status(c["id"])["status"] == "pending"
    # The genuine answer still works afterwards.
    assert b.get(callback).status_code == 200
    assert door.status(c["id"])["status"] == "connected"


def test_an_older_state_is_replaced_by_a_newer_redirect(door, loopcrm, provider):
    c = door.connect("loopcrm")
    b, first = walk_to_provider(door, c)
    first_callback = provider_redirect(b, first)
    b2, second = walk_to_provider(door, c)  # the link opened again: a new state and verifier
    assert b.get(first_callback).status_code == 400
    assert door.status(c["id"])["status"] == "pending"
    assert b2.get(provider_redirect(b2, second)).status_code == 200
    assert door.status(c["id"])["status"] == "connected"


def test_the_callback_needs_the_creators_cookie(backend, door, loopcrm, provider):
    c = door.connect("loopcrm")
    b, authorize = walk_to_provider(door, c)
    callback = provider_redirect(b, authorize)
    _, bob = member_with_session(backend, "bob@example.com")
    bb, _ = door.browser("/", session=bob)
    r = bb.get(callback)
    assert r.status_code == 403 and "another member" in r.text
    assert httpx.get(callback, trust_env=False).status_code == 401
    assert provider.exchanges == 0 and door.status(c["id"])["status"] == "pending"
    assert b.get(callback).status_code == 200


def test_a_provider_error_marks_the_connection_failed(door, loopcrm, provider):
    c = door.connect("loopcrm")
    b, authorize = walk_to_provider(door, c)
    state = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(authorize).query))["state"]
    r = b.get(door.base_url + "/connect/callback", params={"error": "access_denied", "state": state,
                                                            "error_description": "<script>x</script>"})
    assert r.status_code == 403 and "access_denied" in r.text and "<script>x" not in r.text
    got = door.status(c["id"])
    assert got["status"] == "failed" and "access_denied" in got["error"]
    assert "credentialId" not in got and credential_ids(door) == []
    page = b.get(c["connectUrl"])
    assert page.status_code == 410 and "failed" in page.text


def test_a_refused_code_exchange_marks_the_connection_failed(door, loopcrm, provider):
    c = door.connect("loopcrm")
    b, authorize = walk_to_provider(door, c)
    state = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(authorize).query))["state"]
    r = b.get(door.base_url + "/connect/callback", params={"code": "code-not-issued", "state": state})
    assert r.status_code == 502, r.text[:300]
    got = door.status(c["id"])
    assert got["status"] == "failed" and "code-not-issued" not in got["error"]
    assert credential_ids(door) == []


def test_oauth_without_a_client_is_refused_up_front_saying_how_to_set_it(backend, door, loopcrm, provider):
    """No client id: POST /v1/connections is 409 naming the oauth-client route (no link to a provider
    that would refuse the user); a link made before the client went away says the same."""
    made = door.connect("loopcrm")
    con = workspace_db(backend.workspace)
    con.execute("UPDATE integrations SET oauth_client_id = NULL WHERE service = 'loopcrm'")
    before = con.execute("SELECT count(*) FROM connections").fetchone()[0]
    r = door.api("POST", "/v1/connections", {"service": "loopcrm"})
    assert (r.status, r.code) == (409, "conflict"), r.body
    assert "wsctl catalog oauth-client loopcrm --client-id" in r.body["error"]["message"]
    assert "wsctl catalog oauth-client" in r.body["error"]["message"]
    assert con.execute("SELECT count(*) FROM connections").fetchone()[0] == before
    con.close()
    _b, page = door.browser(path_of(made["connectUrl"]))
    assert page.status_code == 409 and "no OAuth client" in page.text and "oauth-client" in page.text
    assert door.status(made["id"])["status"] == "pending"
    assert ("GET", "/authorize") not in provider.requests


def test_no_secret_reaches_a_page_the_log_or_the_api(backend, door, loopcrm, keysvc, provider):
    c = door.connect("keysvc")
    b, page = door.browser(path_of(c["connectUrl"]))
    done = submit(b, page, {"apiKey": "sk-CANARY-scan", "instanceUrl": "https://acme.example"})
    o = door.connect("loopcrm")
    _b2, final = door.browser(path_of(o["connectUrl"]))
    assert door.status(o["id"])["status"] == "connected"
    secrets = ["sk-CANARY-scan", *provider.all_secrets()]
    seen = [done.text, final.text, str(door.status(c["id"])), str(door.status(o["id"]))]
    if backend.kind == "remote":
        seen.append(backend.server.log_text())
    for text in seen:
        for s in secrets:
            assert s not in text
    for place, raw in workspace_at_rest(backend.workspace).items():
        for s in secrets:
            assert s.encode() not in raw, place
    # Link tokens and OAuth state are stored as hashes only (the link needs the creator's cookie too).
    con = workspace_db(backend.workspace)
    rows = con.execute("SELECT * FROM connections").fetchall()
    con.close()
    dump = repr([tuple(r) for r in rows])
    for link in (c["connectUrl"], o["connectUrl"]):
        tok = path_of(link).rsplit("/", 1)[1]
        assert tok not in dump and sha256_hex(tok) in dump



# --- reconnecting a credential ------------------------------------------------------------------

def test_reconnect_refills_the_same_credential(backend, door, loopcrm, keysvc, provider):
    """invalid_grant leaves a credential needs_reconnect; a connection naming it (credentialId)
    puts fresh secrets into it: same id, shares kept, status ok, tokens flow again."""
    from tests.vault_helpers import make_credential, oauth_credential

    cred, _ = oauth_credential(backend, provider, expires_in=5)
    bob, bob_s = member_with_session(backend, "bob@example.com")
    door.ok("PUT", f"/v1/credentials/{cred['id']}/sharing", {"membershipId": bob["id"], "role": "user"})
    provider.mode = "invalid_grant"
    r = token(backend, cred["id"])
    assert r.status == 502 and f"wsctl vault connect loopcrm --reconnect {cred['id']}" in r.body["error"]["message"]
    provider.mode = "ok"
    for body, status in [({"service": "keysvc", "credentialId": cred["id"]}, 400),
                         ({"service": "loopcrm", "credentialId": "cred_nope"}, 404),
                         ({"service": "loopcrm", "credentialId": 7}, 400)]:
        assert door.api("POST", "/v1/connections", body).status == status, body
    assert door.api("POST", "/v1/connections", {"service": "loopcrm", "credentialId": cred["id"]},
                    secret=bob_s).status == 403, "a user of a credential cannot reconnect it"
    o = door.ok("POST", "/v1/connections", {"service": "loopcrm", "credentialId": cred["id"]})
    assert o["status"] == "pending" and "credentialId" not in o
    _, page = door.browser(path_of(o["connectUrl"]))
    assert page.status_code == 200 and "Connected" in page.text, page.text[:300]
    assert door.status(o["id"])["credentialId"] == cred["id"]
    assert credential_ids(door) == [cred["id"]], "no second credential"
    detail = door.ok("GET", f"/v1/credentials/{cred['id']}")
    assert detail["status"] == "ok" and detail["sharing"] == [{"membershipId": bob["id"], "role": "user"}]
    t = token(backend, cred["id"], secret=bob_s)
    assert t.status == 200 and t.body["accessToken"] == provider.issued[-1]["access_token"]
    assert provider.refreshes == 1, "the reconnect brought a fresh token: no refresh needed"
    # An apiKey credential is reconnected through the form the same way.
    key = make_credential(backend.workspace, backend.owner["id"], "keysvc", {"apiKey": "sk-CANARY-old"},
                          {"instanceUrl": "https://old.example"})
    k = door.ok("POST", "/v1/connections", {"service": "keysvc", "credentialId": key["id"]})
    b, form_page = door.browser(path_of(k["connectUrl"]))
    assert submit(b, form_page, {"apiKey": "sk-CANARY-new", "instanceUrl": "https://new.example"}).status_code == 200
    assert door.status(k["id"])["credentialId"] == key["id"]
    assert token(backend, key["id"]).body == {"apiKey": "sk-CANARY-new", "instanceUrl": "https://new.example"}
    assert sorted(credential_ids(door)) == sorted([cred["id"], key["id"]])
