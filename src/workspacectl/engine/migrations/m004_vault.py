"""The vault: credentials with their sealed secrets, sharing grants, the access log.

Secrets of a credential (API keys, access and refresh tokens) live in one AES-256-GCM blob
(engine/crypto/__init__.py, AAD = the credential id); no column holds a secret in plaintext.
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn


def up(conn: Conn) -> None:
    execute_script(conn, """
    CREATE TABLE credentials (
        id TEXT PRIMARY KEY,
        service TEXT NOT NULL,
        name TEXT NOT NULL,
        credential_type TEXT NOT NULL CHECK (credential_type IN ('oauth2', 'apiKey', 'platform', 'noAuth')),
        owner_member_id TEXT NOT NULL REFERENCES members(id) ON DELETE CASCADE,
        fields_json TEXT NOT NULL DEFAULT '{}',
        scopes_json TEXT NOT NULL DEFAULT '[]',
        secret_names_json TEXT NOT NULL DEFAULT '[]',
        secret_blob BLOB,
        status TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'needs_reconnect', 'invalid')),
        token_type TEXT,
        expires_at TEXT,
        synced_at TEXT,
        -- single-flight refresh: a lease claimed in a short transaction, the provider call outside it
        refresh_lease_owner TEXT,
        refresh_lease_until TEXT,
        refreshed_at TEXT,
        -- back-off after a provider failure other than invalid_grant
        refresh_retry_at TEXT,
        refresh_failures INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX credentials_owner ON credentials(owner_member_id, id);
    CREATE INDEX credentials_service ON credentials(service);
    -- grantee: a member id, or 'workspace' for every member
    CREATE TABLE credential_grants (
        credential_id TEXT NOT NULL REFERENCES credentials(id) ON DELETE CASCADE,
        grantee TEXT NOT NULL,
        role TEXT NOT NULL CHECK (role IN ('user', 'viewer')),
        created_at TEXT NOT NULL,
        PRIMARY KEY (credential_id, grantee)
    );
    CREATE INDEX credential_grants_grantee ON credential_grants(grantee, credential_id);
    -- One row per token issued (written in the transaction that releases it) or refused.
    -- Kept when the credential is deleted: an audit trail outlives what it audits.
    CREATE TABLE credential_access_log (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        credential_id TEXT NOT NULL,
        at TEXT NOT NULL,
        member_id TEXT NOT NULL,
        key_id TEXT,
        caller_kind TEXT NOT NULL,
        reason TEXT NOT NULL,
        fields_json TEXT NOT NULL DEFAULT '[]',
        outcome TEXT NOT NULL CHECK (outcome IN ('issued', 'refused'))
    );
    CREATE INDEX credential_access_log_cred ON credential_access_log(credential_id, id);
    """)


# The same schema in PostgreSQL (engine/db/postgres.py): TEXT compares and sorts in byte order
# (COLLATE "C", as SQLite's BINARY), INTEGER is BIGINT, BLOB is BYTEA, rowids are identity columns.
POSTGRES_SQL = """
CREATE TABLE credentials (
    id TEXT COLLATE "C" PRIMARY KEY,
    service TEXT COLLATE "C" NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    credential_type TEXT COLLATE "C" NOT NULL CHECK (credential_type IN ('oauth2', 'apiKey', 'platform', 'noAuth')),
    owner_member_id TEXT COLLATE "C" NOT NULL REFERENCES members(id) ON DELETE CASCADE,
    fields_json TEXT COLLATE "C" NOT NULL DEFAULT '{}',
    scopes_json TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    secret_names_json TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    secret_blob BYTEA,
    status TEXT COLLATE "C" NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'needs_reconnect', 'invalid')),
    token_type TEXT COLLATE "C",
    expires_at TEXT COLLATE "C",
    synced_at TEXT COLLATE "C",
    -- single-flight refresh: a lease claimed in a short transaction, the provider call outside it
    refresh_lease_owner TEXT COLLATE "C",
    refresh_lease_until TEXT COLLATE "C",
    refreshed_at TEXT COLLATE "C",
    -- back-off after a provider failure other than invalid_grant
    refresh_retry_at TEXT COLLATE "C",
    refresh_failures BIGINT NOT NULL DEFAULT 0,
    last_error TEXT COLLATE "C",
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX credentials_owner ON credentials(owner_member_id, id);
CREATE INDEX credentials_service ON credentials(service);
-- grantee: a member id, or 'workspace' for every member
CREATE TABLE credential_grants (
    credential_id TEXT COLLATE "C" NOT NULL REFERENCES credentials(id) ON DELETE CASCADE,
    grantee TEXT COLLATE "C" NOT NULL,
    role TEXT COLLATE "C" NOT NULL CHECK (role IN ('user', 'viewer')),
    created_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (credential_id, grantee)
);
CREATE INDEX credential_grants_grantee ON credential_grants(grantee, credential_id);
-- One row per token issued (written in the transaction that releases it) or refused.
-- Kept when the credential is deleted: an audit trail outlives what it audits.
CREATE TABLE credential_access_log (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    credential_id TEXT COLLATE "C" NOT NULL,
    at TEXT COLLATE "C" NOT NULL,
    member_id TEXT COLLATE "C" NOT NULL,
    key_id TEXT COLLATE "C",
    caller_kind TEXT COLLATE "C" NOT NULL,
    reason TEXT COLLATE "C" NOT NULL,
    fields_json TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    outcome TEXT COLLATE "C" NOT NULL CHECK (outcome IN ('issued', 'refused'))
);
CREATE INDEX credential_access_log_cred ON credential_access_log(credential_id, id);
"""
