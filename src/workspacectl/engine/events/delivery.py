"""Sending webhook deliveries: claimed with a lease, signed, retried with back-off.

A delivery row is made with its event (record.py). A sender (each `wsctl serve` process's
webhook thread, server/webhook_worker.py; a test call, webhooks.py) reads the due rows, then
claims them a few at a time (CLAIM_BATCH) right before their calls, in a short write transaction:
the claim sets `lease_holder`/`lease_until` (LEASE_SECONDS, past the CLAIM_BATCH calls of
TIMEOUT_SECONDS it covers) and counts the attempt. The HTTP call runs holding no transaction;
its outcome is saved only while the lease is still the sender's. So of several processes on one
workspace (workers, replicas on PostgreSQL) at most one sends a delivery at a time; a sender that
dies mid-call leaves the row pending with its lease, and once the lease expires any other sender
(or the restarted one) takes it: never lost. A subscriber may see an attempt twice after such a
crash (the first never answered back): the `webhook-id` header is the same, for it to drop repeats.

2xx is delivered. Anything else (a status, a refused or timed-out connection, an address the
outbound rules refuse) is retried after BACKOFF (WSCTL_WEBHOOK_BACKOFF_SECONDS, default 5 s)
times 4^(attempt-1), at most MAX_DELAY, until MAX_ATTEMPTS attempts: then `failed`.
Redirects are not followed (a 3xx is a failed attempt).
"""
from __future__ import annotations

import json
import logging
import os
import sqlite3
from datetime import timedelta
from typing import TYPE_CHECKING

from workspacectl import clock
from workspacectl.engine import crypto
from workspacectl.engine.db import transaction
from workspacectl.engine.events.record import event_json
from workspacectl.engine.events.signing import headers
from workspacectl.engine.store import events as store
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    import httpx

    from workspacectl.engine.db.conn import Conn
    from workspacectl.engine.workspaces.folder import Workspace

LEASE_SECONDS = 60.0
TIMEOUT_SECONDS = 10.0
MAX_ATTEMPTS = 8
BACKOFF_ENV = "WSCTL_WEBHOOK_BACKOFF_SECONDS"
DEFAULT_BACKOFF = 5.0
MAX_DELAY = 6 * 3600.0
BATCH = 20
CLAIM_BATCH = int(LEASE_SECONDS // TIMEOUT_SECONDS) - 1   # 5: claimed together, sent one after another
DELIVERIES_LOCK = "webhook-deliveries"   # db.transaction's resource for claims and outcomes (PostgreSQL)
log = logging.getLogger("wsctl.webhooks")


def secret_aad(webhook_id: str) -> str:
    return f"webhook:{webhook_id}"


def backoff_base() -> float:
    raw = os.environ.get(BACKOFF_ENV, "").strip()
    if not raw:
        return DEFAULT_BACKOFF
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 86400:   # also refuses NaN
        raise ApiError("invalid_request", f"{BACKOFF_ENV} must be a number of seconds from 0 to 86400 "
                                          f"(default {DEFAULT_BACKOFF:g}); fix or unset it.")
    return value


def retry_delay(attempts: int) -> float:
    return min(backoff_base() * 4 ** max(attempts - 1, 0), MAX_DELAY)


def delivery_json(row: sqlite3.Row) -> dict:
    return {"id": row["id"], "webhookId": row["webhook_id"], "eventId": row["event_id"], "eventType": row["event_type"],
            "status": row["status"], "attempts": row["attempts"], "lastAttemptAt": row["last_attempt_at"],
            "lastStatus": row["last_status"], "lastError": row["last_error"],
            "nextAttemptAt": row["next_attempt_at"] if row["status"] == "pending" else None,
            "deliveredAt": row["delivered_at"], "createdAt": row["created_at"]}


def claim(conn: Conn, holder: str, seqs: list[int] | None = None, limit: int = BATCH) -> list[int]:
    """Take the lease of due deliveries (or of `seqs`, due or not); answers those taken.

    The due ones are looked for with a plain read: a sender with nothing to do (nearly every tick)
    takes no write lock. Each claim's UPDATE re-checks the row (still pending, lease free), so of
    two senders that read the same row only one takes it. On PostgreSQL the claim and the outcome
    lock only the deliveries (DELIVERIES_LOCK), never the whole workspace."""
    now = clock.now()
    at, until = clock.iso(now), clock.iso(now + timedelta(seconds=LEASE_SECONDS))
    wanted = store.due_deliveries(conn, at, limit) if seqs is None else seqs
    if not wanted:
        return []
    with transaction(conn, locks=[DELIVERIES_LOCK]):
        return [s for s in wanted if store.claim_delivery(conn, s, holder, at, until)]


def send(ws: Workspace, seq: int, holder: str, client: httpx.Client | None = None) -> str | None:
    """One attempt of a claimed delivery; saves its outcome. Answers the status saved, or None when
    the row is gone (its subscription was removed) or the lease was lost meanwhile. `client`: an
    httpx.Client to reuse (a batch shares one: making one costs a TLS context)."""
    conn = ws.conn()
    row = store.delivery_to_send(conn, seq)
    if row is None:
        return None
    if client is None:
        with new_client() as own:
            code, error = _post(ws, row, own)
    else:
        code, error = _post(ws, row, client)
    now = clock.now()
    if code is not None and 200 <= code < 300:
        status, next_at = "delivered", None
    elif row["attempts"] >= MAX_ATTEMPTS:
        status, next_at = "failed", None
    else:
        status, next_at = "pending", clock.iso(now + timedelta(seconds=retry_delay(row["attempts"])))
    with transaction(conn, locks=[DELIVERIES_LOCK]):
        kept = store.finish_delivery(conn, seq, holder, status=status, next_attempt_at=next_at, last_status=code,
                                     last_error=error, now=clock.iso(now))
    log.info("webhook %s %s attempt %d: %s%s", row["webhook_id"], row["id"], row["attempts"],
             f"HTTP {code}" if code is not None else error, "" if kept else " (lease lost: not recorded)")
    return status if kept else None


def new_client() -> httpx.Client:
    """The HTTP client deliveries are sent with: no redirects followed, TIMEOUT_SECONDS a call."""
    import httpx

    return httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=False, trust_env=False)


def _post(ws: Workspace, row: sqlite3.Row, client: httpx.Client) -> tuple[int | None, str | None]:
    """(HTTP status or None, error text or None). Never raises for the network or the address."""
    import httpx

    from workspacectl.engine.catalog.urls import pin

    body = json.dumps(event_json(row, row["event_id"]), separators=(",", ":")).encode()
    try:
        secret = crypto.unseal(ws, secret_aad(row["webhook_id"]), bytes(row["secret_sealed"])).decode()
        target = pin(row["url"], "the webhook")
        resp = client.post(target.url, content=body, headers={**headers(secret, row["id"], body), **target.headers},
                           extensions=target.extensions)
    except ApiError as e:
        return None, e.message[:300]
    except httpx.HTTPError as e:
        return None, f"{type(e).__name__}: the call failed"
    return resp.status_code, None if 200 <= resp.status_code < 300 else f"HTTP {resp.status_code}"


def deliver_due(ws: Workspace, holder: str, limit: int = BATCH, outcomes: dict | None = None) -> int:
    """Send the due deliveries (at most `limit`), claimed a few at a time right before their calls;
    answers how many were due (those another sender took meanwhile are left to it)."""
    conn = ws.conn()
    due = store.due_deliveries(conn, clock.now_iso(), limit)
    if due:
        with new_client() as client:
            # Claimed CLAIM_BATCH at a time, each group just before its calls: the last call of a
            # group ends within CLAIM_BATCH * TIMEOUT_SECONDS < LEASE_SECONDS of the claim, so no
            # lease runs out while its delivery waits its turn.
            for i in range(0, len(due), CLAIM_BATCH):
                for seq in claim(conn, holder, seqs=due[i:i + CLAIM_BATCH]):
                    status = send(ws, seq, holder, client)
                    if outcomes is not None and status is not None:
                        outcomes[status] = outcomes.get(status, 0) + 1
    return len(due)
