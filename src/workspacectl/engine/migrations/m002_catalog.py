"""The integration catalog: integrations, their operations, and trigger providers.

Written by engine/store/catalog.py only; the vault, connections and search areas read it.
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn


def up(conn: Conn) -> None:
    execute_script(conn, """
    CREATE TABLE integrations (
        service TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        credential_type TEXT NOT NULL CHECK (credential_type IN ('oauth2', 'apiKey', 'platform', 'noAuth')),
        env_vars_json TEXT NOT NULL DEFAULT '{}',
        fields_json TEXT NOT NULL DEFAULT '[]',
        secret_fields_json TEXT NOT NULL DEFAULT '[]',
        -- authorizeUrl, tokenUrl, scopes, revokeUrl, probe, baseUrl, docsUrl, pkce,
        -- scopeSeparator, extraAuthorizeParams
        setup_json TEXT NOT NULL DEFAULT '{}',
        oauth_client_id TEXT,
        -- sealed with engine.crypto, AAD "oauth-client:<service>"; never plaintext
        oauth_client_secret BLOB,
        source TEXT NOT NULL DEFAULT 'builtin' CHECK (source IN ('builtin', 'import')),
        updated_at TEXT NOT NULL
    );
    CREATE TABLE operations (
        op_id TEXT PRIMARY KEY,
        service TEXT NOT NULL REFERENCES integrations(service) ON DELETE CASCADE,
        name TEXT NOT NULL,
        summary TEXT NOT NULL DEFAULT '',
        description TEXT NOT NULL DEFAULT '',
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        params_json TEXT NOT NULL DEFAULT '[]',
        response_json TEXT NOT NULL DEFAULT 'null',
        example_json TEXT NOT NULL DEFAULT 'null',
        markdown TEXT NOT NULL DEFAULT '',
        position INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX operations_service ON operations(service, position);
    -- Generic providers (webhook, cron) have service NULL; a service's providers go with it.
    CREATE TABLE trigger_providers (
        id TEXT PRIMARY KEY,
        type TEXT NOT NULL CHECK (type IN ('webhook', 'cron', 'poll')),
        service TEXT REFERENCES integrations(service) ON DELETE CASCADE,
        event TEXT,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        cadence_seconds INTEGER,
        requires_credential INTEGER NOT NULL DEFAULT 0,
        config_json TEXT NOT NULL DEFAULT '{}',
        position INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX trigger_providers_service ON trigger_providers(service);
    """)


# The same schema in PostgreSQL (engine/db/postgres.py): TEXT compares and sorts in byte order
# (COLLATE "C", as SQLite's BINARY), INTEGER is BIGINT, BLOB is BYTEA, rowids are identity columns.
POSTGRES_SQL = """
-- store/catalog.py filters with wsctl_casefold(), a Python function on SQLite
CREATE FUNCTION wsctl_casefold(text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT lower($1)';
CREATE TABLE integrations (
    service TEXT COLLATE "C" PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL,
    description TEXT COLLATE "C" NOT NULL DEFAULT '',
    credential_type TEXT COLLATE "C" NOT NULL CHECK (credential_type IN ('oauth2', 'apiKey', 'platform', 'noAuth')),
    env_vars_json TEXT COLLATE "C" NOT NULL DEFAULT '{}',
    fields_json TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    secret_fields_json TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    -- authorizeUrl, tokenUrl, scopes, revokeUrl, probe, baseUrl, docsUrl, pkce,
    -- scopeSeparator, extraAuthorizeParams
    setup_json TEXT COLLATE "C" NOT NULL DEFAULT '{}',
    oauth_client_id TEXT COLLATE "C",
    -- sealed with engine.crypto, AAD "oauth-client:<service>"; never plaintext
    oauth_client_secret BYTEA,
    source TEXT COLLATE "C" NOT NULL DEFAULT 'builtin' CHECK (source IN ('builtin', 'import')),
    updated_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE operations (
    op_id TEXT COLLATE "C" PRIMARY KEY,
    service TEXT COLLATE "C" NOT NULL REFERENCES integrations(service) ON DELETE CASCADE,
    name TEXT COLLATE "C" NOT NULL,
    summary TEXT COLLATE "C" NOT NULL DEFAULT '',
    description TEXT COLLATE "C" NOT NULL DEFAULT '',
    method TEXT COLLATE "C" NOT NULL,
    path TEXT COLLATE "C" NOT NULL,
    tags TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    params_json TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    response_json TEXT COLLATE "C" NOT NULL DEFAULT 'null',
    example_json TEXT COLLATE "C" NOT NULL DEFAULT 'null',
    markdown TEXT COLLATE "C" NOT NULL DEFAULT '',
    position BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX operations_service ON operations(service, position);
-- Generic providers (webhook, cron) have service NULL; a service's providers go with it.
CREATE TABLE trigger_providers (
    id TEXT COLLATE "C" PRIMARY KEY,
    type TEXT COLLATE "C" NOT NULL CHECK (type IN ('webhook', 'cron', 'poll')),
    service TEXT COLLATE "C" REFERENCES integrations(service) ON DELETE CASCADE,
    event TEXT COLLATE "C",
    name TEXT COLLATE "C" NOT NULL,
    description TEXT COLLATE "C" NOT NULL DEFAULT '',
    cadence_seconds BIGINT,
    requires_credential BIGINT NOT NULL DEFAULT 0,
    config_json TEXT COLLATE "C" NOT NULL DEFAULT '{}',
    position BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX trigger_providers_service ON trigger_providers(service);
"""
