"""m022_vector_sets: a model's operation vectors as one row per service (issue 13, search speed).

m021 kept one row per (model, operation): a one-shot `wsctl catalog search` counted and read
3,603 rows before its first dot product, ~5 ms of the CPU of a fresh process. Here a service's
vectors of one model are one row: how many (`operations`), their opIds (a JSON list, in op_id
order), their vectors (`vectors`: the int8 steps + 128 of engine/catalog/embedding.py, `dims`
bytes each, in that order) and their scales (`scales`: float64 little-endian, 8 bytes each). A
search reads a few dozen rows and counts a model's vectors by summing `operations`.

A set is written whole (every indexed operation of the service), so a service either has a
current set of a model or none. A trigger removes a service's sets of every model whenever an
indexed row of that service (operation_search_docs) is deleted, by whichever wsctl version: an
older one, which knows only m021's table, re-importing or removing a service leaves no stale set
here, and this version makes the missing set again on its next search. m021's table stays for
such an older wsctl: this version writes nothing there and empties a service's rows there when
the catalog changes. No vectors are copied over: the first search after this migration makes
the sets (as it does after every change of the shipped vectors). Named operation_search_*: derived
data, which a workspace copy rebuilds on its target instead of copying (engine/workspaces/copy.py).
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn

SQL = """
CREATE TABLE operation_search_vector_sets (
    model TEXT NOT NULL,
    service TEXT NOT NULL,
    operations INTEGER NOT NULL,
    op_ids TEXT NOT NULL,
    vectors BLOB NOT NULL,
    scales BLOB NOT NULL,
    PRIMARY KEY (model, service)
);
CREATE INDEX operation_search_vector_sets_service ON operation_search_vector_sets(service);
CREATE TRIGGER operation_search_vector_sets_stale AFTER DELETE ON operation_search_docs
BEGIN
    DELETE FROM operation_search_vector_sets WHERE service = OLD.service;
END;
"""


def up(conn: Conn) -> None:
    execute_script(conn, SQL)


# The same on PostgreSQL (engine/db/postgres.py): one statement-level trigger per DELETE.
POSTGRES_SQL = """
CREATE TABLE operation_search_vector_sets (
    model TEXT COLLATE "C" NOT NULL,
    service TEXT COLLATE "C" NOT NULL,
    operations INTEGER NOT NULL,
    op_ids TEXT NOT NULL,
    vectors BYTEA NOT NULL,
    scales BYTEA NOT NULL,
    PRIMARY KEY (model, service)
);
CREATE INDEX operation_search_vector_sets_service ON operation_search_vector_sets(service);
CREATE FUNCTION wsctl_vector_sets_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM operation_search_vector_sets WHERE service IN (SELECT DISTINCT service FROM gone);
    RETURN NULL;
END $$;
CREATE TRIGGER operation_search_vector_sets_stale AFTER DELETE ON operation_search_docs
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION wsctl_vector_sets_stale();
"""
