"""The server event loop's writer on a SQLite workspace: quick calls (registry.route quick=True) run
on the loop's own thread with a connection of its own (open_quick_db), their writes group-committed
once per loop turn (QuickGroup), the WAL checkpointed off the loop, and a call that finds the
write lock held by another thread of the process waiting for it on the loop (QuickWriter).

The HTTP layer (server/api_path.py) only calls `QuickWriter.run` and sends what it answers.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import logging
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workspacectl.engine.db import (
    BUSY_MESSAGE,
    BUSY_TIMEOUT_MS,
    WAL_AUTOCHECKPOINT_PAGES,
    LockHeld,
    WouldBlock,
    WriteLock,
    is_busy,
    open_db,
    storage_failure,
)
from workspacectl.errors import ApiError, one_line

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

log = logging.getLogger("wsctl.server")

HARD_WAL_FACTOR = 4   # TRUNCATE (under the write lock) once the WAL passes 4 x the checkpoint size
TRUNCATE_BUSY_MS = 200   # how long a TRUNCATE waits for another process's writer or readers


class QuickGroup:
    """Group commit for the quick connection (open_quick_db): the transactions of the quick calls
    of one turn of the server's event loop join one write transaction, each as a savepoint (an
    exception rolls back that call's writes only, as its own transaction would have been), and
    the writer commits it once after the turn (`commit`), sending none of their answers before:
    a token's audit row is committed before the token leaves, and one commit carries the rows of
    every token issued in that turn (a commit cost ~85 µs of a token's ~130 µs of SQLite work).

    `opened()` is called when a turn's first transaction begins (the writer schedules `commit`)."""

    def __init__(self, conn: sqlite3.Connection, opened: Callable[[], None]):
        self.conn = conn
        self.opened = opened
        self.is_open = False

    def begin(self) -> None:
        if self.is_open:
            return
        lock = getattr(self.conn, "write_lock", None)
        if lock is not None and not lock.acquire(timeout=0):
            raise LockHeld(lock)   # another thread of this process writes
        try:
            self.conn.execute("BEGIN IMMEDIATE")   # busy timeout 0: fails at once if another process writes
        except sqlite3.OperationalError as e:
            if lock is not None:
                lock.release()
            if is_busy(e):
                raise WouldBlock("another process's writer") from None
            raise
        self.is_open = True
        self.opened()

    def commit(self) -> None:
        """COMMIT the turn's transaction (ROLLBACK and raise when that fails: no answer of the
        turn may then be sent as if written)."""
        if not self.is_open:
            return
        lock = getattr(self.conn, "write_lock", None)
        try:
            try:
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
        finally:
            self.is_open = False
            if lock is not None:
                lock.release()


def open_quick_db(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """A connection for a thread that must not wait (the server's event loop): busy timeout 0, so
    a writer of another process makes BEGIN fail at once (transaction raises WouldBlock); in WAL
    mode its reads never wait for a writer. Its commits never checkpoint the WAL (a checkpoint
    copies up to wal_autocheckpoint pages and syncs: up to tens of ms on the loop's thread):
    QuickWriter has an engine thread do it. journal_size_limit 0: once a checkpoint has copied
    the whole WAL and this connection's next write starts it again from the top, that commit
    truncates the file, so the -wal file's size is what the WAL holds (QuickWriter reads it)."""
    conn = open_db(path)
    conn.execute("PRAGMA busy_timeout = 0")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("PRAGMA journal_size_limit = 0")
    return conn


def wal_checkpoint_bytes(conn: sqlite3.Connection) -> int:
    """The WAL size at which SQLite's automatic checkpoint would run (its default 1,000 pages)."""
    return WAL_AUTOCHECKPOINT_PAGES * int(conn.execute("PRAGMA page_size").fetchone()[0])


def checkpoint_wal(conn: Conn, mode: str = "PASSIVE") -> tuple[int, int, int]:
    """PRAGMA wal_checkpoint(mode) on a thread that may wait; answers its (busy, WAL frames, frames
    copied). PASSIVE copies what it can beside the writers: it takes no write lock, ours or
    SQLite's, so writers go on meanwhile. TRUNCATE holds this process's write lock (the writers
    of this process queue on it; the event loop waits for it on the loop) and SQLite's, copies
    what is left and empties the WAL; QuickWriter runs it only past a hard bound, when steady
    commits kept PASSIVE from ever finding the WAL wholly copied (the WAL starts again from the
    top only then). It waits for the lock at most the busy timeout: (1, -1, -1) when it did not
    come free. Holding it, it waits at most TRUNCATE_BUSY_MS for another process's writer or
    readers (SQLite's busy handler), not the busy timeout: the writers of this process wait
    meanwhile. busy 1: it could not empty the WAL (another process kept using it)."""
    if mode == "PASSIVE":
        busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(busy), int(frames), int(copied)
    lock = getattr(conn, "write_lock", None)
    timeout_ms = getattr(conn, "busy_timeout_ms", BUSY_TIMEOUT_MS)
    if lock is not None and not lock.acquire(timeout=timeout_ms / 1000):
        return 1, -1, -1
    try:
        conn.execute(f"PRAGMA busy_timeout = {min(timeout_ms, TRUNCATE_BUSY_MS)}")
        try:
            busy, frames, copied = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        finally:
            conn.execute(f"PRAGMA busy_timeout = {timeout_ms}")
        return int(busy), int(frames), int(copied)
    finally:
        if lock is not None:
            lock.release()


def _settle(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


def _wake(loop: asyncio.AbstractEventLoop, future: asyncio.Future) -> None:
    """On the thread releasing the write lock: wake the loop waiting for it (unless it has closed)."""
    try:
        loop.call_soon_threadsafe(_settle, future)
    except RuntimeError:   # the loop closed meanwhile: no one waits any more
        pass


class QuickWriter:
    """The event loop's side of a SQLite workspace, for the server's quick calls:

    - `run(call, label)` runs a quick call on the loop. When the call finds the write lock held by
      another thread of this process (LockHeld: an engine thread's transaction, a TRUNCATE
      checkpoint), the loop waits for its release (WriteLock.when_released; the releasing thread
      wakes the loop with call_soon_threadsafe) and runs the call again on the loop, up to the
      busy timeout, then 409 "retry", as a writer on an engine thread would answer. Any other
      WouldBlock (another process's writer, a provider call, the keyring) answers None: the caller
      runs it on an engine thread.
    - The writes of one loop turn are one transaction (QuickGroup), committed after the turn; an
      answer that wrote waits for that commit (a commit the disk refused: 503 for each of them).
    - After a commit, past SQLite's checkpoint size an engine thread checkpoints PASSIVE (no lock),
      again each quarter of that size of growth; past HARD_WAL_FACTOR times it, TRUNCATE (again
      per that size of growth while another process keeps it from emptying the WAL).
    - `counts`: per label, how calls ended ("loop", "waited" for the lock then ran on the loop,
      "busy" 409, "pool: <reason>"); `checkpoints` per mode; `longest_ms` of a wait and of each
      checkpoint mode. `summary()` is the line the server logs when it stops (the bench reads it)."""

    def __init__(self, conn: sqlite3.Connection, background: Callable[..., concurrent.futures.Future],
                 thread_conn: Callable[[], Conn]):
        """background(fn, *args) runs fn on a thread that may wait and answers a concurrent Future;
        thread_conn() is the workspace connection of the thread it runs on."""
        self.conn = conn
        self.background = background
        self.thread_conn = thread_conn
        conn.quick_group = QuickGroup(conn, self._opened)   # type: ignore[attr-defined]
        self.busy_seconds = getattr(conn, "busy_timeout_ms", BUSY_TIMEOUT_MS) / 1000
        self.wal_path = next(row[2] for row in conn.execute("PRAGMA database_list") if row[1] == "main") + "-wal"
        self.soft = wal_checkpoint_bytes(conn)
        self.hard = HARD_WAL_FACTOR * self.soft
        self.passive_at = self.soft
        self.truncate_at = self.hard
        self.checkpointing = False   # one checkpoint queued or running at a time
        self.committed: asyncio.Future | None = None   # the open turn's commit
        self.released: asyncio.Future | None = None    # the write lock's next release
        self.counts: Counter = Counter()
        self.checkpoints: Counter = Counter()
        self.longest_ms: dict[str, float] = {}   # the longest wait on the loop, and checkpoint per mode

    async def run(self, call: Callable[[], Any], label: str) -> Any:
        """call() on this thread (a quick call: it raises WouldBlock, with nothing written, when it
        would wait); its answer, or None when it must run on a thread that may wait. Raises
        ApiError for a lock held past the busy timeout (409) or a refused commit (503)."""
        conn = self.conn
        deadline = None
        while True:
            written = conn.total_changes
            try:
                result = call()
            except LockHeld as e:
                loop = asyncio.get_running_loop()
                if deadline is None:
                    deadline = loop.time() + self.busy_seconds
                    self.counts[label, "waited"] += 1
                released = await self._released(e.lock, deadline - loop.time())
                self._longest("wait", self.busy_seconds - (deadline - loop.time()))
                if not released:
                    self.counts[label, "busy"] += 1
                    raise ApiError("conflict", BUSY_MESSAGE) from None
                continue
            except WouldBlock as e:
                self.counts[label, f"pool: {e}"] += 1
                return None
            if self.committed is not None and conn.total_changes != written:
                try:   # it wrote inside this turn's transaction: answer once committed
                    await self.committed
                except Exception as e:   # as the engine pool answers the same failure (Engine.call)
                    if (refused := storage_failure(e)) is None:
                        raise
                    raise refused from None
            self.counts[label, "loop"] += 1
            return result

    async def _released(self, lock: WriteLock, timeout: float) -> bool:
        """Wait (on the loop) for the lock's next release; False when `timeout` passes first. The
        waiting calls of the loop share one future."""
        if timeout <= 0:
            return False
        loop = asyncio.get_running_loop()
        released = self.released
        if released is None or released.done():
            released = self.released = loop.create_future()
            lock.when_released(functools.partial(_wake, loop, released))
        done, _ = await asyncio.wait({released}, timeout=timeout)
        return bool(done)

    def _opened(self) -> None:
        """A quick call of this turn began a write (QuickGroup): commit after the turn."""
        loop = asyncio.get_running_loop()
        self.committed = loop.create_future()
        loop.call_soon(self._commit)

    def _commit(self) -> None:
        committed, self.committed = self.committed, None
        assert committed is not None
        try:
            self.conn.quick_group.commit()   # type: ignore[attr-defined]
        except BaseException as e:   # every answer of the turn fails: nothing was written
            committed.set_exception(e)
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
        else:
            committed.set_result(None)
            self._checkpoint_if_due()

    def _checkpoint_if_due(self) -> None:
        """A stat of the -wal file per group commit (~1 µs); at most one checkpoint at a time, on
        an engine thread, never waited for by the loop."""
        if self.checkpointing:
            return
        try:
            size = os.stat(self.wal_path).st_size
        except OSError:
            return
        if size < self.soft:   # the WAL started again (open_quick_db: the file is cut back)
            self.passive_at, self.truncate_at = self.soft, self.hard
            return
        if size >= self.truncate_at:
            mode = "TRUNCATE"
            self.truncate_at = size + self.soft   # if it cannot empty the WAL (another process uses it)
        elif size >= self.passive_at:
            mode = "PASSIVE"
            self.passive_at = size + self.soft // 4
        else:
            return
        self.checkpointing = True
        self.checkpoints[mode] += 1
        self.background(self._checkpoint, mode).add_done_callback(self._checkpointed)

    def _checkpoint(self, mode: str) -> tuple[int, int, int]:
        started = time.monotonic()
        try:
            return checkpoint_wal(self.thread_conn(), mode)
        finally:
            self._longest(mode, time.monotonic() - started)

    def _longest(self, what: str, seconds: float) -> None:
        ms = round(seconds * 1000, 1)
        if ms > self.longest_ms.get(what, 0.0):
            self.longest_ms[what] = ms

    def _checkpointed(self, future: concurrent.futures.Future) -> None:   # on the engine thread
        self.checkpointing = False
        if not future.cancelled() and (e := future.exception()) is not None:
            log.warning("WAL checkpoint failed: %s", one_line(str(e)))

    def summary(self) -> str:
        """One line (JSON): how the quick calls ended per label, the checkpoints run per mode, and the
        longest of each in milliseconds ("wait": a call's wait on the loop for the write lock)."""
        per: dict[str, dict[str, int]] = {}
        for (label, outcome), n in sorted(self.counts.items()):
            per.setdefault(label, {})[outcome] = n
        return json.dumps({"calls": per, "checkpoints": dict(self.checkpoints), "longest_ms": dict(self.longest_ms)},
                          separators=(",", ":"))
