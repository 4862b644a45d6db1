"""Webhook subscriptions on every door: the secret once, the outbound rules, a signed test call
checked by the `standardwebhooks` library, the delivery log, owner/admin only."""
from __future__ import annotations

import json

import pytest

from tests.events.receiver import Receiver
from tests.vault_helpers import canary_scan  # noqa: F401  (a fixture, named by pytestmark)

pytestmark = pytest.mark.usefixtures("canary_scan")


@pytest.fixture
def receiver():
    with Receiver() as r:
        yield r


def test_subscribe_test_call_and_log(backend, receiver):
    r = backend.api("POST", "/v1/webhooks", {"url": receiver.url, "events": ["credential.*", "key.created"]})
    assert r.status == 201, r.body
    hook = r.body
    assert hook["id"].startswith("wh_") and hook["secret"].startswith("whsec_")
    assert hook["events"] == ["credential.*", "key.created"] and hook["createdBy"] == backend.owner["id"]
    receiver.secret = hook["secret"]
    from tests.conftest import workspace_at_rest

    secret_bytes = hook["secret"].encode()
    assert [place for place, data in workspace_at_rest(backend.workspace).items() if secret_bytes in data] == []
    listed = backend.ok("GET", "/v1/webhooks")["webhooks"]
    assert [w["id"] for w in listed] == [hook["id"]] and "secret" not in listed[0]
    assert "secret" not in backend.ok("GET", f"/v1/webhooks/{hook['id']}")

    d = backend.ok("POST", f"/v1/webhooks/{hook['id']}/test")
    assert d["status"] == "delivered" and d["attempts"] == 1 and d["lastStatus"] == 204, d
    assert d["eventType"] == "webhook.test" and d["nextAttemptAt"] is None
    (msg_id, payload, verified, status), = receiver.calls
    assert verified and status == 204 and msg_id == d["id"]
    assert payload["type"] == "webhook.test" and payload["id"] == d["eventId"]
    assert payload["subjectId"] == hook["id"] and payload["actorId"] == backend.owner["id"]

    # A subscriber refusing the call: the delivery stays pending for a retry, the log says why.
    receiver.fail_first = 2   # the one call so far counts: the next one is the second
    d2 = backend.ok("POST", f"/v1/webhooks/{hook['id']}/test")
    assert d2["status"] == "pending" and d2["lastStatus"] == 500 and d2["lastError"] == "HTTP 500"
    assert d2["nextAttemptAt"] is not None
    log = backend.ok("GET", f"/v1/webhooks/{hook['id']}/deliveries")
    assert [x["id"] for x in log["deliveries"]] == [d2["id"], d["id"]]   # newest first
    assert [x["status"] for x in log["deliveries"]] == ["pending", "delivered"]

    # Through the command line, on the same door.
    out = backend.wsctl("webhooks", "deliveries", hook["id"], "--json")
    assert [x["id"] for x in json.loads(out.out)["deliveries"]] == [d2["id"], d["id"]]
    assert backend.wsctl("webhooks", "remove", hook["id"]).code == 0
    assert backend.api("GET", f"/v1/webhooks/{hook['id']}/deliveries").status == 404
    assert backend.ok("GET", "/v1/webhooks")["webhooks"] == []


def test_cli_add_prints_the_secret_once(backend, receiver):
    out = backend.wsctl("webhooks", "add", receiver.url, "--event", "member.added")
    secret = out.out.strip()
    assert secret.startswith("whsec_") and "shown once" in out.err
    (hook,) = backend.ok("GET", "/v1/webhooks")["webhooks"]
    assert hook["events"] == ["member.added"] and secret not in json.dumps(hook)
    receiver.secret = secret
    test = json.loads(backend.wsctl("webhooks", "test", hook["id"], "--json").out)
    assert test["status"] == "delivered" and receiver.calls[0][2]


@pytest.mark.parametrize("url, why", [
    ("http://169.254.169.254/latest", "link-local"),
    ("http://metadata.google.internal/x", "metadata"),
    ("ftp://example.com/x", "http(s)"),
    ("not a url", "http(s)"),
])
def test_refused_urls(backend, url, why):
    r = backend.api("POST", "/v1/webhooks", {"url": url, "events": ["*"]})
    assert r.status == 400 and r.code == "invalid_request" and why in r.body["error"]["message"], r.body
    assert backend.ok("GET", "/v1/webhooks")["webhooks"] == []


def test_bad_bodies_and_who_may(backend, receiver):
    for body in ({"url": receiver.url, "events": []}, {"url": receiver.url, "events": ["credential.nope"]},
                 {"url": receiver.url, "events": "credential.broken"}, {"events": ["*"]}):
        r = backend.api("POST", "/v1/webhooks", body)
        assert r.status == 400 and r.code == "invalid_request", (body, r.body)
    member = backend.add_member("max@example.com")
    session = backend.session(member["id"])
    r = backend.api("POST", "/v1/webhooks", {"url": receiver.url}, secret=session)
    assert r.status == 403 and r.code == "forbidden"
    key = backend.key("platform", ["vault:read", "vault:manage"])
    assert backend.api("GET", "/v1/webhooks", secret=key).code == "insufficient_scope"
    assert backend.api("DELETE", "/v1/webhooks/wh_nothing").status == 404
    assert backend.api("POST", "/v1/webhooks/wh_nothing/test").status == 404
    assert backend.ok("GET", "/v1/webhooks")["webhooks"] == []



@pytest.mark.parametrize("door", ["local", "remote"])
def test_rotate_key_reseals_the_signing_secret(door, request, home, receiver):
    """Rotation re-seals the signing secret with every other secret. (On the PostgreSQL door the key
    comes from WSCTL_MASTER_KEY, which rotate-key refuses to rotate: docs/api.md §5.)"""
    from tests.conftest import make_backend

    if door == "remote":
        ws, server = request.getfixturevalue("server_pool").take()
        backend = make_backend("remote", ws, home, server)
    else:
        backend = make_backend("local", request.getfixturevalue("workspace"), home)
    try:
        hook = backend.ok("POST", "/v1/webhooks", {"url": receiver.url, "events": ["*"]})
        receiver.secret = hook["secret"]
        r = backend.api("POST", "/v1/admin/rotate-key")
        assert r.status == 200 and r.body["webhooks"] == 1, r.body
        d = backend.ok("POST", f"/v1/webhooks/{hook['id']}/test")
        assert d["status"] == "delivered" and receiver.calls[-1][2]   # the same secret, opened under the new key
    finally:
        backend.close()


def test_deliver_sends_the_due_deliveries_now(backend, receiver):
    """`wsctl webhooks deliver` (POST /v1/webhooks/deliver): what a workspace without a server runs.
    On the server doors the server's own sender may have sent it first: the state is the same."""
    hook = backend.ok("POST", "/v1/webhooks", {"url": receiver.url, "events": ["member.added"]})
    receiver.secret = hook["secret"]
    member = backend.add_member("due@example.com")
    out = json.loads(backend.wsctl("webhooks", "deliver", "--json").out)
    assert set(out) == {"delivered", "pending", "failed"} and out["pending"] == out["failed"] == 0
    if backend.door == "local":
        assert out["delivered"] == 1   # nothing else sends on the local backend
    receiver.wait_for(lambda calls: len(calls) >= 1)
    ((msg_id, payload, verified, status),) = receiver.calls
    assert verified and status == 204 and payload["subjectId"] == member["id"]
    (d,) = backend.ok("GET", f"/v1/webhooks/{hook['id']}/deliveries")["deliveries"]
    assert d["id"] == msg_id and d["status"] == "delivered" and d["attempts"] == 1
    assert backend.ok("POST", "/v1/webhooks/deliver") == {"delivered": 0, "pending": 0, "failed": 0}
    member_session = backend.session(member["id"])
    assert backend.api("POST", "/v1/webhooks/deliver", secret=member_session).code == "forbidden"
