"""SQL of the event feed, webhook subscriptions and their deliveries (m027_events).

Plain SQL both SQLite and PostgreSQL accept; times are ISO strings from the clock, which compare
in time order. A delivery's lease (`lease_holder`, `lease_until`) is taken and checked here, each
statement inside the caller's write transaction.
"""
from __future__ import annotations

import json

from workspacectl.engine.db.conn import Conn, Row

# --- events ----------------------------------------------------------------------------------

def insert_event(conn: Conn, *, event_id: str, type_: str, at: str, actor_id: str | None, subject_id: str | None,
                 data: dict) -> int:
    """The new event's seq (its place in the feed)."""
    return conn.execute("INSERT INTO events (id, type, at, actor_id, subject_id, data_json) VALUES (?, ?, ?, ?, ?, ?) "
                        "RETURNING seq", (event_id, type_, at, actor_id, subject_id,
                                          json.dumps(data, separators=(",", ":")))).fetchone()[0]


def list_events(conn: Conn, *, after: int | None, before: int | None, limit: int, types: list[str],
                prefixes: list[str], subjects: list[str], visible_to: str | None, newest_first: bool,
                only: frozenset[str] | None = None) -> list:
    """Events after `after` (oldest first) or before `before` (newest first), at most `limit`.
    types/prefixes: keep events of these types or starting with these ("credential."); subjects:
    of these subject ids. visible_to: a member who is not an owner or admin: only the credential
    events of credentials that member owns or is granted now. only: a limited key's credentials
    (engine/vault/key_limits.py): only the credential events of those."""
    where: list[str] = ["1 = 1"]
    args: dict[str, object] = {"limit": limit}
    if after is not None:
        where.append("e.seq > :after")
        args["after"] = after
    if before is not None:
        where.append("e.seq < :before")
        args["before"] = before
    kinds = []
    for i, t in enumerate(types):
        kinds.append(f"e.type = :t{i}")
        args[f"t{i}"] = t
    for i, p in enumerate(prefixes):
        kinds.append(f"substr(e.type, 1, {len(p)}) = :p{i}")
        args[f"p{i}"] = p
    if kinds:
        where.append("(" + " OR ".join(kinds) + ")")
    if subjects:
        where.append("e.subject_id IN (" + ", ".join(f":s{i}" for i in range(len(subjects))) + ")")
        args.update({f"s{i}": s for i, s in enumerate(subjects)})
    if visible_to is not None:
        where.append("substr(e.type, 1, 11) = 'credential.' AND e.subject_id IN ("
                     "SELECT c.id FROM credentials c WHERE c.owner_member_id = :member UNION "
                     "SELECT g.credential_id FROM credential_grants g WHERE g.grantee IN (:member, 'workspace'))")
        args["member"] = visible_to
    if only is not None:
        ids = sorted(only)
        where.append("substr(e.type, 1, 11) = 'credential.' AND e.subject_id IN ("
                     + (", ".join(f":only{i}" for i in range(len(ids))) or "NULL") + ")")
        args.update({f"only{i}": cred_id for i, cred_id in enumerate(ids)})
    order = "DESC" if newest_first else "ASC"
    return conn.execute(f"SELECT e.* FROM events e WHERE {' AND '.join(where)} ORDER BY e.seq {order} LIMIT :limit",
                        args).fetchall()


def last_event_seq(conn: Conn) -> int:
    return conn.execute("SELECT COALESCE(max(seq), 0) FROM events").fetchone()[0]


# --- webhooks --------------------------------------------------------------------------------

def insert_webhook(conn: Conn, *, webhook_id: str, url: str, events: list[str], secret_sealed: bytes, created_by: str,
                   now: str) -> None:
    conn.execute("INSERT INTO webhooks (id, url, events_json, secret_sealed, created_by, created_at) "
                 "VALUES (?, ?, ?, ?, ?, ?)", (webhook_id, url, json.dumps(events), secret_sealed, created_by, now))


def get_webhook(conn: Conn, webhook_id: str) -> Row:
    return conn.execute("SELECT * FROM webhooks WHERE id = ?", (webhook_id,)).fetchone()


def list_webhooks(conn: Conn, after: str | None, limit: int) -> list:
    return conn.execute("SELECT * FROM webhooks WHERE id > ? ORDER BY id LIMIT ?", (after or "", limit)).fetchall()


def all_webhook_types(conn: Conn) -> list[tuple[str, str]]:
    """(id, events_json) of every subscription: what an event is fanned out to."""
    return [(r[0], r[1]) for r in conn.execute("SELECT id, events_json FROM webhooks ORDER BY id").fetchall()]


def delete_webhook(conn: Conn, webhook_id: str) -> bool:
    conn.execute("DELETE FROM webhook_deliveries WHERE webhook_id = ?", (webhook_id,))
    return conn.execute("DELETE FROM webhooks WHERE id = ?", (webhook_id,)).rowcount > 0


# --- deliveries ------------------------------------------------------------------------------

def insert_delivery(conn: Conn, *, delivery_id: str, webhook_id: str, event_seq: int, now: str) -> None:
    conn.execute("INSERT INTO webhook_deliveries (id, webhook_id, event_seq, next_attempt_at, created_at) "
                 "VALUES (?, ?, ?, ?, ?)", (delivery_id, webhook_id, event_seq, now, now))


_DELIVERY = ("SELECT d.*, e.id AS event_id, e.type AS event_type FROM webhook_deliveries d "
             "JOIN events e ON e.seq = d.event_seq ")


def get_delivery(conn: Conn, delivery_id: str) -> Row:
    return conn.execute(_DELIVERY + "WHERE d.id = ?", (delivery_id,)).fetchone()


def list_deliveries(conn: Conn, webhook_id: str, before: int | None, limit: int) -> list:
    """A subscription's delivery log, newest first."""
    if before is None:
        return conn.execute(_DELIVERY + "WHERE d.webhook_id = ? ORDER BY d.seq DESC LIMIT ?",
                            (webhook_id, limit)).fetchall()
    return conn.execute(_DELIVERY + "WHERE d.webhook_id = ? AND d.seq < ? ORDER BY d.seq DESC LIMIT ?",
                        (webhook_id, before, limit)).fetchall()


def due_deliveries(conn: Conn, now: str, limit: int) -> list[int]:
    """seqs of pending deliveries whose next attempt is due and whose lease is free or expired."""
    rows = conn.execute("SELECT seq FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? "
                        "AND (lease_until IS NULL OR lease_until <= ?) ORDER BY next_attempt_at, seq LIMIT ?",
                        (now, now, limit)).fetchall()
    return [r[0] for r in rows]


def claim_delivery(conn: Conn, seq: int, holder: str, now: str, until: str) -> bool:
    """Take the delivery's lease and count the attempt begun; False when another holds it or it
    is no longer pending (call inside a write transaction)."""
    cur = conn.execute("UPDATE webhook_deliveries SET lease_holder = ?, lease_until = ?, attempts = attempts + 1, "
                       "last_attempt_at = ? WHERE seq = ? AND status = 'pending' "
                       "AND (lease_until IS NULL OR lease_until <= ?)", (holder, until, now, seq, now))
    return cur.rowcount == 1


def delivery_to_send(conn: Conn, seq: int) -> Row:
    """A claimed delivery with what sending it needs: the URL, the sealed secret, the event."""
    return conn.execute("SELECT d.seq, d.id, d.webhook_id, d.attempts, w.url, w.secret_sealed, e.id AS event_id, "
                        "e.type, e.at, e.actor_id, e.subject_id, e.data_json FROM webhook_deliveries d "
                        "JOIN webhooks w ON w.id = d.webhook_id JOIN events e ON e.seq = d.event_seq "
                        "WHERE d.seq = ?", (seq,)).fetchone()


def finish_delivery(conn: Conn, seq: int, holder: str, *, status: str, next_attempt_at: str | None, last_status: int | None,
                    last_error: str | None, now: str) -> bool:
    """Record an attempt's outcome and free the lease; False when the lease is no longer ours
    (it expired and another sender took the delivery: its outcome counts, not ours)."""
    cur = conn.execute(
        "UPDATE webhook_deliveries SET status = ?, next_attempt_at = COALESCE(?, next_attempt_at), last_status = ?, "
        "last_error = ?, delivered_at = CASE WHEN ? = 'delivered' THEN ? ELSE delivered_at END, "
        "lease_holder = NULL, lease_until = NULL WHERE seq = ? AND lease_holder = ?",
        (status, next_attempt_at, last_status, last_error, status, now, seq, holder))
    return cur.rowcount == 1


def delivery_seq(conn: Conn, webhook_id: str, event_id: str) -> int | None:
    row = conn.execute("SELECT d.seq FROM webhook_deliveries d JOIN events e ON e.seq = d.event_seq "
                       "WHERE d.webhook_id = ? AND e.id = ?", (webhook_id, event_id)).fetchone()
    return None if row is None else row[0]


def delivery_id_of(conn: Conn, seq: int) -> str:
    return conn.execute("SELECT id FROM webhook_deliveries WHERE seq = ?", (seq,)).fetchone()[0]


# --- retention (engine/housekeeping.py) --------------------------------------------------------

def delete_finished_deliveries_before(conn: Conn, cutoff: str) -> int:
    """Delivered or failed deliveries created before `cutoff` (pending ones always stay)."""
    return conn.execute("DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < ?",
                        (cutoff,)).rowcount


def delete_events_before(conn: Conn, cutoff: str) -> int:
    """Events recorded before `cutoff` that no delivery row names any more."""
    return conn.execute("DELETE FROM events WHERE at < ? AND NOT EXISTS "
                        "(SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = events.seq)", (cutoff,)).rowcount
