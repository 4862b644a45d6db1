"""m028_proxy_log: the credential access log records proxied calls (issue 30, the authenticated proxy).

A call through `/v1/credentials/:id/proxy/{path}` writes one access-log row like a token issue,
with three more columns: the request's `method`, the `path` on the service (no query string: a
service may take a key there), and `upstream_status`, the status the service answered (NULL for
a token issue, or when no answer came). `outcome` may now also be `proxied` (the service
answered) or `failed` (it was not reached, or its answer was refused: a redirect to another
host). SQLite cannot change a CHECK constraint in place, so its table is rebuilt with every row
and id kept; PostgreSQL swaps the constraint.
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn

OUTCOMES = "('issued', 'refused', 'proxied', 'failed')"


def up(conn: Conn) -> None:
    execute_script(conn, f"""
    CREATE TABLE credential_access_log_m028 (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        credential_id TEXT NOT NULL,
        at TEXT NOT NULL,
        member_id TEXT NOT NULL,
        key_id TEXT,
        caller_kind TEXT NOT NULL,
        reason TEXT NOT NULL,
        fields_json TEXT NOT NULL DEFAULT '[]',
        outcome TEXT NOT NULL CHECK (outcome IN {OUTCOMES}),
        method TEXT,
        path TEXT,
        upstream_status INTEGER
    );
    INSERT INTO credential_access_log_m028 (id, credential_id, at, member_id, key_id, caller_kind, reason,
                                            fields_json, outcome)
        SELECT id, credential_id, at, member_id, key_id, caller_kind, reason, fields_json, outcome
        FROM credential_access_log;
    DROP TABLE credential_access_log;
    ALTER TABLE credential_access_log_m028 RENAME TO credential_access_log;
    CREATE INDEX credential_access_log_cred ON credential_access_log(credential_id, id);
    """)


POSTGRES_SQL = f"""
ALTER TABLE credential_access_log DROP CONSTRAINT IF EXISTS credential_access_log_outcome_check;
ALTER TABLE credential_access_log ADD CONSTRAINT credential_access_log_outcome_check CHECK (outcome IN {OUTCOMES});
ALTER TABLE credential_access_log ADD COLUMN method TEXT COLLATE "C";
ALTER TABLE credential_access_log ADD COLUMN path TEXT COLLATE "C";
ALTER TABLE credential_access_log ADD COLUMN upstream_status BIGINT;
"""
