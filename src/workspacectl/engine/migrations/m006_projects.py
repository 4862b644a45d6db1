"""m006_projects: projects (specialists) and their grants."""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn

SQL = """
CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT,
    icon TEXT,
    worker_color TEXT,
    worker_accessories TEXT NOT NULL DEFAULT '{"head": null, "shirt": null, "hand": null}',
    owner_member_id TEXT NOT NULL REFERENCES members(id),
    memory_text TEXT NOT NULL DEFAULT '',
    memory_version INTEGER NOT NULL DEFAULT 1,
    memory_updated_at TEXT NOT NULL,
    memory_updated_by TEXT REFERENCES members(id),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX projects_owner ON projects(owner_member_id, id);
-- member_id NULL = the workspace grant (orgGrant); one grant per (project, member or workspace)
CREATE TABLE project_grants (
    project_id TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    member_id TEXT REFERENCES members(id),
    role TEXT NOT NULL CHECK (role IN ('editor', 'viewer')),
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX project_grants_member ON project_grants(project_id, IFNULL(member_id, ''));
CREATE INDEX project_grants_by_member ON project_grants(member_id, project_id);
"""


def up(conn: Conn) -> None:
    execute_script(conn, SQL)


# The same schema in PostgreSQL (engine/db/postgres.py): TEXT compares and sorts in byte order
# (COLLATE "C", as SQLite's BINARY), INTEGER is BIGINT, BLOB is BYTEA, rowids are identity columns.
POSTGRES_SQL = """
CREATE TABLE projects (
    id TEXT COLLATE "C" PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL,
    description TEXT COLLATE "C",
    icon TEXT COLLATE "C",
    worker_color TEXT COLLATE "C",
    worker_accessories TEXT COLLATE "C" NOT NULL DEFAULT '{"head": null, "shirt": null, "hand": null}',
    owner_member_id TEXT COLLATE "C" NOT NULL REFERENCES members(id),
    memory_text TEXT COLLATE "C" NOT NULL DEFAULT '',
    memory_version BIGINT NOT NULL DEFAULT 1,
    memory_updated_at TEXT COLLATE "C" NOT NULL,
    memory_updated_by TEXT COLLATE "C" REFERENCES members(id),
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL
);
CREATE INDEX projects_owner ON projects(owner_member_id, id);
-- member_id NULL = the workspace grant (orgGrant); one grant per (project, member or workspace)
CREATE TABLE project_grants (
    project_id TEXT COLLATE "C" NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
    member_id TEXT COLLATE "C" REFERENCES members(id),
    role TEXT COLLATE "C" NOT NULL CHECK (role IN ('editor', 'viewer')),
    created_at TEXT COLLATE "C" NOT NULL
);
CREATE UNIQUE INDEX project_grants_member ON project_grants(project_id, COALESCE(member_id, ''));
CREATE INDEX project_grants_by_member ON project_grants(member_id, project_id);
"""
