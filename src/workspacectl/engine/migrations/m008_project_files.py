"""m008_project_files: a project's shared files. Contents live in blobs/ by SHA-256 (engine/blobs/__init__.py)."""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn

SQL = """
CREATE TABLE project_files (
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (project_id, path)
);
-- Blob garbage collection asks "does anything still hold this sha256?"
CREATE INDEX project_files_sha256 ON project_files(sha256);
"""


def up(conn: Conn) -> None:
    execute_script(conn, SQL)


# The same schema in PostgreSQL (engine/db/postgres.py): TEXT compares and sorts in byte order
# (COLLATE "C", as SQLite's BINARY), INTEGER is BIGINT, BLOB is BYTEA, rowids are identity columns.
POSTGRES_SQL = """
CREATE TABLE project_files (
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    path TEXT COLLATE "C" NOT NULL,
    size BIGINT NOT NULL,
    sha256 TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (project_id, path)
);
-- Blob garbage collection asks "does anything still hold this sha256?"
CREATE INDEX project_files_sha256 ON project_files(sha256);
"""
