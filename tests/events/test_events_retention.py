"""Housekeeping keeps the feed EVENT_DAYS and a delivery log DELIVERY_DAYS, never a pending delivery
or the event it sends (every door's workspace, swept in-process as `wsctl serve`'s timer does)."""
from __future__ import annotations

from datetime import timedelta

from tests.conftest import free_port
from tests.events.receiver import Receiver
from tests.vault_helpers import open_ws


def test_old_events_and_finished_deliveries_go_pending_ones_stay(backend):
    from workspacectl import clock
    from workspacectl.engine import housekeeping

    backend.add_member("old@example.com")
    with Receiver() as receiver:
        live = backend.ok("POST", "/v1/webhooks", {"url": receiver.url, "events": ["*"]})
        receiver.secret = live["secret"]
        assert backend.ok("POST", f"/v1/webhooks/{live['id']}/test")["status"] == "delivered"
    dead = backend.ok("POST", "/v1/webhooks", {"url": f"http://127.0.0.1:{free_port()}/x", "events": ["key.*"]})
    waiting = backend.ok("POST", f"/v1/webhooks/{dead['id']}/test")
    assert waiting["status"] == "pending"
    before = len(backend.ok("GET", "/v1/events")["events"])
    with open_ws(backend.workspace) as ws:
        soon = housekeeping.sweep(ws, clock.now() + timedelta(days=housekeeping.DELIVERY_DAYS - 1))
        assert (soon["events"], soon["deliveries"]) == (0, 0)
        later = housekeeping.sweep(ws, clock.now() + timedelta(days=housekeeping.EVENT_DAYS + 1))
    assert later["deliveries"] == 1 and later["events"] == before - 1, later
    (kept,) = backend.ok("GET", "/v1/events")["events"]   # the event a pending delivery still sends
    assert kept["id"] == waiting["eventId"]
    assert [d["id"] for d in backend.ok("GET", f"/v1/webhooks/{dead['id']}/deliveries")["deliveries"]] == [waiting["id"]]
    assert backend.ok("GET", f"/v1/webhooks/{live['id']}/deliveries")["deliveries"] == []
