"""m011_memory_held: a memory note may be `held` (kept, never folded: the guide would pass its
size bound), with the reason. SQLite cannot widen a CHECK in place, so memory_notes is rebuilt;
rowids are copied because rowid order is the order notes were queued in."""
from workspacectl.engine.db import execute_script

SQL = """
CREATE TABLE memory_notes_m011 (
    id TEXT PRIMARY KEY,
    document_id INTEGER NOT NULL REFERENCES memory_documents(id) ON DELETE CASCADE,
    text TEXT NOT NULL,
    section TEXT,
    file_path TEXT,
    file_content BLOB,
    proposed_by TEXT NOT NULL REFERENCES members(id),
    proposed_at TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'folded', 'dropped', 'held')),
    resolved_at TEXT,
    held_reason TEXT
);
INSERT INTO memory_notes_m011 (rowid, id, document_id, text, section, file_path, file_content, proposed_by,
                               proposed_at, status, resolved_at)
    SELECT rowid, id, document_id, text, section, file_path, file_content, proposed_by, proposed_at, status,
           resolved_at FROM memory_notes ORDER BY rowid;
DROP TABLE memory_notes;
ALTER TABLE memory_notes_m011 RENAME TO memory_notes;
CREATE INDEX memory_notes_by_status ON memory_notes(status, document_id);
CREATE INDEX memory_notes_by_document ON memory_notes(document_id, status);
"""


def up(conn):
    execute_script(conn, SQL)
