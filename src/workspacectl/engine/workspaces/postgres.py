"""A workspace in PostgreSQL: the same tables (migrations' POSTGRES_SQL), shared by every
`wsctl serve` replica and local command given its postgresql:// URL.

What stays on the machine, in a folder named after the URL (without its password):
`<WSCTL_HOME or the data dir>/postgres/<sha256 of the URL>/` holds the key file when neither
WSCTL_MASTER_KEY nor WSCTL_MASTER_KEY_FILE gives the key (one machine only: replicas on several
machines are given the key the same way, see docs/team-server.md), and the folder uploads are
staged in on their way into PostgreSQL, where blobs live (`_make_blob_store`: PgBlobStore;
WSCTL_BLOB_DIR overrides the folder).
"""
from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from workspacectl.engine.db.postgres import PgConnection
from workspacectl.engine.workspaces.folder import Workspace
from workspacectl.errors import ApiError
from workspacectl.formats.workspace_url import redacted, without_password

if TYPE_CHECKING:
    from workspacectl.engine.blobs import BlobStore
    from workspacectl.engine.db.conn import Conn


def local_state_dir(url: str) -> Path:
    digest = hashlib.sha256(without_password(url).encode()).hexdigest()[:32]
    home = os.environ.get("WSCTL_HOME")
    if home:
        root = Path(home).expanduser()
    else:
        import platformdirs

        root = Path(platformdirs.user_data_dir("wsctl"))
    return root / "postgres" / digest


class PgWorkspace(Workspace):
    dialect = "postgres"
    # A request on PostgreSQL mostly waits for round trips (the GIL free meanwhile): several
    # engine threads, each with its own session, keep that many requests in flight.
    engine_threads = 16

    def __init__(self, url: Path | str) -> None:
        self.url = str(url)   # a postgresql:// URL (workspace_type sends only a str here)
        self.path = local_state_dir(self.url)
        self.db_path = None  # type: ignore[assignment]  # no database file: the rows live in PostgreSQL
        self._local = threading.local()
        raw = os.environ.get("WSCTL_BLOB_DIR")
        self.blobs = Path(raw).expanduser() if raw else self.path / "blobs"
        self._blob_store = None

    def __repr__(self) -> str:
        return f"PgWorkspace({redacted(self.url)!r})"

    @property
    def location(self) -> str:
        """The URL without its password: what a profile stores (libpq reads the password from
        PGPASSWORD or ~/.pgpass)."""
        return without_password(self.url)

    @property
    def shown(self) -> str:
        return redacted(self.url)

    def _make_blob_store(self) -> BlobStore:
        """Blobs in PostgreSQL beside the rows (engine/blobs/postgres.py); the local folder
        (WSCTL_BLOB_DIR or the local state folder) only stages uploads on their way in."""
        from workspacectl.engine.blobs.postgres import PgBlobStore

        self.blobs.mkdir(parents=True, exist_ok=True, mode=0o700)
        return PgBlobStore(self, self.blobs)

    def _connect(self) -> Conn:
        return PgConnection(self.url)

    def conn(self) -> Conn:
        """This thread's session; a new one when the database ended the last (its request was
        answered 503, StoreLost), so a restart or failover of the database costs one answer per
        thread, not every answer after it."""
        c = getattr(self._local, "conn", None)
        if c is not None and c.broken:
            self._local.conn = None
            c.close()
        return super().conn()

    def ready(self) -> bool:
        """Whether the database answers (a server's /readyz): an answer any session of this process
        saw in the last READY_FRESH_SECONDS, else a probe shared by every caller (pg_session.py)."""
        from workspacectl.engine.db.pg_session import liveness_of

        return liveness_of(self.url).ready()

    @staticmethod
    def exists_at(url: Path | str) -> bool:
        conn = PgConnection(str(url))
        try:
            if conn.execute("SELECT to_regclass('members')").fetchone()[0] is None:
                return False
            return conn.execute("SELECT count(*) FROM members").fetchone()[0] > 0
        finally:
            conn.close()

    @classmethod
    def open(cls, url: Path | str) -> PgWorkspace:
        if not cls.exists_at(url):
            raise ApiError("not_found", f"No workspace in {redacted(str(url))}. Run `wsctl init --workspace URL` "
                                        "to make one there.")
        ws = cls(url)
        ws.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        ws._migrate()
        from workspacectl.engine.crypto import require_key

        require_key(ws)
        return ws

    @classmethod
    def _prepare(cls, url: Path | str) -> PgWorkspace:
        ws = cls(url)
        ws.path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return ws

    @staticmethod
    def _exists_error(url: Path | str) -> ApiError:
        return ApiError("conflict", f"A workspace already exists in {redacted(str(url))}. Use it "
                                    "(WSCTL_WORKSPACE=URL) or name an empty database.")
