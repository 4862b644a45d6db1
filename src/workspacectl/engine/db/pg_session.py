"""PostgreSQL sessions that never wait for ever: what bounds a request when the database server
stops answering (a frozen machine, a partition that drops packets without a reset).

- Connecting: libpq's connect_timeout, TCP keepalives and tcp_user_timeout (a peer that stops
  acknowledging for three database timeouts is dropped by the kernel; keepalives find a dead peer
  on an idle connection).
- On the server: lock_timeout is the busy timeout (a lock wait past it is 409 "busy, retry"), and
  statement_timeout the busy timeout plus the database timeout (no statement runs longer).
- On the client: every wait of a statement (Session.wait) ends when the server has sent nothing
  for half the database timeout (WSCTL_DB_TIMEOUT_MS, db_timeout_ms) and a probe on a connection
  of its own (Liveness) has not answered by the whole of it. A statement that merely waits for a
  lock on a server that answers the probe goes on waiting (the server's lock_timeout ends it).
  The session is then closed and the request answered 503 with Retry-After (StoreLost); the next
  request opens a new session, so the replica recovers by itself once the server answers.
- /readyz (server/app.py) asks Liveness.ready: the last answer seen within READY_FRESH_SECONDS,
  else one probe shared by every caller.

Imported only with psycopg (engine/db/postgres.py).
"""
from __future__ import annotations

import math
import threading
import time
from typing import Any

import psycopg

from workspacectl.engine.db import busy_timeout_ms, db_timeout_ms

READY_FRESH_SECONDS = 1.5   # an answer seen this recently makes /readyz answer without a probe
READY_WAIT_SECONDS = 1.0    # how long /readyz waits for a probe (load balancers time out at ~1-2 s)
KEEPALIVE_IDLE_SECONDS = 5
KEEPALIVE_INTERVAL_SECONDS = 2
KEEPALIVE_COUNT = 3
# tcp_user_timeout is this many database timeouts: the kernel drops a connection whose sent data
# stays unacknowledged that long. Not one timeout: a busy server (a checkpoint's I/O) may leave a
# 1 GiB COPY's rows unread for over 10 s and is not gone; the silence bound (Session.wait, with a
# probe) ends a request on a server that stopped answering first.
USER_TIMEOUT_FACTOR = 3
_NONE = 0   # psycopg's Ready.NONE: the wait's interval passed with nothing to read or write


class NoAnswer(psycopg.OperationalError):
    """The database server sent nothing for the database timeout and did not answer a probe."""


def connect_kwargs(url: str, timeout_ms: int) -> dict:
    """psycopg.connect's keyword arguments bounding every wait of the session (see the module)."""
    from psycopg.conninfo import conninfo_to_dict

    busy = busy_timeout_ms()
    options = conninfo_to_dict(url).get("options") or ""
    guard = f"-c lock_timeout={busy} -c statement_timeout={busy + timeout_ms}"
    return {"connect_timeout": max(2, math.ceil(timeout_ms / 1000)), "keepalives": 1,
            "keepalives_idle": KEEPALIVE_IDLE_SECONDS, "keepalives_interval": KEEPALIVE_INTERVAL_SECONDS,
            "keepalives_count": KEEPALIVE_COUNT, "tcp_user_timeout": USER_TIMEOUT_FACTOR * timeout_ms,
            "options": f"{options} {guard}".strip()}


class Session(psycopg.Connection):
    """psycopg's connection whose waits end when the server stays silent (see the module)."""

    liveness: Liveness | None = None
    silent_s: float = 5.0    # half the database timeout: silence before a probe is asked for
    bounded: bool = True     # False while migrations run (they may wait for each other at length)

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        live = self.liveness
        if timeout is not None or live is None or not self.bounded:
            return super().wait(gen, interval, timeout)
        try:
            result = super().wait(_watched(gen, live, self.silent_s), interval, None)
        except NoAnswer:
            self.pgconn.finish()   # the protocol stopped mid-step: this session is done (broken)
            raise
        live.ok_at = time.monotonic()
        return result


def _watched(gen: Any, live: Liveness, silent_s: float) -> Any:
    """`gen` (a psycopg protocol generator) as the wait runs it, but raising NoAnswer once the server
    has sent nothing for `silent_s` and no probe answered since, `silent_s` after asking for one."""
    last = time.monotonic()
    suspect_at = 0.0
    try:
        state = next(gen)
        while True:
            ready = yield state
            if ready == _NONE:
                now = time.monotonic()
                if now - last > silent_s:
                    if live.ok_at > last:          # the server answered someone since: it lives
                        last, suspect_at = now, 0.0
                    elif not suspect_at:
                        suspect_at = now
                        live.probe()
                    elif now - suspect_at > silent_s:
                        raise NoAnswer(f"PostgreSQL did not answer for {round(2 * silent_s * 1000)} ms")
            else:
                last = time.monotonic()
            state = gen.send(ready)
    except StopIteration as stop:
        return stop.value


class Liveness:
    """Whether one database server answers, for every session of this process on its URL: the
    time of the last answer any session saw (ok_at), and probes (SELECT 1 on a session of its own,
    on a thread of its own, one at a time) when someone needs to know."""

    def __init__(self, url: str):
        self.url = url
        self.ok_at = 0.0
        self.probed_at = 0.0     # the last probe's start
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._probing = False
        self._conn: Session | None = None

    def probe(self) -> None:
        """Start a probe unless one runs (never waits)."""
        with self._lock:
            if self._probing:
                return
            self._probing = True
            self.probed_at = time.monotonic()
        threading.Thread(target=self._probe, name="wsctl-db-probe", daemon=True).start()

    def _probe(self) -> None:
        try:
            if self._conn is None or self._conn.closed:
                timeout_ms = db_timeout_ms()
                conn = Session.connect(self.url, autocommit=True, application_name="wsctl probe",
                                       **connect_kwargs(self.url, timeout_ms // 2))
                conn.silent_s = timeout_ms / 4000
                conn.liveness = self
                self._conn = conn
            self._conn.execute("SELECT 1")    # Session.wait sets ok_at
        except Exception:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        finally:
            with self._lock:
                self._probing = False
                self._done.notify_all()

    def ready(self, wait: float = READY_WAIT_SECONDS) -> bool:
        """True when the server answered within READY_FRESH_SECONDS, or answers a probe within
        `wait` seconds (a probe already running is shared)."""
        asked = time.monotonic()
        if asked - self.ok_at < READY_FRESH_SECONDS:
            return True
        self.probe()
        with self._lock:
            self._done.wait_for(lambda: self.ok_at >= asked or not self._probing, timeout=wait)
        return self.ok_at >= asked


_liveness: dict[str, Liveness] = {}
_liveness_guard = threading.Lock()


def liveness_of(url: str) -> Liveness:
    with _liveness_guard:
        live = _liveness.get(url)
        if live is None:
            live = _liveness[url] = Liveness(url)
        return live
