"""m016_blobs: blobs in PostgreSQL, beside the rows that name them (engine/blobs/postgres.py).

A folder workspace keeps its blobs in blobs/ (engine/blobs/folder.py): nothing to do on SQLite.
On PostgreSQL a blob is one `blob` row (sha256, size, chunk count, when it was written, in
seconds since the epoch for the orphan sweep's age) and its bytes in 1 MiB `blob_chunk` rows,
written in the transaction that records the project file or skill version naming it.
"""
from workspacectl.engine.db.conn import Conn


def up(conn: Conn) -> None:
    pass


POSTGRES_SQL = """
CREATE TABLE blob (
    sha256 TEXT COLLATE "C" PRIMARY KEY,
    size BIGINT NOT NULL,
    chunks INTEGER NOT NULL,
    created_at DOUBLE PRECISION NOT NULL
);
CREATE INDEX blob_created_at ON blob(created_at);
CREATE TABLE blob_chunk (
    sha256 TEXT COLLATE "C" NOT NULL REFERENCES blob(sha256) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (sha256, seq)
);
-- Chunks are mostly compressed archive members: store them out of line without trying to compress.
ALTER TABLE blob_chunk ALTER COLUMN data SET STORAGE EXTERNAL;
"""
