"""CONTRACT §2 identity over the API, on both backends: secrets, login codes, members, keys,
web sign-in, and expiry driven by the clock offset (WSCTL_NOW_OFFSET_SECONDS)."""
from __future__ import annotations

import re
from datetime import timedelta

import httpx

from tests.api_helpers import ISO_Z, MEMBER_KEYS, assert_error
from tests.conftest import make_backend, start_server
from workspacectl import clock

CODE = re.compile(r"^[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}$")
KEY_FIELDS = {"id", "secret", "kind", "scopes", "name", "createdAt", "expiresAt"}
SECRET = {"platform": re.compile(r"^ws_platform_[0-9A-Za-z]{32,}$"),
          "personal": re.compile(r"^ws_personal_[0-9A-Za-z]{32,}$"),
          "session": re.compile(r"^ws_session_[0-9A-Za-z]{32,}$")}
OFFSET = "WSCTL_NOW_OFFSET_SECONDS"


def _code(backend, member_id, secret=None) -> str:
    body = backend.ok("POST", f"/v1/members/{member_id}/login-codes", secret=secret)
    assert set(body) == {"code", "expiresAt"} and CODE.match(body["code"]) and ISO_Z.match(body["expiresAt"]), body
    return body["code"]


def _whoami(backend, secret) -> dict:
    return backend.ok("GET", "/v1/auth/whoami", secret=secret)


def _seconds_from_now(ts: str) -> float:
    return (clock.parse_iso(ts) - clock.now()).total_seconds()


# --- 401 ------------------------------------------------------------------------------------

def test_unknown_revoked_and_garbage_secrets_are_401(backend):
    ok_key = backend.key("platform", ["docs:read"])
    for secret in ("", "ws_session_" + "A" * 40, "ws_platform_" + "A" * 40, "ws_personal_" + "A" * 40,
                   ok_key[:-1] + ("a" if ok_key[-1] != "a" else "b"), "ws_platform_", "garbage",
                   backend.owner_token.replace("ws_session_", "ws_platform_"),
                   ok_key.replace("ws_platform_", "ws_session_"), "x" * 5000):
        assert_error(backend.api("GET", "/v1/auth/whoami", secret=secret), 401, "unauthenticated")
        assert_error(backend.api("GET", "/v1/integrations", secret=secret), 401, "unauthenticated")
    assert _whoami(backend, ok_key)["kind"] == "platform"

    # A revoked key: 401 at once, on every route; revoking twice is 404.
    key_id = _whoami(backend, ok_key)["keyId"]
    assert backend.api("DELETE", f"/v1/keys/{key_id}").status == 204
    assert_error(backend.api("GET", "/v1/integrations", secret=ok_key), 401, "unauthenticated")
    assert_error(backend.api("DELETE", f"/v1/keys/{key_id}"), 404, "not_found")

    # A revoked session (DELETE /v1/auth/session): that one only; the keys it made live on.
    session = backend.session()
    made = backend.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["triggers:manage"]}, secret=session)
    assert backend.api("DELETE", "/v1/auth/session", secret=session).status == 204
    for path in ("/v1/auth/whoami", "/v1/members", "/v1/keys"):
        assert_error(backend.api("GET", path, secret=session), 401, "unauthenticated")
    assert_error(backend.api("DELETE", "/v1/auth/session", secret=session), 401, "unauthenticated")
    assert _whoami(backend, backend.owner_token)["kind"] == "session"
    assert backend.ok("GET", "/v1/triggers", secret=made["secret"])["triggers"]
    # A key cannot end a session (sessions only) and is not itself ended by trying.
    assert_error(backend.api("DELETE", "/v1/auth/session", secret=made["secret"]), 403, "insufficient_scope")
    assert _whoami(backend, made["secret"])["kind"] == "personal"


# --- login codes and sessions ------------------------------------------------------------------

def test_login_codes_single_use_normalized_and_admin_only(backend):
    owner = backend.owner
    mia = backend.add_member("mia@example.com", "Mia", "member")
    ada = backend.add_member("ada@example.com", "Ada", "admin")

    # Normalization: lower case, no dashes, spaces and extra dashes all name the same code.
    for variant in (str.lower, lambda c: c.replace("-", ""), lambda c: f"  {c.lower().replace('-', ' - ')} "):
        code = _code(backend, mia["id"])
        r = backend.api("POST", "/v1/auth/session", {"code": variant(code)}, secret="")
        assert r.status == 201, r.body
        assert set(r.body) == {"token", "member"} and SECRET["session"].match(r.body["token"])
        assert r.body["member"] == mia
        me = _whoami(backend, r.body["token"])
        assert me["member"]["id"] == mia["id"] and me["kind"] == "session"
        # Single use: the same code again (any spelling) is refused.
        for again in (code, variant(code)):
            assert_error(backend.api("POST", "/v1/auth/session", {"code": again}, secret=""), 401, "unauthenticated")

    # Codes for a member made by email too; an unknown member is 404.
    assert CODE.match(_code(backend, "MIA@example.com"))
    assert_error(backend.api("POST", "/v1/members/um_nope/login-codes"), 404, "not_found")
    # Wrong code bodies: 400, not 401 or 500.
    for body in (None, {}, {"code": ""}, {"code": 12}, {"code": ["x"]}, {"code": "x" * 65}, [], "ABCD"):
        assert_error(backend.api("POST", "/v1/auth/session", body, secret=""), 400, "invalid_request")
    assert_error(backend.api("POST", "/v1/auth/session", {"code": "ABCD-EFGH-JKLM"}, secret=""), 401,
                 "unauthenticated")

    # Only an owner or admin makes codes; an admin not for an owner.
    mia_s, ada_s = backend.session(mia["id"]), backend.session(ada["id"])
    for target in (mia["id"], ada["id"], owner["id"], "um_nope"):
        assert_error(backend.api("POST", f"/v1/members/{target}/login-codes", secret=mia_s), 403, "forbidden")
    assert_error(backend.api("POST", f"/v1/members/{owner['id']}/login-codes", secret=ada_s), 403, "forbidden")
    code = _code(backend, mia["id"], secret=ada_s)
    assert backend.api("POST", "/v1/auth/session", {"code": code}, secret="").status == 201
    # Keys may not make codes, whatever they hold.
    key = backend.key("platform", ["vault:read", "vault:token", "vault:connect", "vault:manage", "docs:read"])
    assert_error(backend.api("POST", f"/v1/members/{mia['id']}/login-codes", secret=key), 403, "insufficient_scope")


def test_session_from_a_login_code_makes_keys_that_reach_what_the_contract_says(backend):
    mia = backend.add_member("mia@example.com", "Mia", "member")
    session = backend.session(mia["id"])  # login code, then POST /v1/auth/session
    plat = backend.ok("POST", "/v1/keys", {"kind": "platform", "scopes": ["vault:read"], "name": "ci"}, secret=session)
    pers = backend.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["triggers:manage"]}, secret=session)
    for body, kind, scopes in ((plat, "platform", ["vault:read"]), (pers, "personal", ["triggers:manage"])):
        me = _whoami(backend, body["secret"])
        assert (me["member"]["id"], me["kind"], me["scopes"], me["keyId"]) == (mia["id"], kind, scopes, body["id"])

    reach = {  # path -> (session, platform key, personal key)
        ("GET", "/v1/credentials"): (200, 200, 403),
        ("POST", "/v1/credentials/cred_nope/token"): (404, 403, 403),
        ("GET", "/v1/integrations"): (200, 403, 403),
        ("GET", "/v1/triggers"): (200, 403, 200),
        ("GET", "/v1/projects"): (200, 403, 403),
        ("GET", "/v1/members"): (200, 403, 403),
        ("GET", "/v1/keys"): (200, 403, 403),
        ("POST", "/v1/keys"): (400, 403, 403),
    }
    for (method, path), want in reach.items():
        for secret, status in zip((session, plat["secret"], pers["secret"]), want):
            r = backend.api(method, path, {"reason": "test"} if "token" in path else {}, secret=secret)
            assert r.status == status, (method, path, secret[:12], r.status, r.body)
            if status == 403:
                assert_error(r, 403, "insufficient_scope", "Insufficient scope")
    # The member's own keys, both listed with the member as creator, no secret shown.
    keys = backend.ok("GET", "/v1/keys", secret=session)["keys"]
    assert {k["id"] for k in keys} == {plat["id"], pers["id"]}
    assert all(k["memberId"] == mia["id"] and "secret" not in k for k in keys)


# --- members ------------------------------------------------------------------------------------

def test_members_validation_shape_and_pagination(backend):
    m = backend.ok("POST", "/v1/members", {"email": "  Zed@Example.COM ", "name": "Zed", "role": "guest"})
    assert set(m) == MEMBER_KEYS and m["id"].startswith("um_") and ISO_Z.match(m["createdAt"])
    assert (m["email"], m["name"], m["role"]) == ("zed@example.com", "Zed", "guest")
    assert backend.ok("POST", "/v1/members", {"email": "nora@example.com", "name": "Nora"})["role"] == "member"

    bad = [{"email": "nope", "name": "N"}, {"email": "a b@x.com", "name": "N"}, {"email": "", "name": "N"},
           {"email": "@", "name": "N"}, {"name": "N"}, {"email": 5, "name": "N"}, {"email": "n@x.com"},
           {"email": "n@x.com", "name": 7}, {"email": "n@x.com", "name": "x" * 201},
           {"email": "n@x.com", "name": "N", "role": "king"}, {"email": "n@x.com", "name": "N", "role": "OWNER"},
           {"email": "n@x.com", "name": "N", "role": 1}, {"email": "x" * 400 + "@x.com", "name": "N"},
           [], "n@x.com", 3, None]
    for body in bad:
        assert_error(backend.api("POST", "/v1/members", body), 400, "invalid_request")
    for email in ("zed@example.com", "ZED@EXAMPLE.COM", backend.owner["email"]):
        assert_error(backend.api("POST", "/v1/members", {"email": email, "name": "Dup"}), 409, "conflict")

    # Only an owner or admin adds members; an admin adds no owner.
    ada = backend.add_member("ada@example.com", "Ada", "admin")
    nora_s = backend.session(backend.ok("GET", "/v1/members")["members"][2]["id"])
    assert_error(backend.api("POST", "/v1/members", {"email": "q@x.com", "name": "Q"}, secret=nora_s), 403, "forbidden")
    ada_s = backend.session(ada["id"])
    assert_error(backend.api("POST", "/v1/members", {"email": "o2@x.com", "name": "O", "role": "owner"}, secret=ada_s),
                 403, "forbidden")
    assert backend.api("POST", "/v1/members", {"email": "o2@x.com", "name": "O", "role": "owner"}).status == 201
    assert backend.api("POST", "/v1/members", {"email": "m2@x.com", "name": "M", "role": "admin"},
                       secret=ada_s).status == 201

    # Pagination: every member exactly once, in id order, any member may list.
    everyone = backend.ok("GET", "/v1/members", query={"limit": "500"})
    assert everyone["nextCursor"] is None and len(everyone["members"]) == 6
    assert all(set(x) == MEMBER_KEYS for x in everyone["members"])
    ids = [x["id"] for x in everyone["members"]]
    assert ids == sorted(ids)
    seen, cursor = [], None
    while True:
        page = backend.ok("GET", "/v1/members", query={"limit": "4", **({"cursor": cursor} if cursor else {})},
                          secret=nora_s)
        assert len(page["members"]) <= 4
        seen += [x["id"] for x in page["members"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
    assert seen == ids
    assert len(backend.ok("GET", "/v1/members", query={"limit": "1"})["members"]) == 1
    for query in ({"limit": "0"}, {"limit": "501"}, {"limit": "-1"}, {"limit": "x"}, {"limit": "1.5"},
                  {"cursor": "not-a-cursor"}, {"cursor": "W10"}, {"cursor": "bnVsbA"}, {"cursor": "e30"}):
        assert_error(backend.api("GET", "/v1/members", query=query), 400, "invalid_request")


# --- keys --------------------------------------------------------------------------------------

def test_keys_create_validate_list_and_revoke(backend):
    later = clock.iso(clock.now() + timedelta(days=30))
    for kind, scopes in (("platform", ["vault:read", "docs:read"]), ("personal", ["skills:manage"])):
        r = backend.api("POST", "/v1/keys", {"kind": kind, "scopes": scopes, "name": "k", "expiresAt": later})
        assert r.status == 201, r.body
        assert set(r.body) >= KEY_FIELDS and SECRET[kind].match(r.body["secret"]), r.body
        assert (r.body["kind"], r.body["scopes"], r.body["name"], r.body["expiresAt"]) == (kind, scopes, "k", later)
        assert r.body["id"].startswith("key_") and ISO_Z.match(r.body["createdAt"])
    no_expiry = backend.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["memory:manage"]})
    assert no_expiry["expiresAt"] is None and no_expiry["name"] == ""

    bad = [{"kind": "platform", "scopes": ["projects:manage"]}, {"kind": "personal", "scopes": ["vault:read"]},
           {"kind": "personal", "scopes": ["skills:manage", "docs:read"]}, {"kind": "platform", "scopes": []},
           {"kind": "platform"}, {"kind": "platform", "scopes": "docs:read"}, {"kind": "platform", "scopes": [1]},
           {"kind": "platform", "scopes": ["docs:write"]}, {"kind": "session", "scopes": ["docs:read"]},
           {"scopes": ["docs:read"]}, {"kind": "platform", "scopes": ["docs:read"], "name": 3},
           {"kind": "platform", "scopes": ["docs:read"], "expiresAt": "tomorrow"},
           {"kind": "platform", "scopes": ["docs:read"], "expiresAt": "2001-01-01T00:00:00Z"},
           {"kind": "platform", "scopes": ["docs:read"], "expiresAt": 1893456000},
           {"kind": "platform", "scopes": ["docs:read"], "expiresAt": "2030-13-40T00:00:00Z"},
           {"kind": "platform", "scopes": ["docs:read"], "expiresAt": "9999-12-31T23:59:59-01:00"},
           [], "platform", None]
    for body in bad:
        assert_error(backend.api("POST", "/v1/keys", body), 400, "invalid_request")

    # A member sees and revokes only its own keys; an owner or admin sees and revokes any.
    mia = backend.add_member("mia@example.com", "Mia")
    ada = backend.add_member("ada@example.com", "Ada", "admin")
    mia_s, ada_s = backend.session(mia["id"]), backend.session(ada["id"])
    mia_k1 = backend.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["triggers:manage"]}, secret=mia_s)
    mia_k2 = backend.ok("POST", "/v1/keys", {"kind": "platform", "scopes": ["docs:read"]}, secret=mia_s)
    owner_keys = {k["id"] for k in backend.ok("GET", "/v1/keys")["keys"]}
    assert {mia_k1["id"], mia_k2["id"], no_expiry["id"]} <= owner_keys
    assert {k["id"] for k in backend.ok("GET", "/v1/keys", secret=ada_s)["keys"]} == owner_keys
    assert {k["id"] for k in backend.ok("GET", "/v1/keys", secret=mia_s)["keys"]} == {mia_k1["id"], mia_k2["id"]}
    assert all("secret" not in k for k in backend.ok("GET", "/v1/keys")["keys"])
    assert_error(backend.api("DELETE", f"/v1/keys/{no_expiry['id']}", secret=mia_s), 404, "not_found")
    assert_error(backend.api("DELETE", "/v1/keys/key_nope", secret=mia_s), 404, "not_found")
    # Session ids are not keys: DELETE /v1/keys does not end sessions.
    assert_error(backend.api("DELETE", f"/v1/keys/{_whoami(backend, mia_s)['keyId']}"), 404, "not_found")
    assert _whoami(backend, no_expiry["secret"])["kind"] == "personal"
    assert backend.api("DELETE", f"/v1/keys/{mia_k1['id']}", secret=mia_s).status == 204
    assert backend.api("DELETE", f"/v1/keys/{mia_k2['id']}", secret=ada_s).status == 204
    assert backend.api("DELETE", f"/v1/keys/{no_expiry['id']}").status == 204
    for k in (mia_k1, mia_k2, no_expiry):
        assert_error(backend.api("GET", "/v1/auth/whoami", secret=k["secret"]), 401, "unauthenticated")
    assert backend.ok("GET", "/v1/keys", secret=mia_s)["keys"] == []
    for limit in ("0", "501"):
        assert_error(backend.api("GET", "/v1/keys", query={"limit": limit}), 400, "invalid_request")


# --- web sign-in ------------------------------------------------------------------------------------

BAD_NEXT = ["//evil.example", "https://evil.example/x", "/\\evil", "\\\\evil", "javascript:alert(1)",
            "evil.example", "", "/\x00x", "/a\r\nSet-Cookie: x=y", "/\tx", 5, ["/"], "/" + "x" * 2001]


def test_web_sign_in_link(backend):
    for nxt in BAD_NEXT:
        assert_error(backend.api("POST", "/v1/auth/web-link", {"next": nxt}), 400, "invalid_request")
    key = backend.key("platform", ["vault:read", "vault:connect", "docs:read"])
    assert_error(backend.api("POST", "/v1/auth/web-link", {"next": "/"}, secret=key), 403, "insufficient_scope")
    r = backend.api("POST", "/v1/auth/web-link", {"next": "/x"})
    if backend.kind == "local":  # no server: nothing could follow the link
        assert_error(r, 400, "invalid_request")
        assert "wsctl serve" in r.body["error"]["message"]
        return

    assert r.status == 201, r.body
    assert set(r.body) == {"url", "expiresAt"} and r.body["url"].startswith(backend.base_url + "/signin/")
    assert 295 <= _seconds_from_now(r.body["expiresAt"]) <= 301
    nxt = "/connect/whatever?x=1&y=%2F"
    link = backend.ok("POST", "/v1/auth/web-link", {"next": nxt})["url"]
    with httpx.Client(trust_env=False, follow_redirects=False, timeout=30) as browser:
        first = browser.get(link)
        assert first.status_code in (302, 303, 307) and first.headers["location"] == nxt
        cookie = first.headers["set-cookie"]
        attrs = {a.strip().split("=")[0].lower(): a.strip() for a in cookie.split(";")}
        assert "httponly" in attrs and attrs["samesite"].lower() == "samesite=lax" and attrs["path"] == "Path=/"
        value = cookie.split(";")[0].split("=", 1)[1]
        assert len(value) >= 32
        assert "You are signed in" in browser.get(backend.base_url + "/").text
        # The cookie is a web session, not an API secret.
        assert_error(backend.api("GET", "/v1/auth/whoami", secret=value), 401, "unauthenticated")
    with httpx.Client(trust_env=False, follow_redirects=False, timeout=30) as other:
        again = other.get(link)  # single use
        assert again.status_code == 401 and "set-cookie" not in again.headers and "location" not in again.headers
        assert "not signed in" in other.get(backend.base_url + "/").text
        bogus = other.get(backend.base_url + "/signin/" + "A" * 43)
        assert bogus.status_code == 401 and "set-cookie" not in bogus.headers


def test_sign_in_links_used_at_once_give_one_session_and_no_500(backend):
    """Many browsers opening sign-in links at the same moment: each link signs in exactly once,
    the rest get 401, and nothing answers 500 (the page once shared the event loop's one
    database connection between worker threads)."""
    if backend.kind == "local":
        return  # the hosted sign-in page exists only on a server
    import threading

    for _ in range(10):
        link = backend.ok("POST", "/v1/auth/web-link", {"next": "/"})["url"]
        statuses, barrier = [], threading.Barrier(16)

        def open_link(barrier=barrier, statuses=statuses, link=link):
            barrier.wait()
            with httpx.Client(trust_env=False, follow_redirects=False, timeout=30) as browser:
                statuses.append(browser.get(link).status_code)

        threads = [threading.Thread(target=open_link) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(statuses) == [303] + [401] * 15, statuses


# --- expiry by the clock ------------------------------------------------------------------------

def test_expiry_of_codes_links_and_keys(backend, monkeypatch, home):
    """Login codes live 15 minutes (11 minutes old works, 15:01 not), sign-in links 5, keys until
    expiresAt. Every "still works" keeps minutes of slack, so a loaded machine cannot flip it."""
    mia = backend.add_member("mia@example.com", "Mia")
    soon = clock.iso(clock.now() + timedelta(seconds=600))
    short = backend.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["triggers:manage"], "expiresAt": soon})
    lasting = backend.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["triggers:manage"]})
    assert _whoami(backend, short["secret"])["keyId"] == short["id"]
    made = backend.ok("POST", f"/v1/members/{mia['id']}/login-codes")
    assert 15 * 60 - 180 <= _seconds_from_now(made["expiresAt"]) <= 15 * 60 + 1
    code_old = made["code"]

    if backend.kind == "local":
        code_young = _code(backend, mia["id"])
        monkeypatch.setenv(OFFSET, str(5 * 60))   # the 10-minute key, 5 minutes on
        assert _whoami(backend, short["secret"])["keyId"] == short["id"]
        monkeypatch.setenv(OFFSET, str(11 * 60))  # the code 11 minutes old, the key 1 minute past
        assert backend.api("POST", "/v1/auth/session", {"code": code_young}, secret="").status == 201
        assert_error(backend.api("GET", "/v1/auth/whoami", secret=short["secret"]), 401, "unauthenticated")
        monkeypatch.setenv(OFFSET, str(15 * 60 + 1))
        assert_error(backend.api("POST", "/v1/auth/session", {"code": code_old}, secret=""), 410, "expired")
        assert _whoami(backend, lasting["secret"])["keyId"] == lasting["id"]
        return

    # Remote: a second server on the same workspace, its clock 15:01 ahead. A code made now is
    # 15:01 old there; one made (in-process) with the clock 4:01 ahead is 11 minutes old there
    # (4 minutes of slack: a loaded machine may take a while between making a code and using it).
    late = start_server(backend.workspace, offset=15 * 60 + 1, log=backend.workspace.parent / "late.log")
    local = make_backend("local", backend.workspace, home)  # the same folder, in-process
    try:
        def on_late(method, path, body=None, secret=None):
            return httpx.request(method, late.url + path, json=body, timeout=30,
                                 headers={"Authorization": f"Bearer {secret}"} if secret else {}, trust_env=False)

        monkeypatch.setenv(OFFSET, str(4 * 60 + 1))
        code_young = _code(local, mia["id"])
        assert on_late("POST", "/v1/auth/session", {"code": code_young}).status_code == 201
        monkeypatch.setenv(OFFSET, str(15 * 60 + 1 - 60))  # a link 1 minute old on `late` (it lives 5)
        link_young = local._engine.handle("POST", "/v1/auth/web-link", None, {"next": "/ok"}, local.owner_token,
                                          late.url).body["url"]
        young = httpx.get(link_young, follow_redirects=False, timeout=30, trust_env=False)
        assert young.status_code == 303 and young.headers["location"] == "/ok"
        monkeypatch.delenv(OFFSET)

        link_old = backend.ok("POST", "/v1/auth/web-link", {"next": "/ok"})["url"].replace(backend.base_url, late.url)
        old = httpx.get(link_old, follow_redirects=False, timeout=30, trust_env=False)
        assert old.status_code == 410 and "expired" in old.text and "set-cookie" not in old.headers
        assert_error(on_late("POST", "/v1/auth/session", {"code": code_old}), 410, "expired")
        assert_error(on_late("GET", "/v1/auth/whoami", secret=short["secret"]), 401, "unauthenticated")
        assert on_late("GET", "/v1/auth/whoami", secret=lasting["secret"]).json()["keyId"] == lasting["id"]
        # On the server whose clock is right, the short key still works.
        assert _whoami(backend, short["secret"])["keyId"] == short["id"]
    finally:
        local.close()
        late.stop()
