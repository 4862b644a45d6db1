"""m013_leases: named leases, so that of several processes on one workspace (the workers of one
`wsctl serve --workers N`, or separate servers and replicas) exactly one runs a job at a time:
the memory agent timer and housekeeping (engine/leases.py).

`holder` is an opaque id of the holding process; `renewals` counts the holder's renewals since
it acquired the lease (each timer tick renews once, so it counts the runs of that holder).
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn

SQL = """
CREATE TABLE leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    acquired_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    renewals INTEGER NOT NULL DEFAULT 0
);
"""


def up(conn: Conn) -> None:
    execute_script(conn, SQL)


# The same table on PostgreSQL (engine/db/postgres.py): text in byte order, INTEGER as BIGINT.
POSTGRES_SQL = """
CREATE TABLE leases (
    name TEXT COLLATE "C" PRIMARY KEY,
    holder TEXT COLLATE "C" NOT NULL,
    acquired_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    renewals BIGINT NOT NULL DEFAULT 0
);
"""
