"""m007_workflows: workflows and apps (`wf_…`), each in at most one project.

A workflow's nodes are kept as the JSON array of its workflow.json; a trigger node's config
(credentialId, inputs) is written into its node. `project_id` NULL means it sits with its creator.
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn

SQL = """
CREATE TABLE workflows (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('workflow', 'app')),
    name TEXT NOT NULL,
    description TEXT,
    nodes TEXT NOT NULL DEFAULT '[]',
    created_by TEXT NOT NULL REFERENCES members(id),
    project_id TEXT REFERENCES projects(id) ON DELETE SET NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_used_at TEXT
);
CREATE INDEX workflows_project ON workflows(project_id, id);
CREATE INDEX workflows_creator ON workflows(created_by, id);
"""


def up(conn: Conn) -> None:
    execute_script(conn, SQL)


# The same schema in PostgreSQL (engine/db/postgres.py): TEXT compares and sorts in byte order
# (COLLATE "C", as SQLite's BINARY), INTEGER is BIGINT, BLOB is BYTEA, rowids are identity columns.
POSTGRES_SQL = """
CREATE TABLE workflows (
    id TEXT COLLATE "C" PRIMARY KEY,
    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('workflow', 'app')),
    name TEXT COLLATE "C" NOT NULL,
    description TEXT COLLATE "C",
    nodes TEXT COLLATE "C" NOT NULL DEFAULT '[]',
    created_by TEXT COLLATE "C" NOT NULL REFERENCES members(id),
    project_id TEXT COLLATE "C" REFERENCES projects(id) ON DELETE SET NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    last_used_at TEXT COLLATE "C"
);
CREATE INDEX workflows_project ON workflows(project_id, id);
CREATE INDEX workflows_creator ON workflows(created_by, id);
"""
