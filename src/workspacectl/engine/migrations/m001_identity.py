"""Workspace settings, members, login codes, secrets (sessions and API keys), web sign-in links."""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn


def up(conn: Conn) -> None:
    execute_script(conn, """
    CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    CREATE TABLE members (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        email TEXT NOT NULL UNIQUE COLLATE NOCASE,
        role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'guest')),
        created_at TEXT NOT NULL
    );
    CREATE TABLE login_codes (
        code_hash TEXT PRIMARY KEY,
        member_id TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,
        created_by TEXT,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        used_at TEXT
    );
    -- Sessions (ws_session_), platform keys (ws_platform_), personal keys (ws_personal_) and
    -- web sessions (cookie only). Only the SHA-256 of a secret is stored.
    CREATE TABLE secrets (
        id TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('session', 'platform', 'personal', 'web')),
        member_id TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,
        name TEXT NOT NULL DEFAULT '',
        scopes TEXT NOT NULL DEFAULT '[]',
        secret_hash TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        expires_at TEXT,
        revoked_at TEXT,
        last_used_at TEXT
    );
    CREATE INDEX secrets_member ON secrets(member_id, kind);
    CREATE TABLE web_links (
        token_hash TEXT PRIMARY KEY,
        member_id TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,
        next_path TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        used_at TEXT
    );
    """)


# The same schema in PostgreSQL (engine/db/postgres.py): TEXT compares and sorts in byte order
# (COLLATE "C", as SQLite's BINARY), INTEGER is BIGINT, BLOB is BYTEA, rowids are identity columns.
POSTGRES_SQL = """
-- SQLite's NOCASE for emails: a nondeterministic ICU collation (equality and UNIQUE ignore case)
CREATE COLLATION IF NOT EXISTS wsctl_nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE settings (
    key TEXT COLLATE "C" PRIMARY KEY,
    value TEXT COLLATE "C" NOT NULL
);
CREATE TABLE members (
    id TEXT COLLATE "C" PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL,
    email TEXT COLLATE wsctl_nocase NOT NULL UNIQUE,
    role TEXT COLLATE "C" NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'guest')),
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE login_codes (
    code_hash TEXT COLLATE "C" PRIMARY KEY,
    member_id TEXT COLLATE "C" NOT NULL REFERENCES members(id) ON DELETE CASCADE,
    created_by TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    used_at TEXT COLLATE "C"
);
-- Sessions (ws_session_), platform keys (ws_platform_), personal keys (ws_personal_) and
-- web sessions (cookie only). Only the SHA-256 of a secret is stored.
CREATE TABLE secrets (
    id TEXT COLLATE "C" PRIMARY KEY,
    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('session', 'platform', 'personal', 'web')),
    member_id TEXT COLLATE "C" NOT NULL REFERENCES members(id) ON DELETE CASCADE,
    name TEXT COLLATE "C" NOT NULL DEFAULT '',
    scopes TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    secret_hash TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C",
    revoked_at TEXT COLLATE "C",
    last_used_at TEXT COLLATE "C"
);
CREATE INDEX secrets_member ON secrets(member_id, kind);
CREATE TABLE web_links (
    token_hash TEXT COLLATE "C" PRIMARY KEY,
    member_id TEXT COLLATE "C" NOT NULL REFERENCES members(id) ON DELETE CASCADE,
    next_path TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    used_at TEXT COLLATE "C"
);
"""
