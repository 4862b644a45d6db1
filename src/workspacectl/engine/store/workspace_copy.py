"""Whole-table SQL for copying a workspace (engine/workspaces/copy.py): the table list of a
schema, counts, rows in key order, bulk inserts, a read snapshot, identity sequences."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

from workspacectl.engine.db.conn import Conn


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sqlite_tables(conn: Conn) -> list[tuple[str, str]]:
    """(name, create sql) of a SQLite database's tables, in creation order."""
    return [(r[0], r[1] or "") for r in
            conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid").fetchall()]


def sqlite_columns(conn: Conn, table: str) -> list[tuple[str, int]]:
    """(column, position in the primary key, 0 when not in it) of a SQLite table."""
    return [(r[1], r[5]) for r in conn.execute(f"PRAGMA table_info({_q(table)})").fetchall()]


def count_rows(conn: Conn, table: str) -> int:
    return conn.execute(f"SELECT count(*) FROM {_q(table)}").fetchone()[0]


def read_rows(conn: Conn, table: str, columns: Sequence[str], order: Sequence[str], batch: int) -> Iterator[list[tuple]]:
    """The rows of a table in key order, `batch` at a time (tuples)."""
    cols = ", ".join(map(_q, columns))
    cur = conn.execute(f"SELECT {cols} FROM {_q(table)} ORDER BY {', '.join(map(_q, order))}")
    while rows := cur.fetchmany(batch):
        yield [tuple(r) for r in rows]


def insert_rows(conn: Conn, table: str, columns: Sequence[str], rows: list[tuple]) -> None:
    marks = ", ".join("?" * len(columns))
    conn.executemany(f"INSERT INTO {_q(table)} ({', '.join(map(_q, columns))}) VALUES ({marks})", rows)


def after_copy(conn: Conn, table: str) -> None:
    """PostgreSQL draws ids from identity sequences: move each past the copied ids (SQLite's
    AUTOINCREMENT follows an explicit id by itself). And it plans from statistics that autovacuum
    gathers only some time after a bulk load: ANALYZE the copied table now (in the copy's
    transaction, committed with it), or the first reads of a large table get plans made for an
    empty one (the access log's first page at 100,000 rows: ~55-115 ms through a bitmap scan and
    a sort of every row, 0.04 ms through the (credential_id, id) index once analyzed)."""
    if getattr(conn, "dialect", "sqlite") != "postgres":
        return
    conn.execute(f"ANALYZE {_q(table)}")
    cols = conn.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema()"
                        " AND table_name = ? AND is_identity = 'YES'", (table,)).fetchall()
    for (col,) in cols:
        conn.execute(f"SELECT setval(pg_get_serial_sequence(?, ?), COALESCE((SELECT max({_q(col)}) FROM {_q(table)}), 0) + 1,"
                     " false)", (table, col))


def begin_snapshot(conn: Conn) -> None:
    """A read transaction: every later read sees the database as of its first one."""
    if getattr(conn, "dialect", "sqlite") == "postgres":
        conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    else:
        conn.execute("BEGIN")


def end_snapshot(conn: Conn) -> None:
    conn.execute("ROLLBACK")


def has_setting(conn: Conn, key: str) -> bool:
    return conn.execute("SELECT 1 FROM settings WHERE key = ?", (key,)).fetchone() is not None
