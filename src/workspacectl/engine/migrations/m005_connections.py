"""m005_connections: connections started through a hosted link (CONTRACT §4).

The link token and the OAuth `state` are stored only as SHA-256 hashes (lookups). The full link
URL (shown again to its creator on GET) and the PKCE verifier (sent at the code exchange) are
sealed with engine/crypto; no column holds a secret in plaintext.

`status` is pending | connected | failed; `expired` is not stored but read from `expires_at`
through the clock, so a shifted clock sees it at once.
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn


def up(conn: Conn) -> None:
    execute_script(conn, """
    CREATE TABLE connections (
        id TEXT PRIMARY KEY,
        service TEXT NOT NULL,
        member_id TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,
        link_hash TEXT NOT NULL UNIQUE,
        link_sealed BLOB,
        status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'connected', 'failed')),
        credential_id TEXT,
        error TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        finished_at TEXT,
        -- OAuth: the latest authorize redirect of this connection (a new one replaces it)
        state_hash TEXT UNIQUE,
        pkce_sealed BLOB,
        redirect_uri TEXT,
        state_used_at TEXT
    );
    CREATE INDEX connections_member ON connections(member_id, id);
    """)


# The same schema in PostgreSQL (engine/db/postgres.py): TEXT compares and sorts in byte order
# (COLLATE "C", as SQLite's BINARY), INTEGER is BIGINT, BLOB is BYTEA, rowids are identity columns.
POSTGRES_SQL = """
CREATE TABLE connections (
    id TEXT COLLATE "C" PRIMARY KEY,
    service TEXT COLLATE "C" NOT NULL,
    member_id TEXT COLLATE "C" NOT NULL REFERENCES members(id) ON DELETE CASCADE,
    link_hash TEXT COLLATE "C" NOT NULL UNIQUE,
    link_sealed BYTEA,
    status TEXT COLLATE "C" NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'connected', 'failed')),
    credential_id TEXT COLLATE "C",
    error TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    finished_at TEXT COLLATE "C",
    -- OAuth: the latest authorize redirect of this connection (a new one replaces it)
    state_hash TEXT COLLATE "C" UNIQUE,
    pkce_sealed BYTEA,
    redirect_uri TEXT COLLATE "C",
    state_used_at TEXT COLLATE "C"
);
CREATE INDEX connections_member ON connections(member_id, id);
"""
