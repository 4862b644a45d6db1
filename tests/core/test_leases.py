"""engine/leases.py on a real workspace database, SQLite and PostgreSQL: one holder at a time,
renewals, expiry, release; times from the clock, moved by passing `now`."""
from __future__ import annotations

from datetime import timedelta

import pytest

from workspacectl import clock
from workspacectl.engine import leases
from workspacectl.engine.store.leases import get_lease


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_one_holder_at_a_time_until_release_or_expiry(store, request, monkeypatch, local_ws):
    location = request.getfixturevalue("workspace" if store == "sqlite" else "pg_workspace")
    if store == "postgres":
        monkeypatch.setenv("WSCTL_BLOB_DIR", str(location / "blobs"))
    conn = local_ws(location).conn()
    t0 = clock.now()
    a, b = leases.new_holder(), leases.new_holder()
    assert a != b
    assert leases.acquire(conn, "job", a, 30, now=t0)
    assert not leases.acquire(conn, "job", b, 30, now=t0 + timedelta(seconds=10))
    assert not leases.renew(conn, "job", b, 30, now=t0)
    assert leases.acquire(conn, "job", a, 30, now=t0 + timedelta(seconds=20))     # own: renewed
    assert leases.renew(conn, "job", a, 30, now=t0 + timedelta(seconds=40))
    row = get_lease(conn, "job")
    assert (row["holder"], row["renewals"]) == (a, 2)
    assert row["expires_at"] == clock.iso(t0 + timedelta(seconds=70))
    # still held at 69 s, expired at 70 s: then b takes it and a cannot renew it back
    assert not leases.acquire(conn, "job", b, 30, now=t0 + timedelta(seconds=69))
    assert leases.holder_of(conn, "job", now=t0 + timedelta(seconds=69)) == a
    assert leases.holder_of(conn, "job", now=t0 + timedelta(seconds=70)) is None
    assert leases.acquire(conn, "job", b, 30, now=t0 + timedelta(seconds=70))
    assert (get_lease(conn, "job")["holder"], get_lease(conn, "job")["renewals"]) == (b, 0)
    assert not leases.renew(conn, "job", a, 30, now=t0 + timedelta(seconds=71))
    # release: only by the holder; then anyone may take it at once
    assert not leases.release(conn, "job", a)
    assert leases.release(conn, "job", b)
    assert get_lease(conn, "job") is None
    assert leases.acquire(conn, "job", a, 30, now=t0 + timedelta(seconds=72))
    # leases are independent by name
    assert leases.acquire(conn, "other", b, 30, now=t0 + timedelta(seconds=72))
