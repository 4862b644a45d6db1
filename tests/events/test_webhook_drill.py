"""Deliveries by `wsctl serve`'s sender: event-driven, retried with back-off, given up after the
last attempt; and the kill -9 drill: a replica dies holding a delivery's lease mid-call, another
replica delivers it once. Every wait is for a state (a call arriving, a row changing), never a time.
"""
from __future__ import annotations

import signal

import pytest

from tests.conftest import WAIT_LIMIT, base_env, free_port, make_backend, pg_env, start_server, wait_until
from tests.events.receiver import Receiver
from tests.vault_helpers import APIKEY_TOML, install_service, make_credential, open_ws

FAST = {"WSCTL_WEBHOOK_INTERVAL": "0.05", "WSCTL_WEBHOOK_BACKOFF_SECONDS": "0"}
LEASE_SECONDS = 60   # engine/events/delivery.LEASE_SECONDS


def deliveries(location) -> list[dict]:
    with open_ws(location) as ws:
        rows = ws.conn().execute("SELECT d.id, d.webhook_id, d.status, d.attempts, d.lease_holder, e.type "
                                 "FROM webhook_deliveries d JOIN events e ON e.seq = d.event_seq "
                                 "ORDER BY d.seq").fetchall()
        return [dict(zip(("id", "webhook", "status", "attempts", "holder", "type"), r)) for r in rows]


def subscribe(backend, url: str, events: list[str]) -> dict:
    r = backend.api("POST", "/v1/webhooks", {"url": url, "events": events})
    assert r.status == 201, r.body
    return r.body


def test_sender_delivers_retries_and_gives_up(workspace, home, tmp_path):
    server = start_server(workspace, {**base_env(tmp_path / "server-home"), **FAST}, args=("--memory-interval", "0"))
    backend = make_backend("remote", workspace, home, server=server)
    try:
        with Receiver() as receiver:
            receiver.fail_first = 2
            hook = subscribe(backend, receiver.url, ["member.added"])
            receiver.secret = hook["secret"]
            dead = subscribe(backend, f"http://127.0.0.1:{free_port()}/gone", ["member.*"])
            member = backend.add_member("rue@example.com")
            backend.ok("POST", "/v1/keys", {"kind": "personal", "scopes": ["skills:manage"]})  # subscribed by none
            # Every credential event to a third subscriber: their bodies carry no secret.
            with Receiver() as everything:
                everything.secret = subscribe(backend, everything.url, ["credential.*"])["secret"]
                install_service(workspace, APIKEY_TOML.format(base="http://127.0.0.1:9"))
                cred = make_credential(workspace, backend.owner["id"], "keysvc", {"apiKey": "sk-CANARY-w1"})
                backend.ok("PUT", f"/v1/vault/credentials/{cred['id']}/data", {"apiKey": "sk-CANARY-w2"})
                everything.wait_for(lambda calls: len(everything.acked()) == 2)
                assert [p["type"] for _, p in everything.acked()] == ["credential.connected", "credential.updated"]
                assert all(c[2] for c in everything.calls) and not any(b"CANARY" in b for b in everything.bodies)
            receiver.wait_for(lambda calls: len(calls) >= 3)
            wait_until(lambda: {d["status"] for d in deliveries(workspace)} == {"delivered", "failed"},
                       "the deliveries ended", server.proc, server.log)
            ids = {c[0] for c in receiver.calls}
            assert len(receiver.calls) == 3 and len(ids) == 1 and all(c[2] for c in receiver.calls)
            assert [c[3] for c in receiver.calls] == [500, 500, 204]
            assert receiver.calls[-1][1]["type"] == "member.added" and receiver.calls[-1][1]["subjectId"] == member["id"]
            log = backend.ok("GET", f"/v1/webhooks/{hook['id']}/deliveries")["deliveries"]
            assert [(d["status"], d["attempts"], d["lastStatus"]) for d in log] == [("delivered", 3, 204)]
            (gone,) = backend.ok("GET", f"/v1/webhooks/{dead['id']}/deliveries")["deliveries"]
            assert gone["status"] == "failed" and gone["attempts"] == 8 and gone["lastStatus"] is None
            assert "ConnectError" in gone["lastError"] and gone["nextAttemptAt"] is None
    finally:
        backend.close()


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_kill_9_mid_delivery_another_replica_delivers_once(store, request, home, tmp_path):
    """Replica A claims the delivery and calls the subscriber, which holds the call; A is killed
    with SIGKILL right then. Replica B (whose clock is past A's lease, as it would be once the
    lease ran out) takes the delivery and delivers it: one acknowledged call, the same webhook-id."""
    if store == "postgres":
        location = request.getfixturevalue("pg_workspace")
        databases = request.getfixturevalue("pg_databases")

        def env(name):
            return {**pg_env(tmp_path / f"{name}-home", databases), "WSCTL_BLOB_DIR": str(location / "blobs"), **FAST}
    else:
        location = request.getfixturevalue("workspace")

        def env(name):
            return {**base_env(tmp_path / f"{name}-home"), **FAST}
    a = start_server(location, env("a"), log=tmp_path / "a.log", args=("--memory-interval", "0"))
    backend = make_backend("remote", location, home, server=a)
    b = None
    try:
        with Receiver() as receiver:
            receiver.block_first = True
            hook = subscribe(backend, receiver.url, ["member.added"])
            receiver.secret = hook["secret"]
            backend.add_member("kim@example.com")
            assert receiver.holding.wait(WAIT_LIMIT), "replica A never called the subscriber"
            a.proc.send_signal(signal.SIGKILL)
            assert a.proc.wait(WAIT_LIMIT) == -signal.SIGKILL
            (held,) = deliveries(location)
            assert held["status"] == "pending" and held["attempts"] == 1 and held["holder"]   # A's lease, A gone
            receiver.release.set()   # the held call ends (answered 500 into a dead socket)
            b = start_server(location, env("b"), offset=LEASE_SECONDS + 5, log=tmp_path / "b.log",
                             args=("--memory-interval", "0"))
            receiver.wait_for(lambda calls: any(200 <= c[3] < 300 for c in calls))
            wait_until(lambda: deliveries(location)[0]["status"] == "delivered", "B recorded the delivery",
                       b.proc, b.log)
            (done,) = deliveries(location)
            assert done["attempts"] == 2 and done["holder"] is None and done["id"] == held["id"]
            acked = receiver.acked()
            assert len(acked) == 1 and acked[0][0] == held["id"] and acked[0][1]["type"] == "member.added"
            assert all(c[0] == held["id"] and c[2] for c in receiver.calls) and len(receiver.calls) == 2
    finally:
        backend.close()
        if b is not None:
            b.stop()
