"""SQL of connections (m005_connections): the link, its OAuth state, its outcome.

Every state change is a conditional UPDATE that answers whether it won, so two requests racing
on one link or one `state` cannot both complete it.
"""
from __future__ import annotations

from workspacectl.engine.db.conn import Conn, Row

_COLS = ("id, service, member_id, link_hash, link_sealed, status, credential_id, error, created_at, "
         "expires_at, finished_at, state_hash, redirect_uri, state_used_at, name")


def insert_connection(conn: Conn, *, conn_id: str, service: str, member_id: str, link_hash: str,
                      link_sealed: bytes | None, created_at: str, expires_at: str,
                      reconnect_id: str | None = None, name: str | None = None) -> None:
    """A pending connection; `reconnect_id` (kept in credential_id while pending) names the
    credential it will put fresh secrets into instead of making a new one; `name` is the name the
    new credential gets (None: after its service)."""
    conn.execute(
        "INSERT INTO connections (id, service, member_id, link_hash, link_sealed, created_at, expires_at, "
        "credential_id, name) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (conn_id, service, member_id, link_hash, link_sealed, created_at, expires_at, reconnect_id, name))


def get_connection(conn: Conn, conn_id: str) -> Row | None:
    return conn.execute(f"SELECT {_COLS} FROM connections WHERE id = ?", (conn_id,)).fetchone()


def find_by_link(conn: Conn, link_hash: str) -> Row | None:
    return conn.execute(f"SELECT {_COLS} FROM connections WHERE link_hash = ?", (link_hash,)).fetchone()


def find_by_state(conn: Conn, state_hash: str) -> Row | None:
    return conn.execute(f"SELECT {_COLS} FROM connections WHERE state_hash = ?", (state_hash,)).fetchone()


def get_pkce_sealed(conn: Conn, conn_id: str) -> bytes | None:
    row = conn.execute("SELECT pkce_sealed FROM connections WHERE id = ?", (conn_id,)).fetchone()
    return None if row is None else row["pkce_sealed"]


def start_oauth(conn: Conn, conn_id: str, *, state_hash: str, pkce_sealed: bytes | None, redirect_uri: str) -> bool:
    """Record a new authorize redirect (replacing an earlier one) while the connection is pending."""
    cur = conn.execute(
        "UPDATE connections SET state_hash = ?, pkce_sealed = ?, redirect_uri = ?, state_used_at = NULL "
        "WHERE id = ? AND status = 'pending'", (state_hash, pkce_sealed, redirect_uri, conn_id))
    return cur.rowcount == 1


def use_state(conn: Conn, state_hash: str, now: str) -> bool:
    """Claim a `state` once: True for the one caller that wins it."""
    cur = conn.execute(
        "UPDATE connections SET state_used_at = ? WHERE state_hash = ? AND state_used_at IS NULL "
        "AND status = 'pending'", (now, state_hash))
    return cur.rowcount == 1


def mark_connected(conn: Conn, conn_id: str, credential_id: str, now: str) -> bool:
    cur = conn.execute(
        "UPDATE connections SET status = 'connected', credential_id = ?, finished_at = ?, pkce_sealed = NULL "
        "WHERE id = ? AND status = 'pending'", (credential_id, now, conn_id))
    return cur.rowcount == 1


def mark_failed(conn: Conn, conn_id: str, error: str, now: str) -> bool:
    cur = conn.execute(
        "UPDATE connections SET status = 'failed', error = ?, finished_at = ?, pkce_sealed = NULL "
        "WHERE id = ? AND status = 'pending'", (error, now, conn_id))
    return cur.rowcount == 1

