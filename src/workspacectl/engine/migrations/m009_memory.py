"""m009_memory: memory documents (organization and membership), pending notes, reference files."""
from workspacectl.engine.db import execute_script

SQL = """
-- One document per owner: the workspace (member_id NULL) or one member.
CREATE TABLE memory_documents (
    id INTEGER PRIMARY KEY,
    owner_type TEXT NOT NULL CHECK (owner_type IN ('organization', 'membership')),
    member_id TEXT REFERENCES members(id) ON DELETE CASCADE,
    guide TEXT NOT NULL DEFAULT '',
    version INTEGER NOT NULL DEFAULT 1,
    updated_at TEXT NOT NULL,
    CHECK ((owner_type = 'organization') = (member_id IS NULL))
);
CREATE UNIQUE INDEX memory_documents_owner ON memory_documents(owner_type, IFNULL(member_id, ''));
-- Proposals queued for the memory agent; rowid order is the order they were queued in.
CREATE TABLE memory_notes (
    id TEXT PRIMARY KEY,
    document_id INTEGER NOT NULL REFERENCES memory_documents(id) ON DELETE CASCADE,
    text TEXT NOT NULL,
    section TEXT,
    file_path TEXT,
    file_content BLOB,
    proposed_by TEXT NOT NULL REFERENCES members(id),
    proposed_at TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'folded', 'dropped')),
    resolved_at TEXT
);
CREATE INDEX memory_notes_by_status ON memory_notes(status, document_id);
CREATE INDEX memory_notes_by_document ON memory_notes(document_id, status);
-- Reference files behind a guide; content is stored in the database, so a fold writes them in
-- the same transaction as the guide.
CREATE TABLE memory_files (
    document_id INTEGER NOT NULL REFERENCES memory_documents(id) ON DELETE CASCADE,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    content BLOB NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (document_id, path)
);
"""


def up(conn):
    execute_script(conn, SQL)
