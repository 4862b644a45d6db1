"""m012_catalog_history: every change to the catalog, who made it and what changed (issue 15).

`changes_json` lists {field, from, to} (URLs, auth placement, counts; never a secret value: a
client secret shows as "set"). `credentials_reset` counts the credentials an owner's forced
re-import sent back to needs_reconnect.
"""
from workspacectl.engine.db import execute_script

SQL = """
CREATE TABLE catalog_changes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    member_id TEXT,
    service TEXT NOT NULL,
    action TEXT NOT NULL CHECK (action IN ('create', 'replace', 'delete', 'oauth-client')),
    forced INTEGER NOT NULL DEFAULT 0,
    credentials_reset INTEGER NOT NULL DEFAULT 0,
    changes_json TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX catalog_changes_service ON catalog_changes(service, id);
"""


def up(conn):
    execute_script(conn, SQL)
