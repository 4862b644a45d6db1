"""m031_auth_notify: what lets a replica cache sessions and keys on PostgreSQL (issue 27, item 3).

A change to what authentication reads (a session or key revoked or deleted; a member changed or
removed; the workspace renamed) raises `auth_epoch.n` by one in the changing transaction and
notifies channel `wsctl_auth` with the new number at its commit. Each serving replica's listener
(engine/db/pg_auth_cache.py) has a row in `auth_listeners`: the epoch up to which it has emptied
its cache (`seen`) and when it last confirmed that (`beat`). The writer of a revocation waits, before
answering, until every listener has seen its epoch or has not confirmed for longer than a cache
may be used without confirming; so the next request to any replica reads the database again.
SQLite: nothing (one process reads the file; no cache).
"""
from workspacectl.engine.db.conn import Conn


def up(conn: Conn) -> None:
    """Nothing on SQLite."""


POSTGRES_SQL = """
CREATE TABLE auth_epoch (one BOOLEAN PRIMARY KEY DEFAULT true CHECK (one), n BIGINT NOT NULL);
INSERT INTO auth_epoch (one, n) VALUES (true, 0);
CREATE TABLE auth_listeners (
    id TEXT COLLATE "C" PRIMARY KEY,
    seen BIGINT NOT NULL,
    beat TIMESTAMPTZ NOT NULL
);
CREATE OR REPLACE FUNCTION wsctl_auth_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    epoch BIGINT;
BEGIN
    UPDATE auth_epoch SET n = n + 1 RETURNING n INTO epoch;
    PERFORM pg_notify('wsctl_auth', epoch::text);
    RETURN NULL;
END $fn$;
CREATE TRIGGER secrets_auth_changed AFTER UPDATE OR DELETE ON secrets
    FOR EACH STATEMENT EXECUTE FUNCTION wsctl_auth_changed();
CREATE TRIGGER members_auth_changed AFTER UPDATE OR DELETE ON members
    FOR EACH STATEMENT EXECUTE FUNCTION wsctl_auth_changed();
CREATE TRIGGER settings_name_changed AFTER INSERT OR UPDATE ON settings
    FOR EACH ROW WHEN (NEW.key = 'name') EXECUTE FUNCTION wsctl_auth_changed();
CREATE TRIGGER settings_name_deleted AFTER DELETE ON settings
    FOR EACH ROW WHEN (OLD.key = 'name') EXECUTE FUNCTION wsctl_auth_changed();
"""
