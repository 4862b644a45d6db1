"""Authentication's cache on a PostgreSQL workspace: a replica answers a known session or key
without asking the database, and a revocation on any replica is refused by every replica on the
next request (issue 27 item 3; m031_auth_notify).

How a revocation reaches every replica before it is answered:
- m031's triggers raise `auth_epoch.n` in the transaction that changes a secret, a member or the
  workspace's name, and NOTIFY `wsctl_auth` at its commit.
- Each process keeps, per workspace URL, one AuthCache: rows by secret hash, and a listener thread
  on a session of its own (LISTEN wsctl_auth). Woken by a notification, or every BEAT_SECONDS, the
  listener reads the epoch; when it moved, it empties the cache, then records the epoch it has seen
  and the time (`auth_listeners.seen`, `beat`). The cache is used only while the listener's last
  confirmation began less than FRESH_SECONDS ago; otherwise every lookup reads the database.
- The writer of a change (store.identity.revoke_secret) waits after its commit (`wait_until_seen`)
  until every listener has seen its epoch, or has a beat older than FRESH_SECONDS (a listener that
  stopped: its cache is not used any more). Only then is the revocation answered.
- A lookup that read the database while the cache was emptied does not put its (possibly older)
  row back: `put` takes the cache's generation from before the read.

A cache no lookup asked for IDLE_SECONDS stops its listener (a quiet server, a workspace closed
or dropped); the next lookup starts another. Negative answers (unknown secrets) are never cached. SQLite has no cache: one process reads the
file, a lookup is a few microseconds.
"""
from __future__ import annotations

import logging
import os
import select
import threading
import time
import uuid
from typing import Any

CHANNEL = "wsctl_auth"
BEAT_SECONDS = 0.5     # the listener confirms at least this often
FRESH_SECONDS = 2.0    # a cache whose listener has not confirmed for this long is not used
MAX_ROWS = 10_000      # past this many secrets the cache starts again empty
RETRY_SECONDS = 1.0    # a listener whose session failed connects again after this
IDLE_SECONDS = 60.0    # a cache nobody asked for this long stops its listener (the next lookup starts one)

log = logging.getLogger("wsctl.server")

_caches: dict[tuple[int, str], AuthCache] = {}
_caches_guard = threading.Lock()


class AuthCache:
    """One workspace's cached secret lookups in this process, kept honest by its listener."""

    def __init__(self, url: str):
        self.url = url
        self._rows: dict[str, Any] = {}
        self._generation = 0
        self._confirmed = float("-inf")   # monotonic start of the listener's last confirmation
        self._used = time.monotonic()     # the last lookup
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._listen, name="wsctl-auth-listener", daemon=True)
        self._thread.start()

    def usable(self) -> bool:
        return time.monotonic() - self._confirmed < FRESH_SECONDS

    def get(self, key: str) -> Any | None:
        """The cached row, or None (not cached, or the cache is not usable now)."""
        self._used = time.monotonic()
        if not self.usable():
            return None
        return self._rows.get(key)

    @property
    def generation(self) -> int:
        return self._generation

    def put(self, key: str, row: Any, generation: int) -> None:
        """Cache a row read from the database after `generation` was taken; nothing when the cache
        was emptied since (the row may predate the change that emptied it)."""
        with self._lock:
            if generation != self._generation or not self.usable():
                return
            if len(self._rows) >= MAX_ROWS:
                self._rows.clear()
            self._rows[key] = row

    def _empty(self) -> None:
        with self._lock:
            self._generation += 1
            self._rows.clear()

    def close(self) -> None:
        self._stop.set()

    @property
    def alive(self) -> bool:
        return not self._stop.is_set()

    def _idle(self) -> bool:
        if time.monotonic() - self._used > IDLE_SECONDS:
            self._stop.set()     # unused (a server with no traffic, a workspace closed or dropped)
        return self._stop.is_set()

    def _listen(self) -> None:
        while not self._idle():
            try:
                self._serve()
            except Exception as e:   # the session failed: no cache until a new one confirms
                self._confirmed = float("-inf")
                self._empty()
                log.debug("auth cache listener: %s", e)
            self._stop.wait(RETRY_SECONDS)
        self._confirmed = float("-inf")
        self._empty()

    def _serve(self) -> None:
        import psycopg

        from workspacectl.engine.db import db_timeout_ms
        from workspacectl.engine.db.pg_session import connect_kwargs

        me = uuid.uuid4().hex
        with psycopg.connect(self.url, autocommit=True, application_name="wsctl auth listener",
                             **connect_kwargs(self.url, db_timeout_ms())) as conn:
            conn.add_notify_handler(lambda _n: None)   # read by the epoch, not kept
            conn.execute("SET synchronous_commit = off")   # the beats need no flush
            conn.execute(f"LISTEN {CHANNEL}")
            conn.execute("DELETE FROM auth_listeners WHERE beat < now() - interval '1 day'")
            conn.execute("INSERT INTO auth_listeners (id, seen, beat) VALUES (%s, -1, clock_timestamp())", (me,))
            seen = None
            try:
                while not self._idle():
                    began = time.monotonic()
                    row = conn.execute("SELECT n FROM auth_epoch").fetchone()
                    epoch = row[0] if row else 0
                    if epoch != seen:
                        self._empty()
                    self._confirmed = began
                    conn.execute("UPDATE auth_listeners SET seen = %s, beat = clock_timestamp() WHERE id = %s",
                                 (epoch, me))
                    seen = epoch
                    select.select([conn.fileno()], [], [], BEAT_SECONDS)
            finally:
                self._confirmed = float("-inf")
                if not conn.closed and not conn.broken:
                    conn.execute("DELETE FROM auth_listeners WHERE id = %s", (me,))


def cache_for(url: str) -> AuthCache:
    """This process's cache of the workspace at url (its listener started at the first call)."""
    key = (os.getpid(), url)
    cache = _caches.get(key)
    if cache is None or not cache.alive:
        with _caches_guard:
            cache = _caches.get(key)
            if cache is None or not cache.alive:
                cache = _caches[key] = AuthCache(url)
    return cache


def wait_until_seen(conn: Any) -> None:
    """After the commit of a change to what authentication reads: wait until every replica's
    listener has emptied its cache of it, or has stopped confirming long enough that its cache is
    not used (FRESH_SECONDS); bounded by that, whatever the listeners do."""
    deadline = time.monotonic() + FRESH_SECONDS + 1.0
    epoch = conn.execute("SELECT n FROM auth_epoch").fetchone()[0]
    pause = 0.001
    while True:
        behind = conn.execute("SELECT count(*) FROM auth_listeners WHERE seen < ? AND beat > clock_timestamp() - "
                              f"interval '{FRESH_SECONDS} seconds'", (epoch,)).fetchone()[0]
        if not behind or time.monotonic() > deadline:
            return
        time.sleep(pause)
        pause = min(pause * 2, 0.02)
