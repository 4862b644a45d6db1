"""Copy a whole workspace into an empty one: every row and every blob, across stores.

    copy_between(src_location, dst_location, progress=None) -> summary    (wsctl admin copy-workspace)
    copy_workspace(src, dst, progress=None) -> summary                    (two open workspaces)

copy_between refuses, changing nothing: the same workspace twice (invalid_request), a source
that is not there (not_found), a target that is not empty (conflict), a target that cannot reach
the key the source's secrets are sealed under (unauthenticated). A target it made is removed
again when the copy fails.

`src` is an open workspace; `dst` a prepared, empty one (its schema made by the migrations, no
row in any table copied). Rows are copied as stored: sealed secrets stay sealed under the same
key (never unsealed, never re-sealed), ids, timestamps and settings stay. Blobs are read from the
source store and published into the target's. All of it happens inside ONE write transaction on
the target, which also verifies before it commits: per table the row count and a SHA-256 over
the rows in key order, read back from the target; every blob read back and hashed. Any mismatch
rolls everything back. The catalog search index is derived data: rebuilt on the target, not copied.

The table list and order come from the migrations themselves (applied to a scratch in-memory
SQLite database), so both stores are walked the same way and a new table is copied without
anyone remembering to list it; a table every copy must leave alone goes in SKIP.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workspacectl.engine.db import transaction
from workspacectl.engine.store import workspace_copy as sql
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn
    from workspacectl.engine.workspaces.folder import Workspace

# Derived or per-store bookkeeping: the migrations table (the target ran its own), the search
# index (rebuilt on the target by the catalog wing), the running servers' leases (m013: held by
# processes of the source, not of the target), SQLite internals.
SKIP_PREFIXES = ("sqlite_", "operation_search")
SKIP = {"migrations", "leases"}
# Tables whose SQLite rowid is data (memory_notes: the order notes were queued in, a `rowid`
# column on PostgreSQL): copied as a column of its own.
ROWID_TABLES = {"memory_notes"}
BATCH = 500

Progress = Callable[[str, int, int], None]   # (what, done, total)


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]
    order: tuple[str, ...]      # primary key columns (all columns when it has none)


def schema() -> list[Table]:
    """Every table to copy, in creation order (foreign keys point backwards), from a scratch
    SQLite database the migrations built."""
    from workspacectl.engine.db import open_db
    from workspacectl.engine.migrations import apply_migrations

    conn = open_db(":memory:")
    try:
        apply_migrations(conn)
        tables = []
        for name, create in sql.sqlite_tables(conn):
            if name in SKIP or name.startswith(SKIP_PREFIXES) or "VIRTUAL TABLE" in create.upper():
                continue
            info = sql.sqlite_columns(conn, name)
            columns = tuple(c for c, _ in info) + (("rowid",) if name in ROWID_TABLES else ())
            pk = tuple(c for c, _ in sorted((i for i in info if i[1]), key=lambda i: i[1]))
            tables.append(Table(name, columns, pk or columns))
        return tables
    finally:
        conn.close()


def row_counts(ws: Workspace, tables: list[Table]) -> dict[str, int]:
    conn = ws.conn()
    return {t.name: sql.count_rows(conn, t.name) for t in tables}


def require_empty(ws: Workspace, tables: list[Table], shown: str) -> None:
    """The target holds no row in any copied table and no blob (a schema alone is empty)."""
    full = {name: n for name, n in row_counts(ws, tables).items() if n}
    blob = next(iter(ws.blob_store.digests()), None)
    if full or blob:
        what = ", ".join(f"{n} {name}" for name, n in sorted(full.items())[:3]) or "stored blobs"
        raise ApiError("conflict", f"The target {shown} is not empty ({what}); name an empty folder or "
                                   "database, nothing was copied.")


def copy_between(src_location: str, dst_location: str, progress: Progress | None = None) -> dict:
    if _same(src_location, dst_location):
        raise ApiError("invalid_request", "The source and the target are the same workspace; name another "
                                          "target (an empty folder or database).")
    src = _workspace_type(src_location).open(src_location)
    tables = schema()
    dst, undo = _prepare_target(dst_location, tables)
    try:
        summary = copy_workspace(src, dst, progress, tables)
    except BaseException:
        undo()
        raise
    summary.update({"source": _shown(src), "target": _shown(dst)})
    return summary


def _workspace_type(location: str | Path) -> type[Workspace]:
    """Workspace for a folder, PgWorkspace for a postgresql:// URL (engine/workspaces/__init__.py)."""
    from workspacectl.engine.workspaces import workspace_type

    return workspace_type(str(location))


def _shown(ws: Workspace) -> str:
    return getattr(ws, "shown", None) or str(ws.path)


def _same(a: str, b: str) -> bool:
    if _workspace_type(a) is not _workspace_type(b):
        return False
    if "://" in str(a):
        from workspacectl.formats.workspace_url import without_password

        return without_password(str(a)) == without_password(str(b))
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


def _prepare_target(location: str, tables: list[Table]) -> tuple[Workspace, Callable[[], None]]:
    """(workspace, undo): the target with its schema made by the migrations (no built-in catalog:
    the source's comes with the rows), checked empty; undo() removes what this made."""
    from workspacectl.engine.migrations import apply_migrations

    cls = _workspace_type(location)
    if "://" not in str(location):
        path = Path(location).expanduser().resolve()
        if path.exists() and not path.is_dir():
            raise ApiError("conflict", f"The target {path} is a file; name an empty folder.")
        existed = path.is_dir()
        if existed and any(path.iterdir()) and not cls.exists_at(path):
            raise ApiError("conflict", f"The target {path} is not empty and holds no workspace; name an empty "
                                       "folder, nothing was copied.")
        was_workspace = existed and cls.exists_at(path)
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o700)
        dst = cls(path)
        dst.blobs.mkdir(exist_ok=True)

        def undo() -> None:
            if was_workspace:
                return                  # refused as not empty before anything changed
            dst.close()   # this thread's connection to the target
            if existed:
                for p in path.iterdir():
                    shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
            else:
                shutil.rmtree(path, ignore_errors=True)
    else:
        dst = cls._prepare(location)

        def undo() -> None:
            pass                        # the copy's transaction rolled back: only the schema is left
    apply_migrations(dst.conn())
    try:
        require_empty(dst, tables, _shown(dst))
    except BaseException:
        undo()
        raise
    return dst, undo


def copy_workspace(src: Workspace, dst: Workspace, progress: Progress | None = None, tables: list[Table] | None = None) -> dict:
    tables = tables or schema()
    progress = progress or (lambda what, done, total: None)
    src_conn, dst_conn = src.conn(), dst.conn()
    summary: dict = {"tables": {}, "rows": 0, "blobs": 0, "blobBytes": 0}
    _give_key_file(src, dst)
    with _snapshot(src_conn), transaction(dst_conn):
        for t in tables:
            digest, n = hashlib.sha256(), 0
            total = sql.count_rows(src_conn, t.name)
            for batch in _batches(src_conn, t):
                for row in batch:
                    _fold(digest, row)
                sql.insert_rows(dst_conn, t.name, t.columns, batch)
                n += len(batch)
                progress(t.name, n, total)
            if n != total:
                raise ApiError("internal", f"Table {t.name} changed while it was copied ({total} then {n} rows); "
                                           "stop writers to the source and copy again.")
            sql.after_copy(dst_conn, t.name)
            summary["tables"][t.name] = {"rows": n, "sha256": digest.hexdigest()}
            summary["rows"] += n
        _require_keys(src, dst)
        _copy_blobs(src, dst, summary, progress)
        from workspacectl.engine.catalog.search import reindex_all

        reindex_all(dst_conn)
        _verify(dst, tables, summary)
    return summary


@contextmanager
def _snapshot(conn: Conn) -> Iterator[None]:
    """The source read as of one moment (SQLite WAL snapshot, PostgreSQL REPEATABLE READ), so
    rows copied from one table agree with those of the next."""
    sql.begin_snapshot(conn)
    try:
        yield
    finally:
        sql.end_snapshot(conn)     # nothing was written


def _give_key_file(src: Workspace, dst: Workspace) -> None:
    """A folder target gets the source's key file when the source keeps its key in one (the
    key, not any secret: the sealed values are copied as they are). The OS keyring entry is named
    by the workspace id, which is copied, and the environment is the same for both."""
    from workspacectl.engine.crypto.keys import KEY_FILE, KeyStore, write_0600

    if getattr(dst, "dialect", "sqlite") != "sqlite":
        return
    keys = KeyStore(src).read_file()
    target = Path(dst.path) / KEY_FILE
    if keys and not target.exists():
        write_0600(target, ("\n".join(k.encoded() for k in keys) + "\n").encode())


def _require_keys(src: Workspace, dst: Workspace) -> None:
    """Every key fingerprint the copied secrets were sealed under (and the recorded current one)
    is reachable from the target; else it could never unseal them."""
    from workspacectl.engine import crypto
    from workspacectl.engine.crypto.keys import ENV_KEY
    from workspacectl.engine.identity.key_rotation import _fingerprints

    need = _fingerprints(dst.conn())
    if (current := crypto._recorded_fp(dst)) is not None:
        need.add(current)
    missing = need - _reachable(dst)
    if missing:
        from workspacectl.engine.crypto import keys

        file_env = getattr(keys, "ENV_KEY_FILE", None)
        how = f"{ENV_KEY} (or {file_env}, a file holding it)" if file_env else ENV_KEY
        raise ApiError("unauthenticated", f"The target cannot reach the key the source's secrets are sealed under "
                                          f"(fingerprint {sorted(missing)[0].hex()}); set {how} to the source's key "
                                          "for this command and for every server of the target. Nothing was copied.")


def _reachable(ws: Workspace) -> set[bytes]:
    """Fingerprints of the keys a process like this one finds for `ws`: the environment, its key
    file, and its OS keyring entry when it has a workspace id (asking for one would make it)."""
    from workspacectl.engine.crypto.keys import SETTING_WS_ID, KeyStore, env_keys

    current, previous = env_keys()
    found = {k.fp for k in ([current] if current else []) + previous}
    store = KeyStore(ws)
    found |= {k.fp for k in store.read_file()}
    if sql.has_setting(ws.conn(), SETTING_WS_ID):
        found |= {k.fp for k in store.read_keyring()}
    return found


def _batches(conn: Conn, t: Table) -> Iterator[list[tuple]]:
    return sql.read_rows(conn, t.name, t.columns, t.order, BATCH)


def _fold(digest: hashlib._Hash, row: tuple) -> None:
    """A row into a table's checksum, the same whichever store it was read from."""
    for v in row:
        if isinstance(v, (bytes, bytearray, memoryview)):
            digest.update(b"b" + bytes(v).hex().encode())
        elif (isinstance(v, float) and v.is_integer()) or isinstance(v, bool):
            digest.update(b"i" + str(int(v)).encode())
        elif v is None:
            digest.update(b"n")
        else:
            digest.update(type(v).__name__[:1].encode() + str(v).encode())
        digest.update(b"\x1f")
    digest.update(b"\x1e")


def _copy_blobs(src: Workspace, dst: Workspace, summary: dict, progress: Progress) -> None:
    shas = sorted(src.blob_store.digests())
    with dst.blob_store.staging() as stage:
        for i, sha in enumerate(shas, 1):
            with src.blob_store.open(sha) as fh:
                staged = stage.put(fh)
            if staged.sha256 != sha:
                raise ApiError("internal", f"Blob {sha[:12]}… of the source reads back as {staged.sha256[:12]}…; "
                                           "the source store is damaged, nothing was copied.")
            dst.blob_store.publish(staged)
            staged.discard()
            summary["blobs"] += 1
            summary["blobBytes"] += staged.size
            progress("blobs", i, len(shas))
    summary["blobsSha256"] = hashlib.sha256("\n".join(shas).encode()).hexdigest()


def _verify(dst: Workspace, tables: list[Table], summary: dict) -> None:
    """Read the target back inside the copy's transaction: counts and checksums of every table,
    every blob hashed. A mismatch raises, and the transaction rolls everything back."""
    conn = dst.conn()
    for t in tables:
        digest, n = hashlib.sha256(), 0
        for batch in _batches(conn, t):
            for row in batch:
                _fold(digest, row)
            n += len(batch)
        want = summary["tables"][t.name]
        if n != want["rows"] or digest.hexdigest() != want["sha256"]:
            raise ApiError("internal", f"Verification failed: table {t.name} reads back with {n} rows "
                                       f"(copied {want['rows']}) or other values; nothing was copied.")
    shas = sorted(dst.blob_store.digests())
    if hashlib.sha256("\n".join(shas).encode()).hexdigest() != summary["blobsSha256"]:
        raise ApiError("internal", f"Verification failed: the target holds {len(shas)} blobs, "
                                   f"not the {summary['blobs']} copied; nothing was copied.")
    for sha in shas:
        h = hashlib.sha256()
        with dst.blob_store.open(sha) as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        if h.hexdigest() != sha:
            raise ApiError("internal", f"Verification failed: blob {sha[:12]}… reads back altered; nothing was copied.")
    summary["verified"] = True
