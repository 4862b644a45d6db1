"""SQLite access: one connection per thread, WAL, foreign keys, busy timeout, explicit transactions.

Writers of one process queue on a per-file lock before BEGIN IMMEDIATE, so threads of a server
wait their turn instead of polling SQLite's busy handler (which sleeps in steps of up to 100 ms
and gave write p95s of ~0.5 s under contention); other processes still meet the busy timeout.
The queue has the same bound as the busy timeout: a writer that waits longer for its turn gets
WorkspaceBusy (the engine answers 409 "retry"), never an unbounded wait behind a long writer.
The bound is 15 s unless WSCTL_BUSY_TIMEOUT_MS says otherwise (read when a connection opens).
"""
from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from workspacectl.engine.db.conn import Conn
from workspacectl.errors import ApiError

BUSY_TIMEOUT_MS = 15000  # the default
BUSY_TIMEOUT_ENV = "WSCTL_BUSY_TIMEOUT_MS"
MAX_BUSY_TIMEOUT_MS = 3_600_000
DB_TIMEOUT_MS = 10000   # the default of how long a PostgreSQL workspace's server may stay silent
DB_TIMEOUT_ENV = "WSCTL_DB_TIMEOUT_MS"
WAL_AUTOCHECKPOINT_PAGES = 1000  # SQLite's default
_write_locks: dict[str, WriteLock] = {}
_write_locks_guard = threading.Lock()


class StoreError(Exception):
    """A failure the store reports in its own terms: every error of the PostgreSQL door, and the
    writer queue's busy. SQLite's own errors stay sqlite3's; catch both with STORE_ERRORS,
    INTEGRITY_ERRORS or OPERATIONAL_ERRORS (never sqlite3's classes alone)."""


class IntegrityError(StoreError):
    """A constraint refused a write (unique, foreign key, check, not null): sqlite3.IntegrityError's
    counterpart on PostgreSQL."""


class OperationalError(StoreError):
    """The database could not do what was asked (a lock not had in time, a table that is not there,
    a refused write): sqlite3.OperationalError's counterpart."""


INTEGRITY_ERRORS: tuple[type[Exception], ...] = (sqlite3.IntegrityError, IntegrityError)
OPERATIONAL_ERRORS: tuple[type[Exception], ...] = (sqlite3.OperationalError, OperationalError)
STORE_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error, StoreError)


class WorkspaceBusy(OperationalError):
    """The process's writer queue did not come free within the busy timeout (or, on PostgreSQL, a
    lock wait passed it). It says "locked", like SQLite's own busy error, so every caller that
    turns that into 409 conflict (engine/dispatch.py, is_busy) treats both alike."""


class WouldBlock(Exception):
    """Work on a thread that must not wait (the server's event loop: quick_calls) was about to wait
    for something (the write lock, another process's writer, a provider call, a key loaded from
    the keyring). Raised before anything is written: the server runs the request again on an
    engine thread, which may wait. Not an OperationalError nor an ApiError, so no handler turns
    it into an answer."""


class LockHeld(WouldBlock):
    """WouldBlock because another thread of this process holds the workspace's write lock (`lock`):
    the server's event loop waits for its release on the loop (WriteLock.when_released) and runs
    the request again there (quick.QuickWriter), instead of handing it to an engine thread."""

    def __init__(self, lock: WriteLock):
        super().__init__("the write lock")
        self.lock = lock


class WriteLock:
    """A process's write lock of one workspace file: a reentrant lock that also tells a waiter
    that must not block (the event loop) when it comes free. `when_released(callback)` runs the
    callback once, on the releasing thread, after the next release (at once when the lock is
    free now); the callback must only hand over (loop.call_soon_threadsafe), never block or raise.
    A release with no one waiting costs one list check."""

    __slots__ = ("_lock", "_waiters")

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._waiters: list[Callable[[], None]] = []

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return self._lock.acquire(blocking, timeout)

    def release(self) -> None:
        self._lock.release()
        if self._waiters:   # read after the release: a waiter added before it is called below
            self._wake()

    __enter__ = acquire

    def __exit__(self, *exc: object) -> None:
        self.release()

    def when_released(self, callback: Callable[[], None]) -> None:
        # Added first, then the lock tried: either the holder's release (which reads the list
        # after freeing the lock) sees the callback, or the try below finds the lock free.
        self._waiters.append(callback)
        if self._lock.acquire(False):
            self._lock.release()
            self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []   # one bytecode swap under the GIL
        for callback in waiters:
            callback()


_quick = threading.local()


@contextmanager
def quick_calls() -> Iterator[None]:
    """On this thread, for the block, waiting raises WouldBlock (must_not_wait)."""
    _quick.on = True
    try:
        yield
    finally:
        _quick.on = False


def on_quick_thread() -> bool:
    return getattr(_quick, "on", False)


def must_not_wait(what: str = "a wait") -> None:
    """Called before work that may wait (a lock held by another thread, the network, the keyring)."""
    if getattr(_quick, "on", False):
        raise WouldBlock(what)


def busy_timeout_ms() -> int:
    """How long a writer waits for the workspace's write lock before 409: WSCTL_BUSY_TIMEOUT_MS
    (whole milliseconds, 1 to an hour), else 15 s. A bad value is refused, never guessed at."""
    raw = os.environ.get(BUSY_TIMEOUT_ENV, "").strip()
    if not raw:
        return BUSY_TIMEOUT_MS
    if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= MAX_BUSY_TIMEOUT_MS):
        raise ApiError("invalid_request", f"{BUSY_TIMEOUT_ENV} must be a whole number of milliseconds from 1 "
                       f"to {MAX_BUSY_TIMEOUT_MS} (default {BUSY_TIMEOUT_MS}); fix or unset it.")
    return int(raw)


def db_timeout_ms() -> int:
    """How long a PostgreSQL workspace's database may leave a step unanswered (connecting, a
    statement, a commit) before the request ends with 503 and Retry-After: WSCTL_DB_TIMEOUT_MS
    (whole milliseconds, 1 to an hour), else 10 s (engine/db/pg_session.py). A bad value is
    refused, never guessed at."""
    raw = os.environ.get(DB_TIMEOUT_ENV, "").strip()
    if not raw:
        return DB_TIMEOUT_MS
    if not (raw.isascii() and raw.isdigit() and 1 <= int(raw) <= MAX_BUSY_TIMEOUT_MS):
        raise ApiError("invalid_request", f"{DB_TIMEOUT_ENV} must be a whole number of milliseconds from 1 "
                       f"to {MAX_BUSY_TIMEOUT_MS} (default {DB_TIMEOUT_MS}); fix or unset it.")
    return int(raw)


class Prepared(str):
    """A hot statement's text (the session read of every request, a token's credential read): the
    PostgreSQL door prepares it once per session and binds its values server-side (no parse or
    plan per request). SQLite reads it as the str it is (sqlite3 caches every statement). Only for
    statements whose values all stand where PostgreSQL can infer their types (`col = ?`; never
    `? IS NULL`)."""

    __slots__ = ()


class _Connection(sqlite3.Connection):
    write_lock: WriteLock | None = None
    busy_timeout_ms: int = BUSY_TIMEOUT_MS
    quick_group = None   # quick.QuickGroup, on the server event loop's connection


def _write_lock_for(path: str) -> WriteLock:
    key = os.path.realpath(path)
    with _write_locks_guard:
        lock = _write_locks.get(key)
        if lock is None:
            lock = _write_locks[key] = WriteLock()
        return lock


def open_db(path: str | os.PathLike[str]) -> sqlite3.Connection:
    timeout_ms = busy_timeout_ms()
    conn = sqlite3.connect(str(path), timeout=timeout_ms / 1000, isolation_level=None,
                           check_same_thread=False, factory=_Connection)
    conn.write_lock = _write_lock_for(str(path))
    conn.busy_timeout_ms = timeout_ms
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {timeout_ms}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    return conn


_STORAGE_ERRORS = frozenset({getattr(sqlite3, "SQLITE_FULL", 13), getattr(sqlite3, "SQLITE_IOERR", 10),
                             getattr(sqlite3, "SQLITE_READONLY", 8)})


class StorageRefused(OperationalError):
    """The PostgreSQL door's counterpart of a disk that refuses a write (engine/db/postgres.py):
    the database server lacks the resources (SQLSTATE class 53: disk full, out of memory, too
    many connections) or failed at the system level (class 58: an I/O error). storage_failure
    answers it as SQLite's full or failing disk: 503, nothing saved."""


class StoreLost(StorageRefused):
    """The PostgreSQL door's connection broke (the database server restarted, failed over or ended
    the session). Also 503, but whether a COMMIT in flight landed is unknown, so the answer does not
    say nothing was saved; the workspace opens a new connection for the next request."""


def is_busy(e: BaseException) -> bool:
    """SQLite's (and the PostgreSQL door's) "the write lock is taken" error."""
    return (isinstance(e, OPERATIONAL_ERRORS) and not isinstance(e, StorageRefused)
            and ("locked" in str(e) or "busy" in str(e)))


BUSY_MESSAGE = "The workspace is busy (another process holds its write lock); retry in a moment."


def refused_write(e: BaseException, busy_message: str = BUSY_MESSAGE) -> ApiError | None:
    """A write the environment refused, as every door answers it: the write lock held past the busy
    timeout is 409 "retry", a disk that refuses the write 503 (storage_failure); nothing was
    written either way. None for any other exception (a bug stays a bug)."""
    if is_busy(e):
        return ApiError("conflict", busy_message)
    return storage_failure(e)


@contextmanager
def refusals_answered(answer: Callable[[BaseException], ApiError | None] = refused_write) -> Iterator[None]:
    """Work outside the engine's routes (the server's pages, the local backend opening a
    workspace, authentication): a write the environment refused is raised as its ApiError,
    `answer(e)` (refused_write; storage_failure to leave a busy error as it is)."""
    try:
        yield
    except OPERATIONAL_ERRORS as e:
        if (refused := answer(e)) is None:
            raise
        raise refused from None


def storage_failure(e: BaseException) -> ApiError | None:
    """A write the disk refused (full, I/O error, read-only file; on PostgreSQL StorageRefused) as
    the answer every door gives: 503 with one line saying nothing was saved (the transaction was
    rolled back) and to retry later. None for any other exception (a bug stays a bug)."""
    if isinstance(e, StoreLost):
        return ApiError("unreachable", f"The workspace's database could not be reached ({e}); retry later "
                                       "(a change in flight may or may not have been saved).", status=503)
    if not isinstance(e, StorageRefused):
        code = getattr(e, "sqlite_errorcode", None) if isinstance(e, sqlite3.DatabaseError) else None
        if not isinstance(code, int) or code & 0xFF not in _STORAGE_ERRORS:
            return None
    return ApiError("unreachable", f"The workspace could not be written ({e}); nothing was saved, retry later.",
                    status=503)


@contextmanager
def transaction(conn: Conn, *, appends_only: bool = False, locks: Iterable[str] = ()) -> Iterator[Conn]:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception. Nested use joins the outer one
    (taking the nested one's `locks` too).

    appends_only: the transaction reads, then only adds rows that no rule reads back under the
    writer lock (a token's audit row). On SQLite nothing changes (one writer per file); on
    PostgreSQL it holds the workspace's writer lock shared, so such transactions run beside each
    other (and their commits share WAL flushes) while every other writer still runs alone.

    locks: the resources the transaction changes ("skill:<id>", "project-files:<id>", ...: every
    rule that reads then writes inside it reads only what these name). On SQLite nothing changes;
    on PostgreSQL it holds the workspace's writer lock shared and each resource's lock alone
    (lock_resources), so writers of different resources, and appenders, run side by side on every
    replica, writers of one resource one after another, and a writer naming no resource (a rare
    workspace-wide change) still alone."""
    group = getattr(conn, "quick_group", None)
    if group is not None and getattr(_quick, "on", False):   # the event loop's turn (QuickGroup)
        group.begin()
        with savepoint(conn, "wsctl_quick"):
            yield conn
        return
    if conn.in_transaction:
        if locks:
            lock_resources(conn, *locks)
        yield conn
        return
    lock = getattr(conn, "write_lock", None)
    timeout_ms = getattr(conn, "busy_timeout_ms", BUSY_TIMEOUT_MS)
    quick = getattr(_quick, "on", False)
    if lock is not None and not lock.acquire(timeout=0 if quick else timeout_ms / 1000):
        if quick:   # another thread of this process writes: the event loop waits for it off-thread
            raise LockHeld(lock)
        raise WorkspaceBusy("database is locked: another writer of this process held the workspace "
                            f"past the busy timeout ({timeout_ms} ms)")
    try:
        begin_writer = getattr(conn, "begin_writer", None)
        if begin_writer is not None:
            begin_writer(shared=appends_only, resources=tuple(locks))
        elif quick:   # the quick connection's busy timeout is 0: another process writes
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as e:
                if is_busy(e):
                    raise WouldBlock("another process's writer") from None
                raise
        else:
            conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")
    finally:
        if lock is not None:
            lock.release()


def lock_resources(conn: Conn, *names: str) -> None:
    """Inside a transaction, on PostgreSQL: hold each named resource's lock alone until the
    transaction ends (transaction-scoped advisory locks keyed by the name, taken in one order, so
    two writers never wait for each other in a cycle); a wait past the busy timeout is 409. On
    SQLite nothing (the transaction already holds the file's one write lock)."""
    take = getattr(conn, "lock_resources", None)
    if take is not None and names:
        take(names)


@contextmanager
def savepoint(conn: Conn, name: str = "wsctl_step") -> Iterator[Conn]:
    """A step inside a transaction that can fail alone: on an exception its changes are rolled
    back (the transaction goes on) and the exception propagates."""
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield conn
    except BaseException:
        conn.execute(f"ROLLBACK TO {name}")
        conn.execute(f"RELEASE {name}")
        raise
    conn.execute(f"RELEASE {name}")


@contextmanager
def checkpoints_by_hand(conn: Conn) -> Iterator[None]:
    """For a writer of many large transactions (the memory agent): its commits skip SQLite's
    automatic WAL checkpoint (copying the WAL into the database and syncing it, ~0.2 s after an
    8 MiB batch), which would run inside COMMIT while this process's writer queue waits; the
    writer calls checkpoint() between its transactions instead, holding no lock."""
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")


def checkpoint(conn: Conn) -> None:
    """A passive WAL checkpoint: copies what it can without waiting for or blocking anyone (a
    PostgreSQL connection ignores it, as every PRAGMA)."""
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def execute_script(conn: Conn, sql: str) -> None:
    """Run several statements inside the current transaction.

    sqlite3's executescript() commits first, which would break a migration's transaction, so
    statements are split with sqlite3.complete_statement (safe for triggers) and run one by one.
    """
    buf = ""
    for line in sql.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                conn.execute(buf)
            buf = ""
    if buf.strip():
        conn.execute(buf)
