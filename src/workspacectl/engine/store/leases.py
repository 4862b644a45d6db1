"""SQL of leases (engine/leases.py). Plain SQL both SQLite and PostgreSQL accept; times are
ISO strings from the clock, which compare in time order."""
from __future__ import annotations

from workspacectl.engine.db.conn import Conn, Row


def get_lease(conn: Conn, name: str) -> Row:
    return conn.execute("SELECT name, holder, acquired_at, expires_at, renewals FROM leases WHERE name = ?",
                        (name,)).fetchone()


def take_lease(conn: Conn, name: str, holder: str, now: str, expires_at: str) -> None:
    """Make `holder` the lease's holder from now (a new holding: renewals start at 0)."""
    conn.execute("INSERT INTO leases (name, holder, acquired_at, expires_at, renewals) VALUES (?, ?, ?, ?, 0) "
                 "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, acquired_at = excluded.acquired_at, "
                 "expires_at = excluded.expires_at, renewals = 0", (name, holder, now, expires_at))


def extend_lease(conn: Conn, name: str, holder: str, expires_at: str) -> bool:
    cur = conn.execute("UPDATE leases SET expires_at = ?, renewals = renewals + 1 WHERE name = ? AND holder = ?",
                       (expires_at, name, holder))
    return cur.rowcount == 1


def drop_lease(conn: Conn, name: str, holder: str) -> bool:
    cur = conn.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder))
    return cur.rowcount == 1
