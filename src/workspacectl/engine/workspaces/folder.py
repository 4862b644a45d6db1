"""A workspace is a folder: workspace.db (SQLite) and blobs/. Several processes may open one.

Or a PostgreSQL database named by a postgresql:// URL (engine/workspaces/postgres.py, imported only
for such a URL): engine/workspaces/__init__.py `workspace_type(location)` picks the class; both answer the
same methods.
"""
from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from workspacectl import clock
from workspacectl.engine.db import open_db, transaction
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.blobs import BlobStore
    from workspacectl.engine.db.conn import Conn

DB_NAME = "workspace.db"
class Workspace:
    def __init__(self, path: Path | str):
        self.path = Path(path).expanduser().resolve()
        self.db_path = self.path / DB_NAME
        self.blobs = self.path / "blobs"
        self._local = threading.local()
        self._blob_store: BlobStore | None = None

    def __repr__(self) -> str:
        return f"Workspace({str(self.path)!r})"

    dialect = "sqlite"
    # How many threads a server runs engine calls on (server/engine_pool.py): SQLite's work is
    # Python and one writer, so one thread taking calls in turn costs the fewest hand-offs.
    engine_threads = 1

    @property
    def location(self) -> str:
        """What a profile stores to name this workspace."""
        return str(self.path)

    @property
    def shown(self) -> str:
        """What a message shows to name this workspace."""
        return str(self.path)

    @staticmethod
    def exists_at(path: Path | str) -> bool:
        return (Path(path).expanduser() / DB_NAME).is_file()

    @classmethod
    def open(cls, path: Path | str) -> Workspace:
        if not cls.exists_at(path):
            raise ApiError("not_found", f"No workspace at {path}. Run `wsctl init --workspace {path}` to make one.")
        ws = cls(path)
        ws._migrate()
        return ws

    @classmethod
    def create(cls, path: Path | str, name: str, owner_name: str, owner_email: str) -> tuple[Workspace, sqlite3.Row | None]:
        """Make the folder, the database and the first owner (answered as its row), in one transaction."""
        from workspacectl.engine.store import identity as store

        if cls.exists_at(path):
            raise cls._exists_error(path)
        ws = cls._prepare(path)
        ws._migrate()
        conn = ws.conn()
        with transaction(conn):
            if store.count_members(conn):
                raise cls._exists_error(path)
            store.set_setting(conn, "name", name)
            store.set_setting(conn, "created_at", clock.now_iso())
            owner = store.insert_member(conn, owner_name, owner_email, "owner")
        ws._after_create()
        return ws, owner

    @classmethod
    def _prepare(cls, path: Path | str) -> Workspace:
        path = Path(path).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o700)
        ws = cls(path)
        ws.blobs.mkdir(exist_ok=True)
        return ws

    @staticmethod
    def _exists_error(path: Path | str) -> ApiError:
        path = Path(path).expanduser()
        return ApiError("conflict", f"A workspace already exists at {path}. Use it (WSCTL_WORKSPACE={path}) or pick another folder.")

    def _migrate(self) -> None:
        """Bring the schema and the built-in catalog up to this wsctl's (both write only when this
        wsctl is newer than the last one that opened the workspace). Another process holding the
        write lock past the busy timeout is 409 "retry" (exit 6), as for any write, and a disk
        that refuses the write is 503: never a bare database error."""
        from workspacectl.engine.db import OPERATIONAL_ERRORS, refused_write
        from workspacectl.engine.migrations import apply_migrations

        self.blobs.mkdir(parents=True, exist_ok=True)
        try:
            apply_migrations(self.conn())
            self._load_builtins()
        except OPERATIONAL_ERRORS as e:
            refused = refused_write(e, "The workspace is busy (another process holds its write lock) while "
                                       "this wsctl brings it up to date; retry in a moment.")
            if refused is None:
                raise
            raise refused from None

    def _load_builtins(self) -> None:
        """Load the package's built-in catalog once per package version (see engine/catalog/builtins.py)."""
        from workspacectl.engine.catalog import builtins

        builtins.ensure_loaded(self.conn())

    def _after_create(self) -> None:
        pass

    @property
    def blob_store(self) -> BlobStore:
        """Where this workspace's blobs live (engine/blobs/__init__.py BlobStore); made on first use."""
        store = getattr(self, "_blob_store", None)
        if store is None:
            store = self._blob_store = self._make_blob_store()
        return store

    def _make_blob_store(self) -> BlobStore:
        from workspacectl.engine.blobs.folder import FolderBlobStore

        return FolderBlobStore(self, self.blobs)

    def conn(self) -> Conn:
        c = getattr(self._local, "conn", None)
        if c is None:
            c = self._connect()
            self._local.conn = c
        return c

    def _connect(self) -> Conn:
        return open_db(self.db_path)

    def ready(self) -> bool:
        """Whether requests can be served now (a server's /readyz): the database file is there."""
        return self.db_path.is_file()

    def quick_conn(self) -> sqlite3.Connection | None:
        """A new connection for a thread that must not wait (the server's event loop answering quick
        routes, engine/dispatch.py Engine.handle_quick), or None where there is none: on SQLite
        in WAL mode a read never waits for a writer, and this connection's busy timeout is 0."""
        if self.dialect != "sqlite":
            return None
        from workspacectl.engine.db.quick import open_quick_db  # the server's: it imports asyncio

        return open_quick_db(self.db_path)

    def lend_conn(self, conn: Conn | None) -> Conn | None:
        """Make conn() answer `conn` on this thread; answers what to give back (lend_conn(before))."""
        before = getattr(self._local, "conn", None)
        self._local.conn = conn
        return before

    def close(self) -> None:
        """Close this thread's connection: what a thread does once it is done with the workspace
        (a command, a test, a server thread about to end). Each thread that used conn() closes its
        own; the workspace stays usable (the next conn() opens a new connection)."""
        c = getattr(self._local, "conn", None)
        if c is not None:
            self._local.conn = None
            c.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def setting(self, key: str, default: str | None = None) -> str | None:
        from workspacectl.engine.store.identity import get_setting

        value = get_setting(self.conn(), key)
        return default if value is None else value
