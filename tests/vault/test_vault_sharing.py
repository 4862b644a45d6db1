"""Sharing, visibility (404 vs 403), viewer-only refusal with its audit row, platform keys, access log."""
from __future__ import annotations

import pytest

from tests.vault_helpers import (
    TWO_SECRET_TOML,
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    make_credential,
    member_with_session,
    token,
)

pytestmark = pytest.mark.usefixtures("canary_scan")

PLATFORM_ALL = ["vault:read", "vault:token", "vault:connect", "vault:manage"]
LIST_KEYS = {"id", "service", "name", "credentialType", "envVars", "ownerMembershipId", "access", "status",
             "createdAt", "updatedAt"}


@pytest.fixture
def cred(backend):
    install_service(backend.workspace, TWO_SECRET_TOML)
    return make_credential(backend.workspace, backend.owner["id"], "twosecret",
                           {"accountSid": "AC-CANARY-share", "authToken": "tok-CANARY-share"})


def share(backend, cred_id, body, secret=None):
    return backend.api("PUT", f"/v1/credentials/{cred_id}/sharing", body, secret=secret)


def ids(backend, secret):
    r = backend.api("GET", "/v1/credentials", secret=secret)
    assert r.status == 200, r.body
    return {c["id"]: c["access"] for c in r.body["credentials"]}


def test_unshared_credential_is_invisible_to_other_members(backend, cred):
    _bob, bob_s = member_with_session(backend, "bob@example.com")
    assert ids(backend, bob_s) == {}
    for method, path, body in [("GET", f"/v1/credentials/{cred['id']}", None),
                               ("POST", f"/v1/credentials/{cred['id']}/token", {"reason": "x"}),
                               ("PUT", f"/v1/credentials/{cred['id']}/sharing", {"workspace": True, "role": "user"}),
                               ("GET", f"/v1/credentials/{cred['id']}/access-log", None),
                               ("GET", f"/v1/vault/credentials/{cred['id']}/editable-fields", None),
                               ("DELETE", f"/v1/vault/credentials/{cred['id']}", None)]:
        r = backend.api(method, path, body, secret=bob_s)
        assert r.status == 404 and r.code == "not_found", (method, path, r.body)
        missing = backend.api(method, path.replace(cred["id"], "cred_nope"), body, secret=bob_s)
        assert missing.status == 404 and missing.body["error"]["message"].replace("cred_nope", cred["id"]) \
            == r.body["error"]["message"], "an invisible credential looks exactly like a missing one"


def test_user_share_lets_the_member_take_tokens(backend, cred):
    bob, bob_s = member_with_session(backend, "bob@example.com")
    r = share(backend, cred["id"], {"membershipId": bob["id"], "role": "user"})
    assert r.status == 200, r.body
    assert r.body["sharing"] == [{"membershipId": bob["id"], "role": "user"}]
    assert ids(backend, bob_s) == {cred["id"]: "user"}
    detail = backend.api("GET", f"/v1/credentials/{cred['id']}", secret=bob_s).body
    assert detail["access"] == "user" and detail["ownerMembershipId"] == backend.owner["id"]
    assert set(detail) == LIST_KEYS | {"fields", "scopes", "sharing", "expiresAt", "syncedAt", "statusReason"}
    t = token(backend, cred["id"], secret=bob_s, reason="bob's job")
    assert t.status == 200 and t.body["authToken"] == "tok-CANARY-share"
    entry = backend.api("GET", f"/v1/credentials/{cred['id']}/access-log").body["entries"][0]
    assert entry["membershipId"] == bob["id"] and entry["outcome"] == "issued"
    # A user may not change what it does not own: 403, not 404.
    for method, path, body in [("PUT", f"/v1/credentials/{cred['id']}/sharing", {"workspace": True, "role": "user"}),
                               ("GET", f"/v1/credentials/{cred['id']}/access-log", None),
                               ("GET", f"/v1/vault/credentials/{cred['id']}/editable-fields", None),
                               ("PUT", f"/v1/vault/credentials/{cred['id']}/data", {"authToken": "x"}),
                               ("POST", f"/v1/vault/credentials/{cred['id']}/sync", None),
                               ("DELETE", f"/v1/vault/credentials/{cred['id']}", None)]:
        r = backend.api(method, path, body, secret=bob_s)
        assert r.status == 403 and r.code == "forbidden", (method, path, r.body)


def test_viewer_sees_it_but_token_is_403_and_logged_refused(backend, cred):
    carol, carol_s = member_with_session(backend, "carol@example.com")
    assert share(backend, cred["id"], {"workspace": True, "role": "viewer"}).status == 200
    assert ids(backend, carol_s) == {cred["id"]: "viewer"}
    r = token(backend, cred["id"], secret=carol_s, reason="peek")
    assert r.status == 403 and r.code == "forbidden"
    assert "AC-CANARY" not in str(r.body)
    entries = backend.api("GET", f"/v1/credentials/{cred['id']}/access-log").body["entries"]
    assert len(entries) == 1
    assert entries[0] | {"at": None, "keyId": None} == {"at": None, "keyId": None, "membershipId": carol["id"],
                                                        "reason": "peek", "fields": [], "outcome": "refused"}


def test_nearest_grant_wins_and_null_removes(backend, cred):
    dan, dan_s = member_with_session(backend, "dan@example.com")
    _eve, eve_s = member_with_session(backend, "eve@example.com")
    share(backend, cred["id"], {"workspace": True, "role": "user"})
    r = share(backend, cred["id"], {"membershipId": dan["id"], "role": "viewer"})
    assert {(s["membershipId"], s["role"]) for s in r.body["sharing"]} == {("workspace", "user"), (dan["id"], "viewer")}
    assert ids(backend, dan_s) == {cred["id"]: "viewer"}
    assert ids(backend, eve_s) == {cred["id"]: "user"}
    assert token(backend, cred["id"], secret=dan_s).status == 403
    assert token(backend, cred["id"], secret=eve_s).status == 200
    r = share(backend, cred["id"], {"workspace": True, "role": None})
    assert r.body["sharing"] == [{"membershipId": dan["id"], "role": "viewer"}]
    assert ids(backend, eve_s) == {}
    assert backend.api("GET", f"/v1/credentials/{cred['id']}", secret=eve_s).status == 404
    share(backend, cred["id"], {"membershipId": dan["email"], "role": None})
    assert ids(backend, dan_s) == {}


@pytest.mark.parametrize("body", [{}, {"role": "user"}, {"workspace": True}, {"workspace": True, "role": "owner"},
                                  {"workspace": True, "membershipId": "um_x", "role": "user"},
                                  {"workspace": "yes", "role": "user"}, {"membershipId": 7, "role": "user"}, [1]])
def test_sharing_body_rules(backend, cred, body):
    r = share(backend, cred["id"], body)
    assert r.status == 400 and r.code == "invalid_request", r.body


def test_sharing_with_unknown_member_or_the_owner(backend, cred):
    r = share(backend, cred["id"], {"membershipId": "um_nobody", "role": "user"})
    assert r.status == 404
    r = share(backend, cred["id"], {"membershipId": backend.owner["id"], "role": "viewer"})
    assert r.status == 400


def test_platform_key_sees_what_its_creator_owns_or_was_granted(backend, cred):
    fay, fay_s = member_with_session(backend, "fay@example.com")
    own = make_credential(backend.workspace, fay["id"], "twosecret", {"accountSid": "A", "authToken": "B"})
    fay_key = backend.key("platform", PLATFORM_ALL, member_id=fay["id"])
    assert ids(backend, fay_key) == {own["id"]: "owner"}
    assert backend.api("GET", f"/v1/credentials/{cred['id']}", secret=fay_key).status == 404
    share(backend, cred["id"], {"membershipId": fay["id"], "role": "user"})
    assert ids(backend, fay_key) == {own["id"]: "owner", cred["id"]: "user"}
    r = token(backend, cred["id"], secret=fay_key, reason="agent run")
    assert r.status == 200
    entry = backend.api("GET", f"/v1/credentials/{cred['id']}/access-log").body["entries"][0]
    assert entry["membershipId"] == fay["id"]
    keys = backend.api("GET", "/v1/keys", secret=fay_s).body
    key_ids = {k["id"] for k in (keys.get("keys") if isinstance(keys, dict) else keys)}
    assert entry["keyId"] in key_ids, "the access log names the platform key that asked"
    # The owner's list still shows only what the owner owns.
    assert ids(backend, backend.owner_token) == {cred["id"]: "owner"}


def test_list_pagination_and_entry_fields(backend, cred):
    more = [make_credential(backend.workspace, backend.owner["id"], "twosecret", {"accountSid": "a", "authToken": "b"})
            for _ in range(4)]
    seen, cursor = [], None
    while True:
        r = backend.api("GET", "/v1/credentials", query={"limit": "2", **({"cursor": cursor} if cursor else {})})
        assert r.status == 200
        assert len(r.body["credentials"]) <= 2
        seen += r.body["credentials"]
        cursor = r.body["nextCursor"]
        if not cursor:
            break
    assert [c["id"] for c in seen] == [cred["id"]] + [m["id"] for m in more]
    assert set(seen[0]) == LIST_KEYS
    assert seen[0]["envVars"] == {"accountSid": "TWO_ACCOUNT_SID", "authToken": "TWO_AUTH_TOKEN"}
    assert backend.api("GET", "/v1/credentials", query={"cursor": "!!bad"}).status == 400
    assert backend.api("GET", "/v1/credentials", query={"limit": "0"}).status == 400
    assert backend.api("GET", "/v1/credentials", query={"limit": "501"}).status == 400


def test_access_log_is_newest_first_and_paginates(backend, cred):
    for i in range(5):
        assert token(backend, cred["id"], reason=f"run {i}").status == 200
    r = backend.api("GET", f"/v1/credentials/{cred['id']}/access-log", query={"limit": "2"})
    assert [e["reason"] for e in r.body["entries"]] == ["run 4", "run 3"]
    r2 = backend.api("GET", f"/v1/credentials/{cred['id']}/access-log",
                     query={"limit": "10", "cursor": r.body["nextCursor"]})
    assert [e["reason"] for e in r2.body["entries"]] == ["run 2", "run 1", "run 0"]
    assert r2.body["nextCursor"] is None
    assert all(e["fields"] == ["accountSid", "authToken"] for e in r2.body["entries"])
