"""m010_skills: skills, their published versions, and staged bundle uploads.

File contents live in the workspace's blobs/ folder by SHA-256; a version's manifest lists
{path, size, sha256, mode} for every file, so a version is immutable and cheap to revert to.
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn

SQL = """
CREATE TABLE skills (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'published', 'archived')),
    enabled INTEGER NOT NULL DEFAULT 1,
    version INTEGER NOT NULL DEFAULT 0,
    project_id TEXT REFERENCES projects(id) ON DELETE SET NULL,
    created_by TEXT NOT NULL REFERENCES members(id),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_used_at TEXT
);
-- Names are unique among the workspace's skills that are not archived.
CREATE UNIQUE INDEX skills_live_name ON skills(name) WHERE status != 'archived';
CREATE INDEX skills_project ON skills(project_id);
CREATE TABLE skill_versions (
    id TEXT PRIMARY KEY,
    skill_id TEXT NOT NULL REFERENCES skills(id),
    number INTEGER NOT NULL,
    published_at TEXT NOT NULL,
    published_by TEXT NOT NULL REFERENCES members(id),
    source TEXT NOT NULL CHECK (source IN ('inline', 'bundle', 'revert')),
    sha256 TEXT NOT NULL,
    manifest TEXT NOT NULL,
    UNIQUE (skill_id, number)
);
CREATE TABLE skill_uploads (
    id TEXT PRIMARY KEY,
    skill_id TEXT NOT NULL REFERENCES skills(id),
    created_by TEXT NOT NULL REFERENCES members(id),
    created_at TEXT NOT NULL,
    url_expires_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'uploaded', 'used')),
    blob_sha256 TEXT,
    size INTEGER
);
CREATE INDEX skill_uploads_skill ON skill_uploads(skill_id);
"""


def up(conn: Conn) -> None:
    execute_script(conn, SQL)


# The same schema in PostgreSQL (engine/db/postgres.py): TEXT compares and sorts in byte order
# (COLLATE "C", as SQLite's BINARY), INTEGER is BIGINT, BLOB is BYTEA, rowids are identity columns.
POSTGRES_SQL = """
CREATE TABLE skills (
    id TEXT COLLATE "C" PRIMARY KEY,
    name TEXT COLLATE "C" NOT NULL,
    description TEXT COLLATE "C" NOT NULL,
    status TEXT COLLATE "C" NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'published', 'archived')),
    enabled BIGINT NOT NULL DEFAULT 1,
    version BIGINT NOT NULL DEFAULT 0,
    project_id TEXT COLLATE "C" REFERENCES projects(id) ON DELETE SET NULL,
    created_by TEXT COLLATE "C" NOT NULL REFERENCES members(id),
    created_at TEXT COLLATE "C" NOT NULL,
    updated_at TEXT COLLATE "C" NOT NULL,
    last_used_at TEXT COLLATE "C"
);
-- Names are unique among the workspace's skills that are not archived.
CREATE UNIQUE INDEX skills_live_name ON skills(name) WHERE status != 'archived';
CREATE INDEX skills_project ON skills(project_id);
CREATE TABLE skill_versions (
    id TEXT COLLATE "C" PRIMARY KEY,
    skill_id TEXT COLLATE "C" NOT NULL REFERENCES skills(id),
    number BIGINT NOT NULL,
    published_at TEXT COLLATE "C" NOT NULL,
    published_by TEXT COLLATE "C" NOT NULL REFERENCES members(id),
    source TEXT COLLATE "C" NOT NULL CHECK (source IN ('inline', 'bundle', 'revert')),
    sha256 TEXT COLLATE "C" NOT NULL,
    manifest TEXT COLLATE "C" NOT NULL,
    UNIQUE (skill_id, number)
);
CREATE TABLE skill_uploads (
    id TEXT COLLATE "C" PRIMARY KEY,
    skill_id TEXT COLLATE "C" NOT NULL REFERENCES skills(id),
    created_by TEXT COLLATE "C" NOT NULL REFERENCES members(id),
    created_at TEXT COLLATE "C" NOT NULL,
    url_expires_at TEXT COLLATE "C" NOT NULL,
    expires_at TEXT COLLATE "C" NOT NULL,
    state TEXT COLLATE "C" NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'uploaded', 'used')),
    blob_sha256 TEXT COLLATE "C",
    size BIGINT
);
CREATE INDEX skill_uploads_skill ON skill_uploads(skill_id);
"""
