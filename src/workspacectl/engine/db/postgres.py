"""PostgreSQL access with the surface the store uses on sqlite3, so engine/store/ keeps one copy
of its SQL. Imported only when a workspace is a postgresql:// URL (psycopg is an optional extra).

What the wrapper makes alike (the whole dialect layer; SQL that truly differs is a named pair in
the store, see store/catalog_search.py):
- placeholders: `?` and `:name` become `%s` and `%(name)s` (string literals left alone), and
  IFNULL is COALESCE: the only spellings translated. Every other statement of the store is
  written once in SQL both engines read (`INSERT ... ON CONFLICT DO NOTHING`, `||`, LIKE,
  parameters for the clock); IFNULL stays where SQLite's indexes were made on that expression. Parameters are bound client-side (psycopg.ClientCursor), so a
  value's type is inferred from where it stands, as SQLite does; a bool is written as 0/1.
- transactions: autocommit outside them, like sqlite3 with isolation_level=None; `BEGIN
  IMMEDIATE` takes one transaction-scoped advisory lock (the workspace's writer lock, as SQLite
  has one writer); the session's lock_timeout is db.busy_timeout_ms() (engine/db/pg_session.py,
  which also bounds every wait when the server stops answering): a writer that waits longer gets
  the same "database is locked" OperationalError SQLite gives, which the engine answers with 409.
  A transaction that only appends (db.transaction(appends_only=True): a token's audit row) holds
  that lock shared: beside other appenders, never beside another writer.
- a failed write inside a transaction is rolled back to a savepoint, so the transaction goes on
  as on SQLite (the engine catches IntegrityError and carries on).
- round trips: a writer's BEGIN and lock go with its first statement (a prepared one too), and a
  write's SAVEPOINT and RELEASE with the write, as one simple-protocol message.
- an appending transaction (db.transaction(appends_only=True)) holds the INSERTs that follow
  its first statement (which goes with BEGIN and the lock, so the lock is held from the start),
  bound client-side at once (a bad value fails at the INSERT, as before), and sends them with its
  COMMIT in one message, without a savepoint: nothing in such a transaction reads them back or
  carries on past a failed one (a failure fails the whole transaction). Any other statement sends
  them first, so what a transaction sees never changes. A token issue: the session read, then two
  round trips in its transaction (BEGIN, the lock and the prepared read; the audit row with
  COMMIT), eight statements in all (was four round trips, ten statements).
- prepared statements: a statement the store marks db.Prepared (hot reads) is PREPAREd by SQL
  once per session and sent as `EXECUTE name(values)`; as a writer's first statement it goes in
  the one message with BEGIN and the lock. A token issue that goes the transaction's way is three
  round trips: the session read; BEGIN, the lock and the credential read; the audit row with COMMIT
  (was four: psycopg's protocol-level prepare needed a message of its own after BEGIN). The usual
  issue is one call instead (store.vault.issue_token_at_once, m029_token_issue: the read and the
  audit row in one statement, its own transaction). Measured earlier on a token's
  credential read (bench/pg_token_profile.py): the read parsed and planned each time cost the
  backend ~200 µs more than prepared. A prepared plan whose result changed under a migration is
  dropped (DEALLOCATE ALL) and the statement run again. Every other statement is bound
  client-side.
- errors: psycopg's become the store's own (engine/db: IntegrityError for unique, foreign key,
  check and not-null violations; WorkspaceBusy "database is locked" for a lock timeout, deadlock
  or serialization failure; OperationalError "no such table" for an undefined table;
  StorageRefused, answered 503 as SQLite's full disk, for SQLSTATE classes 53 and 58: disk full,
  out of memory, too many connections, an I/O error). A NUL in text (PostgreSQL text cannot hold
  one) is 400 invalid_request. A connection the server refuses for
  too many connections is 503 saying to retry later, any other failure to connect 503 naming it.
- rows: index and name access, keys(), dict(row), like sqlite3.Row.
"""
from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn

import psycopg
from psycopg import errors as pg_errors
from psycopg.adapt import Loader
from psycopg.pq import ExecStatus, TransactionStatus

from workspacectl.engine.db import (
    IntegrityError,
    OperationalError,
    Prepared,
    StorageRefused,
    StoreLost,
    WorkspaceBusy,
    busy_timeout_ms,
    db_timeout_ms,
)
from workspacectl.engine.db.conn import Params
from workspacectl.engine.db.pg_session import NoAnswer, Session, connect_kwargs, liveness_of
from workspacectl.errors import ApiError
from workspacectl.formats.workspace_url import redacted

if TYPE_CHECKING:
    from workspacectl.engine.db.pg_auth_cache import AuthCache

# pg_advisory_xact_lock keys (two int4 halves: "wsctl", purpose)
LOCK_CLASS = 0x77736374
WRITER_LOCK = 1
MIGRATION_LOCK = 2

def resource_key(name: str) -> int:
    """The advisory lock key (bigint) of a resource a writer names (db.transaction's locks)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


def _resource_locks(names: Iterable[str]) -> str:
    """pg_advisory_xact_lock calls for the names, in one order for every writer (no cycles)."""
    return ", ".join(f"pg_advisory_xact_lock({k})" for k in sorted({resource_key(n) for n in names}))


_WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.I)
_INSERT = re.compile(r"^\s*INSERT\b", re.I)
_ENDS = re.compile(r"^(COMMIT|END|ROLLBACK)\s*;?\s*$", re.I)
# A change to what authentication reads (m031's triggers fire on these tables): whatever sent it,
# the writer waits after its commit until no replica's cache holds the old rows (auth_changed).
_AUTH_WRITE = re.compile(r"^\s*(UPDATE|DELETE\s+FROM)\s+(secrets|members)\b", re.I)


# ------------------------------------------------------------------------------- SQL translation

_TOKEN = re.compile(r"""'(?:[^']|'')*'|"(?:[^"]|"")*"|\?|(?<!:):([A-Za-z_]\w*)|%|--[^\n]*""")
_REWRITES = [
    # SQLite's indexes on (owner_type, IFNULL(member_id, '')) are used only by that spelling
    (re.compile(r"\bIFNULL\s*\(", re.I), "COALESCE("),
]


@functools.lru_cache(maxsize=2048)
def translate(sql: str) -> str:
    """SQLite spelling -> PostgreSQL spelling (cached: the store's statements are constants)."""
    def token(m: re.Match) -> str:
        t = m.group(0)
        if t == "?":
            return "%s"
        if t == "%":
            return "%%"
        if m.group(1):
            return f"%({m.group(1)})s"
        return t.replace("%", "%%")    # psycopg reads % everywhere, string literals included

    out = _TOKEN.sub(token, sql)
    for pattern, repl in _REWRITES:
        out = pattern.sub(repl, out)
    return out


_PLACEHOLDER = re.compile(r"%%|%\((\w+)\)s|%s")


@functools.lru_cache(maxsize=256)
def positional(sql: str) -> tuple[str, tuple]:
    """A translated statement with $1, $2, ... for PREPARE (a named value used twice is one
    parameter), and the order of its values: names for a statement with named values, positions
    otherwise. A literal %% stays as it is (the message is bound by psycopg, which reads it as %)."""
    order: list = []

    def number(m: re.Match) -> str:
        if m.group(0) == "%%":
            return "%%"
        key = m.group(1) if m.group(1) is not None else len(order)
        if key not in order:
            order.append(key)
        return f"${order.index(key) + 1}"

    return _PLACEHOLDER.sub(number, sql), tuple(order)


def _params(params: Params) -> tuple | dict:
    if params is None:
        return ()      # always given, so psycopg always reads %% as % (translate doubles every %)
    if isinstance(params, dict):
        return {k: _value(v) for k, v in params.items()}
    return tuple(_value(v) for v in params)


def _value(v: object) -> object:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, memoryview):
        return bytes(v)
    return v


# ------------------------------------------------------------------------------- rows and errors

class Row:
    """A result row read by index or by column name, like sqlite3.Row."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: tuple, index: dict[str, int]):
        self._values, self._index = values, index

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def keys(self) -> list[str]:
        return list(self._index)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Row) and self._values == other._values and self._index == other._index

    __hash__ = None  # type: ignore[assignment]  # equal rows compare equal; a row is not a dict key

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values))!r})"


def _row_factory(cursor: Any) -> Callable[[tuple], Row]:
    # column names straight from the result: cursor.description builds an object per column
    result = cursor.pgresult
    names = [(result.fname(i) or b"").decode() for i in range(result.nfields)] if result is not None else []
    index = {name: i for i, name in enumerate(names)}
    return lambda values: Row(values, index)


class _NumericLoader(Loader):
    """numeric (SUM and AVG of bigint) as int when whole, float otherwise, as SQLite answers."""

    def load(self, data: Any) -> int | float:
        d = Decimal(bytes(data).decode())
        return int(d) if d == d.to_integral_value() else float(d)


def engine_error(e: Exception) -> Exception:
    """The store's error (engine/db: IntegrityError, OperationalError, WorkspaceBusy,
    StorageRefused, StoreLost) for what PostgreSQL reported; any other psycopg error as it is."""
    msg = (getattr(getattr(e, "diag", None), "message_primary", None) or str(e)).splitlines()[0]
    if isinstance(e, NoAnswer):
        return StoreLost(msg)
    if isinstance(e, pg_errors.UniqueViolation):
        return IntegrityError(f"UNIQUE constraint failed: {msg}")
    if isinstance(e, pg_errors.ForeignKeyViolation):
        return IntegrityError(f"FOREIGN KEY constraint failed: {msg}")
    if isinstance(e, pg_errors.CheckViolation):
        return IntegrityError(f"CHECK constraint failed: {msg}")
    if isinstance(e, pg_errors.NotNullViolation):
        return IntegrityError(f"NOT NULL constraint failed: {msg}")
    if isinstance(e, (pg_errors.LockNotAvailable, pg_errors.DeadlockDetected, pg_errors.SerializationFailure,
                      pg_errors.QueryCanceled)):
        return WorkspaceBusy(f"database is locked: {msg}")
    if isinstance(e, pg_errors.UndefinedTable):
        return OperationalError(f"no such table: {msg}")
    sqlstate = getattr(e, "sqlstate", None) or ""
    if sqlstate[:2] == "08" or sqlstate in _ENDED_SESSION or (isinstance(e, psycopg.OperationalError)
                                                             and not sqlstate):
        return StoreLost(f"PostgreSQL: connection lost{f', SQLSTATE {sqlstate}' if sqlstate else ''}")
    if sqlstate[:2] in ("53", "58"):   # insufficient resources, system error: as a full or failing disk
        cause = _STORAGE_CAUSES.get(sqlstate) or _STORAGE_CAUSES[sqlstate[:2] + "000"]
        return StorageRefused(f"PostgreSQL: {cause}, SQLSTATE {sqlstate}")
    return e


# What a refusal of SQLSTATE class 53 or 58 is called in the one line a client reads (the database
# server's own message, which may name its files, stays in its log).
_STORAGE_CAUSES = {"53000": "insufficient resources", "53100": "disk full", "53200": "out of memory",
                   "53300": "too many connections", "53400": "configuration limit exceeded",
                   "58000": "system error", "58030": "I/O error", "58P01": "file not found",
                   "58P02": "file already exists"}
# The server ended the session: admin_shutdown (pg_terminate_backend, a fast shutdown),
# crash_shutdown, cannot_connect_now (starting up or shutting down), idle_session_timeout.
_ENDED_SESSION = frozenset({"57P01", "57P02", "57P03", "57P05"})
# A connection refused for want of slots (SQLSTATE 53300, which libpq reports as text only).
_NO_SLOT = re.compile(r"too many (clients|connections)|remaining connection slots are reserved", re.I)


def _nul_error() -> ApiError:
    return ApiError("invalid_request", "Text may not contain a NUL character (\\x00); remove it and retry.")


def _is_nul(e: Exception) -> bool:
    return "NUL" in str(e) or isinstance(e, (pg_errors.CharacterNotInRepertoire, pg_errors.UntranslatableCharacter))


def _raise_mapped(e: Exception) -> NoReturn:
    """A statement's failure as the engine expects it: a NUL in text is 400, a psycopg error its
    store counterpart (engine_error), anything else as it was."""
    if isinstance(e, ValueError):    # psycopg refuses a NUL in text before sending it
        if "NUL" in str(e):
            raise _nul_error() from None
        raise e
    if _is_nul(e):
        raise _nul_error() from None
    mapped = engine_error(e)
    if mapped is e:
        raise e
    raise mapped from None


# ------------------------------------------------------------------------------- the connection

class Cursor:
    """What conn.execute answers: fetchone/fetchall/iteration, rowcount, lastrowid."""

    def __init__(self, conn: PgConnection, cur: Any):
        self._conn, self._cur = conn, cur

    def _has_rows(self) -> bool:
        """Whether the statement answered rows (cheaper than `description`, which builds its
        column objects anew on every read: ~0.1 ms of CPU per token issue)."""
        result = self._cur.pgresult
        return result is not None and result.status == ExecStatus.TUPLES_OK

    def fetchone(self) -> Any:
        return self._cur.fetchone() if self._has_rows() else None

    def fetchall(self) -> list:
        return self._cur.fetchall() if self._has_rows() else []

    def fetchmany(self, size: int = 1) -> list:
        return self._cur.fetchmany(size) if self._has_rows() else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

    @property
    def rowcount(self) -> int:
        return self._cur.rowcount

    @property
    def description(self) -> Any:
        return self._cur.description

    @property
    def lastrowid(self) -> int | None:
        """The id the last INSERT drew from a sequence (tables with a rowid-like identity)."""
        try:
            return self._conn._raw_one("SELECT lastval()")
        except psycopg.Error:
            return None

    def close(self) -> None:
        self._cur.close()


class Rows:
    """What a prepared statement run straight on libpq answers (PgConnection._execute_prepared):
    its rows, already loaded."""

    lastrowid = None
    description = None

    def __init__(self, rows: list, rowcount: int):
        self._rows, self.rowcount = rows, rowcount

    def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list:
        rows, self._rows = self._rows, []
        return rows

    def fetchmany(self, size: int = 1) -> list:
        rows, self._rows = self._rows[:size], self._rows[size:]
        return rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

    def close(self) -> None:
        self._rows = []


class HeldCursor:
    """What an appending transaction's INSERT answers: one row, sent with the COMMIT."""

    rowcount = 1
    lastrowid = None
    description = None

    def fetchone(self) -> Any:
        return None

    def fetchall(self) -> list:
        return []

    def fetchmany(self, size: int = 1) -> list:
        return []

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def close(self) -> None:
        pass


class PgConnection:
    """One PostgreSQL session, autocommit, used like a sqlite3 connection by the store."""

    dialect = "postgres"
    write_lock = None   # the writer lock is the advisory lock; no in-process queue needed
    row_factory = None  # accepted and ignored (rows are always Row)

    def __init__(self, url: str):
        self.url = url   # first: repr() of a connection that failed to open still names its workspace
        self._begin: tuple[str, ...] = ()   # a writer's BEGIN, sent with its first statement
        self._appending = False             # in an appends_only transaction: INSERTs wait for COMMIT
        self._held: list[str] = []          # those INSERTs, bound, in order
        self.busy_timeout_ms = busy_timeout_ms()
        timeout_ms = db_timeout_ms()
        try:
            self._session = Session.connect(url, autocommit=True, cursor_factory=psycopg.ClientCursor,
                                            application_name="wsctl", **connect_kwargs(url, timeout_ms))
        except pg_errors.ConnectionTimeout:
            raise ApiError("unreachable", f"The PostgreSQL workspace {redacted(url)} did not answer within "
                                          f"{timeout_ms} ms (WSCTL_DB_TIMEOUT_MS); retry later.") from None
        except psycopg.OperationalError as e:
            first = str(e).strip().splitlines()[-1] if str(e).strip() else "no answer"
            first = first.replace(url, redacted(url))
            if _NO_SLOT.search(first):     # the server runs but has no connection to spare
                reason = first.rpartition("FATAL:")[2].strip() or first
                raise ApiError("unreachable", f"The PostgreSQL workspace {redacted(url)} refused a connection "
                                              f"({reason}); nothing was saved, retry later.") from None
            raise ApiError("unreachable", f"Cannot reach the PostgreSQL workspace {redacted(url)}: "
                                          f"{first}. Check the URL and that the server runs.") from None
        self._session.liveness = liveness_of(url)
        self._session.silent_s = timeout_ms / 2000
        # No protocol-level prepares of psycopg's own: once it has one, psycopg answers a ROLLBACK (or
        # a DROP or ALTER) with DEALLOCATE ALL, which took this session's SQL-level PREPAREs
        # (_prepared, wsctl_qN) with it, and the next hot read failed ("prepared statement does not
        # exist": a 500 after any 409). The hot reads are prepared by _prepared, the rest need not be.
        self._session.prepare_threshold = None
        self._session.adapters.register_loader("numeric", _NumericLoader)
        self._session.row_factory = _row_factory  # type: ignore[assignment]  # rows are Row
        self._primary_keys: dict[str, list[str]] = {}
        self._sql_prepared: dict[str, str] = {}   # statement -> its SQL-level PREPAREd name (this session)
        self._pending_prepared: dict[str, str] = {}   # PREPAREd in the open transaction (a rollback undoes them)
        self._prepare_count = 0
        self._after_commit: list = []   # run once the open transaction commits (after_commit)
        self._columns: dict[str, dict[str, int]] = {}   # a prepared name -> its result's column index

    def __repr__(self) -> str:
        return f"PgConnection({redacted(self.url)!r})"

    @property
    def broken(self) -> bool:
        """The session is gone (StoreLost was raised on it, or it was closed): open another."""
        return self._session.broken or self._session.closed

    @property
    def _pg(self) -> psycopg.Connection:
        """The psycopg session, for what runs on it directly (store/blob_chunks.py): a writer's
        BEGIN still waiting for its first statement is sent first."""
        if self._begin or self._held:
            self._send_begin()
        return self._session

    def _send_begin(self, end: tuple[str, ...] = ()) -> None:
        """A writer's BEGIN still waiting, the INSERTs it holds, and `end` (COMMIT), at once."""
        begin, held, self._begin, self._held = self._begin, self._held, (), []
        try:
            self._session.execute("; ".join((*begin, *held, *end)))
        except psycopg.Error as e:
            if not self._session.closed and self._session.info.transaction_status != TransactionStatus.IDLE:
                self._session.execute("ROLLBACK")
            if _is_nul(e):
                raise _nul_error() from None
            raise engine_error(e) from None

    @property
    def in_transaction(self) -> bool:
        return bool(self._begin) or self._session.info.transaction_status != TransactionStatus.IDLE

    def _raw_one(self, sql: str, params: Params = None) -> Any:
        with self._pg.cursor(row_factory=psycopg.rows.tuple_row) as cur:
            cur.execute(sql, params)
            row = cur.fetchone()
            return row[0] if row else None

    def begin_writer(self, shared: bool = False, resources: tuple[str, ...] = ()) -> None:
        """BEGIN and the writer lock (db.transaction), sent with the transaction's first statement:
        shared for a transaction that only appends, or that names the resources it changes (whose
        locks it then holds alone, in the same statement); alone otherwise."""
        self._appending, self._held = shared and not resources, []
        if resources:
            locks = f"pg_advisory_xact_lock_shared({LOCK_CLASS}, {WRITER_LOCK}), {_resource_locks(resources)}"
        else:
            locks = f"pg_advisory_xact_lock{'_shared' if shared else ''}({LOCK_CLASS}, {WRITER_LOCK})"
        self._begin = ("BEGIN", f"SELECT {locks}")

    def lock_resources(self, names: Iterable[str]) -> None:
        """db.lock_resources: the resources' locks, with the BEGIN when it has not gone yet (outside
        a transaction nothing: each statement commits alone)."""
        if not self.in_transaction:
            return
        statement = f"SELECT {_resource_locks(names)}"
        if self._begin:
            self._begin = (*self._begin, statement)
        else:
            self._run(statement, (), many=False)

    def execute(self, sql: str, params: Params = None, /) -> Cursor | HeldCursor | Rows:
        if not self._pending_prepared and not self._after_commit:
            return self._execute(sql, params)
        head = sql.lstrip()[:11].upper()
        try:
            cur = self._execute(sql, params)
        except BaseException:
            if head.startswith(("COMMIT", "END", "ROLLBACK")):
                self._pending_prepared.clear()
                if not head.startswith("ROLLBACK TO"):
                    self._after_commit.clear()
            raise
        if head.startswith(("COMMIT", "END")):
            self._sql_prepared.update(self._pending_prepared)
            self._pending_prepared.clear()
            done, self._after_commit = self._after_commit, []
            for fn in done:
                fn()
        elif head.startswith("ROLLBACK"):   # to a savepoint too: what it undid is not known here
            self._pending_prepared.clear()
            if not head.startswith("ROLLBACK TO"):
                self._after_commit.clear()
        return cur

    def after_commit(self, fn: Callable[[], None]) -> None:
        """Run fn() once the open transaction commits (dropped if it rolls back); at once outside one."""
        if self.in_transaction:
            self._after_commit.append(fn)
        else:
            fn()

    @property
    def auth_cache(self) -> AuthCache:
        """This process's cache of authentication's lookups for this workspace (pg_auth_cache)."""
        from workspacectl.engine.db.pg_auth_cache import cache_for

        return cache_for(self.url)

    def auth_changed(self) -> None:
        """A secret, member or the workspace's name changed (m031's triggers told the listeners):
        once committed, wait until every replica's cache has let it go (pg_auth_cache)."""
        from workspacectl.engine.db.pg_auth_cache import wait_until_seen

        self.after_commit(lambda: wait_until_seen(self))

    def _execute(self, sql: str, params: Params = None) -> Cursor | HeldCursor | Rows:
        head = sql.lstrip()[:16].upper()
        if self._session.closed and head.startswith("ROLLBACK"):
            self._begin, self._held, self._appending = (), [], False
            return HeldCursor()   # the session ended (StoreLost): the server rolled it back
        if head.startswith("BEGIN IMMEDIATE"):
            self.begin_writer()
            return Cursor(self, self._session.cursor())
        if head.startswith("PRAGMA"):
            return Cursor(self, self._session.cursor())
        if (self._begin or self._held) and _ENDS.match(head):
            self._appending = False
            if head.startswith("ROLLBACK") or not self._held:
                self._held = []
                if not self._begin:
                    return self._run(sql, (), many=False)
                self._begin = ()    # COMMIT or ROLLBACK of a transaction that sent nothing yet
                return Cursor(self, self._session.cursor())
            self._send_begin(end=("COMMIT",))     # the held INSERTs go with the COMMIT
            return Cursor(self, self._session.cursor())
        if _ENDS.match(head):
            self._appending = False
        elif self._appending and not self._begin and _INSERT.match(sql) and self.in_transaction:
            return self._hold(translate(sql), _params(params))
        elif type(sql) is Prepared and not self._held:
            return self._prepared(translate(sql), _params(params))
        cur = self._run(translate(sql), _params(params), many=False)
        if _AUTH_WRITE.match(sql):
            self.auth_changed()
        return cur

    def _prepared(self, sql: str, params: Any) -> Cursor | Rows:
        """A Prepared read: `EXECUTE name(values)` of a statement the session PREPAREd by SQL (in
        the same message the first time), so the server neither parses nor plans it again; as a
        writer's first statement it goes with the BEGIN and lock in that one simple-protocol
        message: one round trip (psycopg's protocol-level prepare needed a message of its own
        after BEGIN: a round trip, a wait and a wake-up more per token). A plan whose result
        changed under a migration is dropped (DEALLOCATE ALL) and the message sent again; outside
        a transaction, or as a writer's first statement."""
        text, names = positional(sql)
        values = tuple(params[n] for n in names) if isinstance(params, dict) else tuple(params)
        if not self._begin and (name := self._sql_prepared.get(sql)) is not None and not self.in_transaction:
            rows = self._execute_prepared(sql, name, values)
            if rows is not None:
                return rows
        call = f"EXECUTE {{}}({', '.join(['%s'] * len(values))})"
        for attempt in (1, 2):
            begin, self._begin = self._begin, ()
            name = self._sql_prepared.get(sql) or self._pending_prepared.get(sql)
            before = begin
            if name is None:
                self._prepare_count += 1
                name = f"wsctl_q{self._prepare_count}"    # a new name each try: a failed one may linger
                before = (*begin, f"PREPARE {name} AS {text}")
            cur = self._session.cursor()
            try:
                cur.execute("; ".join((*before, call.format(name))), values)
                for _ in before:
                    cur.nextset()
            except (pg_errors.FeatureNotSupported, pg_errors.InvalidSqlStatementName) as e:
                # "cached plan must not change result type" (a migration changed the table), or the
                # name is gone (its PREPARE was undone with a rolled-back savepoint): prepare again
                if begin and self._session.info.transaction_status != TransactionStatus.IDLE:
                    self._session.execute("ROLLBACK")     # the transaction this call began
                if attempt == 2 or self._session.info.transaction_status != TransactionStatus.IDLE:
                    raise engine_error(e) from None
                if isinstance(e, pg_errors.FeatureNotSupported):
                    self._session.execute("DEALLOCATE ALL")
                    self._sql_prepared.clear()
                self._sql_prepared.pop(sql, None)
                self._pending_prepared.pop(sql, None)
                self._begin = begin
                continue
            except (psycopg.Error, ValueError) as e:
                _raise_mapped(e)
            if self._session.info.transaction_status == TransactionStatus.IDLE:
                self._sql_prepared[sql] = name
            elif before is not begin:   # PREPAREd inside a transaction: kept only if it commits
                self._pending_prepared[sql] = name
            return Cursor(self, cur)
        raise AssertionError("unreachable")

    def _execute_prepared(self, sql: str, name: str, values: tuple) -> Rows | None:
        """A statement this session has PREPAREd, outside a transaction: Bind and Execute by its
        name straight on libpq (text values, their types the PREPARE's), so neither psycopg's
        cursor nor client-side quoting nor an EXECUTE statement to parse runs per call (the hot
        path: a token issue's one call, authentication's read). None when a value is not text
        (or None) or holds a NUL, or when the name is gone or its plan stale (forgotten here): the caller's
        EXECUTE path then prepares again."""
        if not all(v is None or (type(v) is str and "\x00" not in v) for v in values):
            return None    # libpq reads a text value to its first NUL: the cursor's path refuses it (400)
        from psycopg import generators
        from psycopg.adapt import Transformer

        session = self._session
        try:
            with session.lock:
                session.pgconn.send_query_prepared(name.encode(), [None if v is None else v.encode()
                                                                  for v in values])
                results = session.wait(generators.execute(session.pgconn))
            result = results[-1]
            if result.status == ExecStatus.FATAL_ERROR:
                raise pg_errors.error_from_result(result, encoding=session.info.encoding)
        except (pg_errors.FeatureNotSupported, pg_errors.InvalidSqlStatementName) as e:
            self._sql_prepared.pop(sql, None)
            if isinstance(e, pg_errors.FeatureNotSupported):   # "cached plan must not change result type"
                self._session.execute("DEALLOCATE ALL")
                self._sql_prepared.clear()
            return None
        except (psycopg.Error, ValueError) as e:
            _raise_mapped(e)
        if result.status != ExecStatus.TUPLES_OK:
            return Rows([], result.command_tuples or 0)
        index = self._columns.get(name)
        if index is None:     # one statement's columns: read once per name (a new PREPARE has a new name)
            index = self._columns[name] = {(result.fname(i) or b"").decode(): i for i in range(result.nfields)}
        loader = Transformer(session)
        loader.set_pgresult(result)
        return Rows(loader.load_rows(0, result.ntuples, lambda values: Row(tuple(values), index)), result.ntuples)

    def _hold(self, sql: str, params: Any) -> HeldCursor:
        """An appending transaction's INSERT, bound now and sent with the COMMIT."""
        try:
            self._held.append(psycopg.ClientCursor(self._session).mogrify(sql, params))
        except (psycopg.Error, ValueError) as e:
            if _is_nul(e):
                raise _nul_error() from None
            raise
        return HeldCursor()

    def executemany(self, sql: str, seq: Iterable[Params], /) -> Cursor:
        return self._run(translate(sql), [_params(p) for p in seq], many=True)

    def _run(self, sql: str, params: Any, many: bool) -> Cursor:
        if self._held:
            self._send_begin()      # a statement after held INSERTs sees them
        guard = self.in_transaction and _WRITE.match(sql) is not None
        if many and self._begin:
            self._send_begin()
        before, self._begin = (*self._begin, *(("SAVEPOINT wsctl_stmt",) if guard else ())), ()
        cur = self._session.cursor()
        try:
            if many:
                if guard:
                    self._session.execute("SAVEPOINT wsctl_stmt")
                cur.executemany(sql, params)
                if guard:
                    self._session.execute("RELEASE SAVEPOINT wsctl_stmt")
            elif before:   # one message; the cursor then reads the statement's own result
                after = ("RELEASE SAVEPOINT wsctl_stmt",) if guard else ()
                cur.execute("; ".join((*before, sql.rstrip().rstrip(";"), *after)), params)
                for _ in before:
                    cur.nextset()
            else:
                cur.execute(sql, params)
        except psycopg.Error as e:
            if guard and self._session.info.transaction_status == TransactionStatus.INERROR:
                try:
                    self._session.execute("ROLLBACK TO SAVEPOINT wsctl_stmt")
                except psycopg.Error:
                    pass    # the BEGIN sent with it failed (lock timeout): the engine rolls back
            _raise_mapped(e)
        except ValueError as e:
            _raise_mapped(e)
        return Cursor(self, cur)

    def execute_script(self, sql: str) -> None:
        """Several statements at once (a migration's DDL): no parameters, no translation."""
        try:
            self._pg.execute(sql)
        except psycopg.Error as e:
            raise engine_error(e) from None

    def advisory_lock(self, key: int) -> None:
        """A session-level lock (migrations at start-up): held until advisory_unlock. Until then the
        session waits without bounds (for another process's migrations; a long DDL statement)."""
        self._pg.execute("SET lock_timeout = 0; SET statement_timeout = 0")
        self._session.bounded = False
        self._pg.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_CLASS, key))

    def advisory_unlock(self, key: int) -> None:
        self._pg.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_CLASS, key))
        self._pg.execute("RESET lock_timeout; RESET statement_timeout")
        self._session.bounded = True

    def commit(self) -> None:
        pass

    def close(self) -> None:
        self._session.close()
