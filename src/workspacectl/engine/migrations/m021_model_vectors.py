"""m021_model_vectors: operation vectors keyed by the model that made them (issue 13).

m015's `operation_vectors` held one vector per operation and the workspace's meta named the one
model they came from, so two wsctl versions with different models on one workspace rebuilt each
other's vectors on every search (each found the other's model named). Here each model's vectors
are rows of their own, `(model, op_id)`: a version reads and builds only its model's rows, and
another version's rows stay until its catalog changes (a service's import or delete removes that
service's rows of every model; engine/catalog/search.py keeps at most a few models' sets).

A vector is stored as engine/catalog/embedding.py quantizes it: `vector` one byte per dimension
(the int8 value + 128), `scale` what a step of it is worth, `sumsq` the bytes' sum of squares
(a search takes its dot products from that and one distance). WITHOUT ROWID on SQLite: a model's rows lie together in op_id
order, so a search reads them as one range, in order. m015's table stays, unused by this
version, for an older wsctl opening the same workspace.
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn

SQL = """
CREATE TABLE operation_model_vectors (
    model TEXT NOT NULL,
    op_id TEXT NOT NULL,
    service TEXT NOT NULL,
    vector BLOB NOT NULL,
    scale REAL NOT NULL,
    sumsq INTEGER NOT NULL,
    PRIMARY KEY (model, op_id)
) WITHOUT ROWID;
CREATE INDEX operation_model_vectors_service ON operation_model_vectors(service);
"""


def up(conn: Conn) -> None:
    execute_script(conn, SQL)


# The same table on PostgreSQL (engine/db/postgres.py).
POSTGRES_SQL = """
CREATE TABLE operation_model_vectors (
    model TEXT COLLATE "C" NOT NULL,
    op_id TEXT COLLATE "C" NOT NULL,
    service TEXT COLLATE "C" NOT NULL,
    vector BYTEA NOT NULL,
    scale DOUBLE PRECISION NOT NULL,
    sumsq BIGINT NOT NULL,
    PRIMARY KEY (model, op_id)
);
CREATE INDEX operation_model_vectors_service ON operation_model_vectors(service);
"""
