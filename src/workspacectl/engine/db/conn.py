"""The store's connection, as the store's functions take it: what both engines' connections do.

`Conn` is satisfied by SQLite's connection (sqlite3.Connection, opened by db.open_db) and by the
PostgreSQL door's (postgres.PgConnection): `execute` and `executemany` with `?` or `:name`
values, answering a `Cursor`; `in_transaction`. What only one engine has is reached through
the functions of engine/db (transaction, lock_resources, savepoint, ...) or written natively in
the store under a name that says which engine it is for (store/blob_chunks.py,
store.vault.issue_token_at_once).

`Row` is a result row of either engine (sqlite3.Row, postgres.Row): read by index or by column
name, `keys()`, `dict(row)`. It is typed Any: the engine's wings still annotate rows as sqlite3.Row.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol, TypeAlias

Row: TypeAlias = Any
Params: TypeAlias = Any   # a sequence of values for `?`, or a mapping for `:name`


class Cursor(Protocol):
    """What `Conn.execute` answers."""

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> int | None: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int = ..., /) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    """A connection of either engine, as the store uses it."""

    def execute(self, sql: str, params: Params = ..., /) -> Cursor: ...

    def executemany(self, sql: str, seq: Iterable[Params], /) -> Cursor: ...

    @property
    def in_transaction(self) -> bool: ...
