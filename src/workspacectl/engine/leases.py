"""Named leases: of the processes sharing one workspace, the one holding a lease runs its job.

    acquire(conn, name, holder, ttl) -> bool   take it when free or expired (or renew one's own)
    renew(conn, name, holder, ttl) -> bool     push one's own expiry out; False once another holds it
    release(conn, name, holder)                give it up (a clean shutdown hands it on at once)
    new_holder() -> str                        an id for this process

A holder that dies without releasing keeps the lease until its expiry, `ttl` seconds after its
last renewal; then the next acquire by anyone takes it. Each call is one short write
transaction, so two processes never both hold an unexpired lease. Times come from the clock
(WSCTL_NOW_OFFSET_SECONDS shifts them, as for every expiry). The SQL is in store/leases.py.
"""
from __future__ import annotations

import os
import secrets
import socket
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from workspacectl import clock
from workspacectl.engine.db import transaction
from workspacectl.engine.store import leases as store

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn


def new_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def _times(ttl: float, now: datetime | None) -> tuple[str, str]:
    now = now or clock.now()
    return clock.iso(now), clock.iso(now + timedelta(seconds=ttl))


def acquire(conn: Conn, name: str, holder: str, ttl: float, now: datetime | None = None) -> bool:
    """True when `holder` holds the lease afterwards: it was free, expired, or already its own
    (then renewed)."""
    at, until = _times(ttl, now)
    with transaction(conn):
        row = store.get_lease(conn, name)
        if row is not None and row["holder"] == holder:
            return store.extend_lease(conn, name, holder, until)
        if row is not None and row["expires_at"] > at:
            return False
        store.take_lease(conn, name, holder, at, until)
        return True


def renew(conn: Conn, name: str, holder: str, ttl: float, now: datetime | None = None) -> bool:
    """Extend one's own lease; False when it is not (or no longer) this holder's."""
    _, until = _times(ttl, now)
    with transaction(conn):
        return store.extend_lease(conn, name, holder, until)


def release(conn: Conn, name: str, holder: str) -> bool:
    with transaction(conn):
        return store.drop_lease(conn, name, holder)


def holder_of(conn: Conn, name: str, now: datetime | None = None) -> str | None:
    """The current holder, or None when the lease is free or expired."""
    row = store.get_lease(conn, name)
    return row["holder"] if row is not None and row["expires_at"] > _times(0, now)[0] else None
