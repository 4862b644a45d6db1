"""m015_operation_vectors: one semantic vector per indexed operation (issue 13).

`vector` is the operation's text embedded by engine/catalog/embedding.py: float16 bytes, as
many as the shipped model has dimensions. Written and removed with the operation's search
document (engine/catalog/search.py, inside the catalog import's transaction). A workspace made
before this migration has no rows: its searches answer lexically until the vectors are built
(the first search after the upgrade builds them once; see docs/api.md).
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn

SQL = """
CREATE TABLE operation_vectors (
    op_id TEXT PRIMARY KEY,
    service TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX operation_vectors_service ON operation_vectors(service);
"""


def up(conn: Conn) -> None:
    execute_script(conn, SQL)


# The same table on PostgreSQL (engine/db/postgres.py).
POSTGRES_SQL = """
CREATE TABLE operation_vectors (
    op_id TEXT COLLATE "C" PRIMARY KEY,
    service TEXT COLLATE "C" NOT NULL,
    vector BYTEA NOT NULL
);
CREATE INDEX operation_vectors_service ON operation_vectors(service);
"""
