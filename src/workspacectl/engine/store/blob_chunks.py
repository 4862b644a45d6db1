"""Blob SQL of a PostgreSQL workspace (engine/blobs/postgres.py; tables of migration m016_blobs).

Run on the session's psycopg connection itself (`raw`), so chunks go by binary COPY and come
back as binary bytea, inside whatever transaction the workspace connection has open.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from workspacectl.engine.db.conn import Conn


def raw(conn: Conn) -> Any:
    """The psycopg connection under the workspace's connection wrapper (engine/db/postgres.py)."""
    return getattr(conn, "_pg", conn)


@contextmanager
def _cursor(conn: Conn) -> Iterator[Any]:
    """A cursor on the session itself (server-side binding, binary results); a psycopg error in the
    block becomes what the engine expects, as for SQL through the wrapper (a full disk: 503)."""
    import psycopg
    from psycopg.rows import tuple_row

    from workspacectl.engine.db.postgres import engine_error

    try:
        with psycopg.Cursor(raw(conn), row_factory=tuple_row) as cur:
            yield cur
    except psycopg.Error as e:
        raise engine_error(e) from None


def insert_blob(conn: Conn, sha: str, size: int, chunks: int, created_at: float) -> bool:
    """A blob row; False when the blob is already stored (its chunks are then left as they are)."""
    with _cursor(conn) as cur:
        cur.execute("INSERT INTO blob (sha256, size, chunks, created_at) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (sha256) DO NOTHING", (sha, size, chunks, created_at))
        return cur.rowcount == 1


def copy_chunks(conn: Conn, sha: str, chunks: Iterable[bytes]) -> int:
    """Write chunks 0, 1, ... of a blob by binary COPY; answers how many. The COPY is one statement
    as long as the blob (a 1 GiB bundle: ~35 s on a busy machine), so inside the recording
    transaction it runs without the session's statement_timeout (engine/db/pg_session.py); a
    server that stops taking the rows is still caught by the session's silence bound."""
    from psycopg.pq import TransactionStatus

    n = 0
    with _cursor(conn) as cur:
        if raw(conn).info.transaction_status == TransactionStatus.INTRANS:
            cur.execute("SET LOCAL statement_timeout = 0")
        with cur.copy("COPY blob_chunk (sha256, seq, data) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["text", "int4", "bytea"])
            for chunk in chunks:
                cp.write_row((sha, n, chunk))
                n += 1
    return n


def blob_info(conn: Conn, sha: str) -> tuple[int, int] | None:
    """(size, chunk count) of a stored blob, or None."""
    with _cursor(conn) as cur:
        cur.execute("SELECT size, chunks FROM blob WHERE sha256 = %s", (sha,))
        row = cur.fetchone()
    return (row[0], row[1]) if row else None


def chunk(conn: Conn, sha: str, seq: int) -> bytes | None:
    with _cursor(conn) as cur:
        cur.execute("SELECT data FROM blob_chunk WHERE sha256 = %s AND seq = %s", (sha, seq), binary=True)
        row = cur.fetchone()
    return bytes(row[0]) if row else None


def delete_blob(conn: Conn, sha: str) -> bool:
    """Delete a blob and its chunks (ON DELETE CASCADE); True when one was there."""
    with _cursor(conn) as cur:
        cur.execute("DELETE FROM blob WHERE sha256 = %s", (sha,))
        return cur.rowcount == 1


def digests_older_than(conn: Conn, before: float) -> Iterator[str]:
    with _cursor(conn) as cur:
        cur.execute("SELECT sha256 FROM blob WHERE created_at < %s ORDER BY sha256", (before,))
        rows = cur.fetchall()
    return (r[0] for r in rows)


def counts(conn: Conn) -> tuple[int, int, int]:
    """(blobs, chunks, bytes) stored."""
    with _cursor(conn) as cur:
        cur.execute("SELECT (SELECT count(*) FROM blob), (SELECT count(*) FROM blob_chunk),"
                    " (SELECT coalesce(sum(size), 0) FROM blob)")
        b, c, s = cur.fetchone()
    return int(b), int(c), int(s)
