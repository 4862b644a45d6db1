"""Workspace settings, members, login codes, secrets (sessions and API keys), web sign-in links."""
from workspacectl.engine.db import execute_script


def up(conn):
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
