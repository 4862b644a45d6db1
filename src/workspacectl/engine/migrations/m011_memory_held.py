"""m011_memory_held: memory notes that may be `held`, with file bytes kept apart.

- A note may be `held` (kept, never folded: the guide would pass its size bound), with the
  reason in held_reason. SQLite cannot widen a CHECK in place, so memory_notes is rebuilt;
  rowids are copied because rowid order is the order notes were queued in.
- A proposed file's bytes move to memory_note_files. SQLite rewrites a whole row on UPDATE, so
  marking a note folded rewrote up to 1 MiB of file inside the fold's transaction; the note row
  is small now (file_size kept in it), and listing or marking notes never touches file bytes.
"""
from workspacectl.engine.db import execute_script
from workspacectl.engine.db.conn import Conn

SQL = """
CREATE TABLE memory_notes_m011 (
    id TEXT PRIMARY KEY,
    document_id INTEGER NOT NULL REFERENCES memory_documents(id) ON DELETE CASCADE,
    text TEXT NOT NULL,
    section TEXT,
    file_path TEXT,
    file_size INTEGER,
    proposed_by TEXT NOT NULL REFERENCES members(id),
    proposed_at TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'folded', 'dropped', 'held')),
    resolved_at TEXT,
    held_reason TEXT
);
INSERT INTO memory_notes_m011 (rowid, id, document_id, text, section, file_path, file_size, proposed_by,
                               proposed_at, status, resolved_at)
    SELECT rowid, id, document_id, text, section, file_path,
           CASE WHEN file_path IS NULL THEN NULL ELSE length(IFNULL(file_content, X'')) END,
           proposed_by, proposed_at, status, resolved_at FROM memory_notes ORDER BY rowid;
-- The bytes of a proposed file until its note is folded (then they live in memory_files).
CREATE TABLE memory_note_files (
    note_id TEXT PRIMARY KEY REFERENCES memory_notes_m011(id) ON DELETE CASCADE,
    content BLOB NOT NULL
);
INSERT INTO memory_note_files (note_id, content)
    SELECT id, IFNULL(file_content, X'') FROM memory_notes WHERE file_path IS NOT NULL AND status <> 'folded';
DROP TABLE memory_notes;
ALTER TABLE memory_notes_m011 RENAME TO memory_notes;
CREATE INDEX memory_notes_by_status ON memory_notes(status, document_id);
CREATE INDEX memory_notes_by_document ON memory_notes(document_id, status);
"""


def up(conn: Conn) -> None:
    execute_script(conn, SQL)


# PostgreSQL widens the CHECK and adds columns in place (no rebuild; rowid order is kept).
POSTGRES_SQL = """
ALTER TABLE memory_notes ADD COLUMN file_size BIGINT, ADD COLUMN held_reason TEXT COLLATE "C";
UPDATE memory_notes SET file_size = length(COALESCE(file_content, ''::bytea)) WHERE file_path IS NOT NULL;
CREATE TABLE memory_note_files (
    note_id TEXT COLLATE "C" PRIMARY KEY REFERENCES memory_notes(id) ON DELETE CASCADE,
    content BYTEA NOT NULL
);
INSERT INTO memory_note_files (note_id, content)
    SELECT id, COALESCE(file_content, ''::bytea) FROM memory_notes WHERE file_path IS NOT NULL AND status <> 'folded';
ALTER TABLE memory_notes DROP COLUMN file_content;
ALTER TABLE memory_notes DROP CONSTRAINT memory_notes_status_check;
ALTER TABLE memory_notes ADD CONSTRAINT memory_notes_status_check
    CHECK (status IN ('pending', 'folded', 'dropped', 'held'));
"""
