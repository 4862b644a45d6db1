"""record_event: the one way an event is written, by every wing, inside the change's transaction.

An event says what happened, to what, by whom: a dotted type (EVENT_TYPES), the subject's id,
the acting member's id (None for the server's own work: a token refresh, the memory agent) and a
small `data` object of names, ids, counts and reasons. Never a secret: callers pass no secret
value, and `data` is limited to the keys DATA_KEYS lists, so a slip fails loudly in tests.

Each matching webhook subscription gets its delivery row in the same transaction, so an event
that committed is never lost to its subscribers (engine/events/delivery.py sends them).

`seq` order must be commit order (a feed cursor skips what is below it). On PostgreSQL writers of
different resources commit side by side (db.transaction's locks), so a transaction that records
an event first takes the EVENTS_LOCK resource, held to its commit: event writers commit one at a
time, and seq is drawn under that lock. On SQLite the file's one writer already orders them.
"""
from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from workspacectl import clock
from workspacectl.engine.db import lock_resources
from workspacectl.engine.ids import new_id
from workspacectl.engine.store import events as store

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

EVENTS_LOCK = "events"   # the resource every event-recording transaction locks (db.transaction's locks)
EVENT_TYPES = (
    "credential.connected", "credential.reconnected", "credential.refreshed", "credential.broken",
    "credential.updated", "credential.renamed", "credential.shared", "credential.deleted",
    "key.created", "key.revoked",
    "member.added",
    "skill.published",
    "memory.folded",
    "webhook.test",
)
# What `data` may hold: names and ids, never a value of a secret field.
DATA_KEYS = frozenset({"service", "name", "reason", "status", "changed", "grantee", "role", "kind", "scopes",
                       "skill", "version", "source", "ownerType", "membershipId", "folded", "dropped",
                       "webhookId", "email"})


def subscribed(events_json: str, type_: str) -> bool:
    """A subscription's type list (JSON) matches this type: "*", the type, or "credential.*"."""
    try:
        wanted = json.loads(events_json)
    except ValueError:
        return False
    return any(w in ("*", type_) or (w.endswith(".*") and type_.startswith(w[:-1]))
               for w in wanted if isinstance(w, str))


def record_event(conn: Conn, type_: str, *, subject_id: str | None, actor_id: str | None = None, data: dict | None = None,
                 only_webhook: str | None = None) -> str:
    """Write one event and its deliveries; answers the event id. Call inside the transaction of the
    change it records. only_webhook: deliver to that subscription alone (a test call)."""
    if type_ not in EVENT_TYPES:
        raise ValueError(f"unknown event type {type_!r}: add it to EVENT_TYPES")
    data = {k: v for k, v in (data or {}).items() if v is not None}
    extra = set(data) - DATA_KEYS
    if extra:
        raise ValueError(f"event data keys {sorted(extra)} are not in DATA_KEYS (names, ids, counts, never secrets)")
    event_id = new_id("evt")
    now = clock.now_iso()
    lock_resources(conn, EVENTS_LOCK)   # seq order = commit order (see the module)
    seq = store.insert_event(conn, event_id=event_id, type_=type_, at=now, actor_id=actor_id, subject_id=subject_id,
                             data=data)
    for webhook_id, events_json in store.all_webhook_types(conn):
        if (only_webhook is None and subscribed(events_json, type_)) or webhook_id == only_webhook:
            store.insert_delivery(conn, delivery_id=new_id("msg"), webhook_id=webhook_id, event_seq=seq, now=now)
    return event_id


def event_json(row: sqlite3.Row, event_id: str | None = None) -> dict:
    """An event as the feed and a webhook body show it (event_id: when the row's `id` is another's)."""
    try:
        data = json.loads(row["data_json"] or "{}")
    except ValueError:
        data = {}
    return {"id": event_id or row["id"], "type": row["type"],
            "timestamp": row["at"], "actorId": row["actor_id"], "subjectId": row["subject_id"], "data": data}
