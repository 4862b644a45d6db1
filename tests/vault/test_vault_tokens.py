"""Tokens: reason rules, usable fields only, audit rows, refresh near expiry, invalid_grant, back-off.

Every test runs on both backends (local in-process engine, remote `wsctl serve`).
"""
from __future__ import annotations

import json

import pytest

from tests.conftest import base_env, serve, workspace_db
from tests.vault_helpers import (
    APIKEY_TOML,
    TWO_SECRET_TOML,
    canary_scan,  # noqa: F401  (a fixture, named by pytestmark)
    install_service,
    make_credential,
    oauth_credential,
    open_ws,
    token,
)

pytestmark = pytest.mark.usefixtures("canary_scan")


@pytest.fixture
def keysvc(backend, provider):
    install_service(backend.workspace, APIKEY_TOML.format(base=provider.url))
    return make_credential(backend.workspace, backend.owner["id"], "keysvc", {"apiKey": "sk-CANARY-apikey-1"},
                           {"instanceUrl": "https://acme.example"})


@pytest.fixture
def loopcrm(backend, provider):
    install_service(backend.workspace, provider.service_toml("loopcrm"))
    return "loopcrm"


def test_api_key_token_has_usable_fields_and_an_audit_row(backend, keysvc):
    r = token(backend, keysvc["id"], reason="deploy script")
    assert r.status == 200, r.body
    assert r.body == {"apiKey": "sk-CANARY-apikey-1", "instanceUrl": "https://acme.example"}
    log = backend.api("GET", f"/v1/credentials/{keysvc['id']}/access-log")
    assert log.status == 200
    (entry,) = log.body["entries"]
    assert entry["reason"] == "deploy script"
    assert entry["outcome"] == "issued"
    assert entry["membershipId"] == backend.owner["id"]
    assert entry["fields"] == ["apiKey", "instanceUrl"]
    assert entry["keyId"]
    assert entry["at"].endswith("Z")


def test_multi_secret_api_key_answers_each_secret_field(backend):
    install_service(backend.workspace, TWO_SECRET_TOML)
    cred = make_credential(backend.workspace, backend.owner["id"], "twosecret",
                           {"accountSid": "AC-CANARY-1", "authToken": "tok-CANARY-2"})
    r = token(backend, cred["id"])
    assert r.status == 200
    assert r.body == {"accountSid": "AC-CANARY-1", "authToken": "tok-CANARY-2"}


@pytest.mark.parametrize("body", [None, {}, {"reason": ""}, {"reason": "   "}, {"reason": "x" * 501},
                                  {"reason": 5}, {"reason": None}, ["reason"], "reason"])
def test_reason_is_required_1_to_500_chars(backend, keysvc, body):
    r = backend.api("POST", f"/v1/credentials/{keysvc['id']}/token", body)
    assert r.status == 400, r.body
    assert r.code == "invalid_request"
    assert "reason" in r.body["error"]["message"]
    assert backend.api("GET", f"/v1/credentials/{keysvc['id']}/access-log").body["entries"] == []


def test_reason_of_500_chars_is_accepted(backend, keysvc):
    r = token(backend, keysvc["id"], reason="r" * 500)
    assert r.status == 200
    entries = backend.api("GET", f"/v1/credentials/{keysvc['id']}/access-log").body["entries"]
    assert entries[0]["reason"] == "r" * 500


def test_unknown_credential_is_404_and_personal_key_is_insufficient_scope(backend, keysvc):
    r = token(backend, "cred_doesnotexist")
    assert r.status == 404 and r.code == "not_found"
    personal = backend.key("personal", ["projects:manage"])
    r = token(backend, keysvc["id"], secret=personal)
    assert r.status == 403 and r.code == "insufficient_scope"
    platform_read = backend.key("platform", ["vault:read"])
    assert token(backend, keysvc["id"], secret=platform_read).code == "insufficient_scope"
    platform = backend.key("platform", ["vault:token"])
    r = token(backend, keysvc["id"], secret=platform, reason="ci")
    assert r.status == 200 and r.body["apiKey"] == "sk-CANARY-apikey-1"
    entry = backend.api("GET", f"/v1/credentials/{keysvc['id']}/access-log").body["entries"][0]
    assert entry["membershipId"] == backend.owner["id"] and entry["reason"] == "ci"
    # The access log needs vault:read (the owner's key), not vault:token.
    log = f"/v1/credentials/{keysvc['id']}/access-log"
    assert backend.api("GET", log, secret=platform_read).body["entries"][0]["keyId"] == entry["keyId"]
    assert backend.api("GET", log, secret=platform).code == "insufficient_scope"


def test_fresh_oauth_token_is_not_refreshed_and_never_shows_the_refresh_token(backend, provider, loopcrm):
    cred, grant = oauth_credential(backend, provider, expires_in=3600)
    r = token(backend, cred["id"])
    assert r.status == 200
    assert set(r.body) == {"accessToken", "expiresAt", "tokenType"}
    assert r.body["accessToken"] == grant["access_token"]
    assert r.body["tokenType"] == "Bearer"
    assert provider.refreshes == 0
    for path in (f"/v1/credentials/{cred['id']}", "/v1/credentials",
                 f"/v1/vault/credentials/{cred['id']}/editable-fields"):
        text = json.dumps(backend.api("GET", path).body)
        assert grant["refresh_token"] not in text and grant["access_token"] not in text


def test_token_within_60_s_of_expiry_is_refreshed_first(backend, provider, loopcrm):
    cred, grant = oauth_credential(backend, provider, expires_in=59)
    r = token(backend, cred["id"])
    assert r.status == 200, r.body
    assert provider.refreshes == 1
    assert r.body["accessToken"] != grant["access_token"]
    assert r.body["accessToken"] == provider.issued[-1]["access_token"]
    # The new token lasts an hour: the next request does not refresh again.
    r2 = token(backend, cred["id"])
    assert r2.body["accessToken"] == r.body["accessToken"] and provider.refreshes == 1
    assert backend.api("GET", f"/v1/credentials/{cred['id']}").body["scopes"] == ["contacts.read", "contacts.write"]


def test_token_minutes_before_expiry_is_issued_as_is(backend, provider, loopcrm):
    # 5 minutes, not 61 s: the margin is 60 s, and a busy machine must not cross it mid-test
    cred, grant = oauth_credential(backend, provider, expires_in=5 * 60)
    r = token(backend, cred["id"])
    assert r.status == 200 and r.body["accessToken"] == grant["access_token"]
    assert provider.refreshes == 0


def test_the_margin_fits_the_token_lifetime(backend, provider, loopcrm):
    """Issue 25: the margin is 60 s or a quarter of the token's lifetime when less. A 40 s token
    just obtained (margin 10 s) is issued as is, though a 60 s margin would refresh it on every
    call; a one-hour token with 50 s left is refreshed (margin 60 s); and the 40 s token the
    provider then hands out is issued as is by the next request."""
    short, short_grant = oauth_credential(backend, provider, expires_in=40, lifetime=None)
    r = token(backend, short["id"])
    assert r.status == 200 and r.body["accessToken"] == short_grant["access_token"]
    assert provider.refreshes == 0
    long, _ = oauth_credential(backend, provider, expires_in=50, lifetime=3600)
    provider.expires_in = 40
    r = token(backend, long["id"])
    assert r.status == 200 and r.body["accessToken"] == provider.issued[-1]["access_token"]
    assert provider.refreshes == 1
    again = token(backend, long["id"])
    assert again.body["accessToken"] == r.body["accessToken"] and provider.refreshes == 1


def test_rotated_refresh_token_is_saved_and_omitted_one_is_kept(backend, provider, loopcrm):
    # Rotating provider: the old refresh token dies at each refresh, so a second refresh only
    # works if the rotated one was saved.
    cred, _ = oauth_credential(backend, provider, expires_in=10)
    assert token(backend, cred["id"]).status == 200
    _expire_now(backend, cred["id"])
    r = token(backend, cred["id"])
    assert r.status == 200, r.body
    assert provider.refreshes == 2
    # Non-rotating provider: the answer omits refresh_token; the stored one must be kept.
    provider.rotate_refresh = False
    cred2, _ = oauth_credential(backend, provider, expires_in=10)
    assert token(backend, cred2["id"]).status == 200
    _expire_now(backend, cred2["id"])
    r = token(backend, cred2["id"])
    assert r.status == 200, r.body
    assert provider.refreshes == 4


def _expire_now(backend, cred_id: str) -> None:
    """Make the stored access token expire (as time passing would)."""
    con = workspace_db(backend.workspace)
    con.execute("UPDATE credentials SET expires_at = '2000-01-01T00:00:00Z' WHERE id = ?", (cred_id,))
    con.close()


TEN_YEARS = 10 * 365 * 24 * 3600


def test_odd_expires_in_from_the_provider_is_clamped_never_a_500(backend, provider, loopcrm):
    """expires_in beyond ten years counts as ten years; zero, negative or not a number means no
    expiry (as if none were sent); a numeric string is read as the number."""
    from workspacectl import clock

    cases = [(1e20, TEN_YEARS), (10 ** 30, TEN_YEARS), (float("inf"), TEN_YEARS), ("1e999", TEN_YEARS),
             (-5, None), (0, None), (-1e308, None), (float("nan"), None), ("abc", None), (True, None),
             (None, None), ([3600], None), ("3600", 3600)]
    for answer, lifetime in cases:
        cred, _ = oauth_credential(backend, provider, expires_in=5)
        provider.expires_in_answer = answer
        r = token(backend, cred["id"])
        assert r.status == 200, (answer, r.body)
        assert r.body["accessToken"] == provider.issued[-1]["access_token"], answer
        stored = backend.ok("GET", f"/v1/credentials/{cred['id']}")["expiresAt"]
        if lifetime is None:
            assert "expiresAt" not in r.body and stored is None, (answer, r.body, stored)
        else:
            left = (clock.parse_iso(r.body["expiresAt"]) - clock.now()).total_seconds()
            assert lifetime - 120 < left <= lifetime + 1 and stored == r.body["expiresAt"], (answer, left)
    assert provider.refreshes == len(cases)


def test_invalid_grant_marks_needs_reconnect_and_stops_refreshing(backend, provider, loopcrm):
    cred, _ = oauth_credential(backend, provider, expires_in=5)
    provider.mode = "invalid_grant"
    r = token(backend, cred["id"])
    assert r.status == 502 and r.code == "upstream_failed"
    assert "wsctl vault connect loopcrm" in r.body["error"]["message"]
    assert provider.refreshes == 1
    listed = backend.api("GET", "/v1/credentials").body["credentials"]
    assert [c["status"] for c in listed if c["id"] == cred["id"]] == ["needs_reconnect"]
    provider.mode = "ok"
    r = token(backend, cred["id"])
    assert r.status == 502 and "wsctl vault connect" in r.body["error"]["message"]
    assert provider.refreshes == 1, "no refresh attempt after invalid_grant until reconnected"
    synced = backend.api("POST", f"/v1/vault/credentials/{cred['id']}/sync")
    assert synced.status == 200 and synced.body["status"] == "needs_reconnect", synced.body
    assert provider.refreshes == 1, "sync does not call the provider either until reconnected"
    entries = backend.api("GET", f"/v1/credentials/{cred['id']}/access-log").body["entries"]
    assert entries == []


def _audit_log_writable(workspace, writable: bool) -> None:
    """Make inserts into the access log fail (a real trigger in the workspace's database), or work again."""
    con = workspace_db(workspace)
    if getattr(con, "dialect", "") == "postgres":
        con.execute_script("DROP TRIGGER audit_down ON credential_access_log; DROP FUNCTION audit_down()" if writable
                           else "CREATE FUNCTION audit_down() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                                "RAISE EXCEPTION 'the access log cannot be written'; END $$; "
                                "CREATE TRIGGER audit_down BEFORE INSERT ON credential_access_log "
                                "FOR EACH ROW EXECUTE FUNCTION audit_down()")
    elif writable:
        con.execute("DROP TRIGGER audit_down")
    else:
        con.execute("CREATE TRIGGER audit_down BEFORE INSERT ON credential_access_log "
                    "BEGIN SELECT RAISE(ABORT, 'the access log cannot be written'); END")
    con.close()


def test_no_audit_row_no_token(backend, provider, loopcrm, keysvc):
    """The access-log row is written in the transaction that releases the token: when the row
    cannot be written, no token leaves the vault. A refresh made first is kept, not lost."""
    cred, _ = oauth_credential(backend, provider, expires_in=5)
    _audit_log_writable(backend.workspace, False)
    for cred_id in (keysvc["id"], cred["id"]):
        r = backend.wsctl("vault", "token", cred_id, "--reason", "audit down", expect=1)
        assert r.out == "" and "CANARY" not in r.err, r.err
        if backend.kind == "remote":
            answer = token(backend, cred_id)
            assert answer.status == 500 and "CANARY" not in json.dumps(answer.body), answer.body
    assert provider.refreshes == 1, "the refresh ran once and was saved"
    _audit_log_writable(backend.workspace, True)
    assert backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"] == []
    r = token(backend, cred["id"], reason="audit back")
    assert r.status == 200 and r.body["accessToken"] == provider.issued[-1]["access_token"], r.body
    assert provider.refreshes == 1, "the token refreshed while the log was down is the one issued now"
    entries = backend.ok("GET", f"/v1/credentials/{cred['id']}/access-log")["entries"]
    assert [(e["reason"], e["outcome"]) for e in entries] == [("audit back", "issued")]


def _token_at(backend, cred_id: str, offset: int, reason: str):
    """POST .../token on a server whose clock runs `offset` seconds ahead (a real HTTP answer)."""
    import httpx

    with serve(backend.workspace, base_env(backend.workspace.parent / f"home-{offset}"), offset=offset) as url:
        return httpx.post(f"{url}/v1/credentials/{cred_id}/token", json={"reason": reason},
                          headers={"Authorization": f"Bearer {backend.owner_token}"}, timeout=60, trust_env=False)


def test_provider_failure_backs_off_30_s(backend, provider, loopcrm):
    """The failure is recorded on a clock 10 minutes ahead, so its 30 s back-off is still running
    when the door under test asks, however slow the machine; a clock 2 minutes past it refreshes."""
    ahead = 10 * 60
    cred, _ = oauth_credential(backend, provider, expires_in=5)
    provider.mode = "error5xx"
    failed = _token_at(backend, cred["id"], ahead, "fails")
    assert failed.status_code == 502 and failed.json()["error"]["code"] == "upstream_failed", failed.text
    assert provider.refreshes == 1
    provider.mode = "ok"
    r = token(backend, cred["id"])
    assert r.status == 502 and "paused" in r.body["error"]["message"]
    assert provider.refreshes == 1, "no provider call during the back-off"
    assert backend.api("GET", f"/v1/credentials/{cred['id']}").body["status"] == "ok"
    late = _token_at(backend, cred["id"], ahead + 2 * 60, "later")
    assert late.status_code == 200, late.text
    assert provider.refreshes == 2


def test_a_missing_oauth_client_is_a_409_that_says_how_to_fix_it_and_never_backs_off(backend, provider):
    """An admin's configuration problem, not a provider failure: no provider call, no 30 s pause;
    the first request after the client is set refreshes."""
    install_service(backend.workspace, provider.service_toml("noclient").replace(
        f'clientId = "{provider.client_id}"\n', "").replace(f'clientSecret = "{provider.client_secret}"\n', ""))
    cred, _ = oauth_credential(backend, provider, service="noclient", expires_in=5)
    for _ in range(2):
        r = token(backend, cred["id"])
        assert (r.status, r.code) == (409, "conflict"), r.body
        message = r.body["error"]["message"]
        assert "no OAuth client" in message and "wsctl catalog oauth-client noclient --client-id" in message
        assert "paused" not in message
    sync = backend.api("POST", f"/v1/vault/credentials/{cred['id']}/sync")
    assert (sync.status, sync.code) == (409, "conflict"), sync.body
    assert provider.refreshes == 0 and ("POST", "/token") not in provider.requests
    assert backend.ok("GET", f"/v1/credentials/{cred['id']}")["status"] == "ok"
    backend.ok("PUT", "/v1/admin/catalog/noclient/oauth-client",
               {"clientId": provider.client_id, "clientSecret": provider.client_secret})
    r = token(backend, cred["id"])
    assert r.status == 200 and r.body["accessToken"] == provider.issued[-1]["access_token"], r.body
    assert provider.refreshes == 1


def test_an_expiry_outside_years_1_to_9999_in_utc_is_refused_not_a_crash(workspace):
    """create/reconnect_credential normalise expiresAt to UTC; a time that overflows there (or a
    value that is no time at all) is a 400, never an internal error."""
    from workspacectl.engine.store.identity import first_owner
    from workspacectl.engine.vault.credentials import create_credential, reconnect_credential
    from workspacectl.errors import ApiError

    install_service(workspace, APIKEY_TOML.format(base="http://127.0.0.1:9"))
    ws = open_ws(workspace)
    conn = ws.conn()
    owner = first_owner(conn)["id"]
    cred = create_credential(ws, conn, owner_member_id=owner, service="keysvc", secrets={"apiKey": "k"}, fields={},
                             expires_at="2030-01-01T02:00:00+02:00")
    assert cred["expiresAt"] == "2030-01-01T00:00:00Z"
    for bad in ("9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00", 12345, "soon", ["2030"]):
        for make in (lambda bad=bad: create_credential(ws, conn, owner_member_id=owner, service="keysvc",
                                                       secrets={"apiKey": "k"}, fields={}, expires_at=bad),
                     lambda bad=bad: reconnect_credential(ws, conn, cred["id"], secrets={"apiKey": "k2"},
                                                          expires_at=bad)):
            with pytest.raises(ApiError) as e:
                make()
            assert e.value.code == "invalid_request" and "ISO 8601" in e.value.message, bad
    assert conn.execute("SELECT count(*) FROM credentials").fetchone()[0] == 1
    conn.close()


def test_token_through_the_cli_api_command(backend, keysvc):
    r = backend.wsctl("api", "POST", f"/v1/credentials/{keysvc['id']}/token", "--data", '{"reason": "cli"}')
    assert json.loads(r.out)["apiKey"] == "sk-CANARY-apikey-1"
    r = backend.wsctl("api", "POST", f"/v1/credentials/{keysvc['id']}/token", "--data", "{}", expect=7)
    assert "reason" in r.err
