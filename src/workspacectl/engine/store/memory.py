"""Memory SQL: documents per owner, pending notes, reference files."""
from __future__ import annotations

from workspacectl.engine.db.conn import Conn, Cursor, Row
from workspacectl.engine.ids import new_id


def ensure_document(conn: Conn, owner_type: str, member_id: str | None, now: str) -> Row:
    """The owner's document row, made (empty, version 1) the first time it is needed."""
    conn.execute("INSERT INTO memory_documents (owner_type, member_id, updated_at) VALUES (?, ?, ?) "
                 "ON CONFLICT DO NOTHING", (owner_type, member_id, now))
    return get_document(conn, owner_type, member_id)


def get_document(conn: Conn, owner_type: str, member_id: str | None) -> Row:
    return conn.execute("SELECT * FROM memory_documents WHERE owner_type = ? AND IFNULL(member_id, '') = ?",
                        (owner_type, member_id or "")).fetchone()


def documents_with_pending(conn: Conn) -> list:
    return conn.execute(
        """SELECT d.* FROM memory_documents d
           WHERE EXISTS (SELECT 1 FROM memory_notes n WHERE n.document_id = d.id AND n.status = 'pending')
           ORDER BY d.id""").fetchall()


def update_guide(conn: Conn, document_id: int, guide: str, version: int, now: str) -> None:
    conn.execute("UPDATE memory_documents SET guide = ?, version = ?, updated_at = ? WHERE id = ?",
                 (guide, version, now, document_id))


# --- notes ------------------------------------------------------------------------------------

def insert_note(conn: Conn, document_id: int, text: str, section: str | None, file_path: str | None,
                file_content: bytes | None, proposed_by: str, now: str) -> str:
    note_id = new_id("note")
    conn.execute(
        "INSERT INTO memory_notes (id, document_id, text, section, file_path, file_size, proposed_by, proposed_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (note_id, document_id, text, section, file_path, None if file_path is None else len(file_content or b""),
         proposed_by, now))
    if file_path is not None:
        conn.execute("INSERT INTO memory_note_files (note_id, content) VALUES (?, ?)", (note_id, file_content or b""))
    return note_id


# A note's file bytes live in memory_note_files (m011): listing, folding or marking notes never
# loads or rewrites up to 1 MiB per note; a fold copies the bytes inside SQLite.
_NOTE_COLUMNS = "id, text, section, file_path, file_size, proposed_by, proposed_at, held_reason"


def pending_notes(conn: Conn, document_id: int, limit: int, upto: int | None = None) -> list:
    """The oldest `limit` pending notes, in the order they were queued (only those queued up to
    rowid `upto` when given)."""
    return conn.execute(
        f"""SELECT {_NOTE_COLUMNS} FROM memory_notes WHERE document_id = ? AND status = 'pending' AND rowid <= ?
            ORDER BY rowid LIMIT ?""", (document_id, (1 << 63) - 1 if upto is None else upto, limit)).fetchall()


def last_note_rowid(conn: Conn, document_id: int) -> int:
    return conn.execute("SELECT IFNULL(MAX(rowid), 0) FROM memory_notes WHERE document_id = ? AND status = 'pending'",
                        (document_id,)).fetchone()[0]


def held_notes(conn: Conn, document_id: int, limit: int) -> list:
    return conn.execute(
        f"SELECT {_NOTE_COLUMNS} FROM memory_notes WHERE document_id = ? AND status = 'held' ORDER BY rowid LIMIT ?",
        (document_id, limit)).fetchall()


def count_pending(conn: Conn, document_id: int) -> int:
    return conn.execute("SELECT COUNT(*) FROM memory_notes WHERE document_id = ? AND status = 'pending'",
                        (document_id,)).fetchone()[0]


def resolve_note(conn: Conn, note_id: str, status: str, now: str, held_reason: str | None = None) -> None:
    """pending -> folded, dropped or held (with why); a note no longer pending is left alone."""
    conn.execute("UPDATE memory_notes SET status = ?, resolved_at = ?, held_reason = ?"
                 " WHERE id = ? AND status = 'pending'", (status, now, held_reason, note_id))


# --- files ------------------------------------------------------------------------------------

def list_files(conn: Conn, document_id: int, after: str | None, limit: int) -> list:
    return conn.execute(
        "SELECT path, size, updated_at FROM memory_files WHERE document_id = ? AND path > ? ORDER BY path LIMIT ?",
        (document_id, after or "", limit)).fetchall()


def get_file(conn: Conn, document_id: int, path: str) -> Row:
    return conn.execute("SELECT * FROM memory_files WHERE document_id = ? AND path = ?",
                        (document_id, path)).fetchone()


def iter_files(conn: Conn, document_id: int) -> Cursor:
    """Every file with its content, one row at a time (one SELECT: one consistent snapshot)."""
    return conn.execute("SELECT path, size, content, updated_at FROM memory_files WHERE document_id = ? ORDER BY path",
                        (document_id,))


def path_clash(conn: Conn, document_id: int, path: str) -> str | None:
    """An existing file that would collide with `path` in a folder tree: one of path's parent
    folders is a file, or path is a folder of an existing file. Answers that file's path."""
    parents = []
    parts = path.split("/")
    for i in range(1, len(parts)):
        parents.append("/".join(parts[:i]))
    marks = ",".join("?" * len(parents)) or "''"
    row = conn.execute(
        f"""SELECT path FROM memory_files WHERE document_id = ?
            AND (path IN ({marks}) OR substr(path, 1, ?) = ?) LIMIT 1""",
        (document_id, *parents, len(path) + 1, path + "/")).fetchone()
    return row["path"] if row else None


def note_file_stored(conn: Conn, document_id: int, note_id: str) -> bool:
    """True when the note's file is stored already with the same bytes (compared in SQLite)."""
    return conn.execute(
        """SELECT 1 FROM memory_notes n JOIN memory_note_files b ON b.note_id = n.id
           JOIN memory_files f ON f.document_id = ? AND f.path = n.file_path
           WHERE n.id = ? AND f.content = b.content""", (document_id, note_id)).fetchone() is not None


def put_file_from_note(conn: Conn, document_id: int, note_id: str, now: str) -> None:
    """Write (or replace) the note's file, moving its bytes inside SQLite: once folded, they
    live in memory_files only."""
    conn.execute(
        """INSERT INTO memory_files (document_id, path, size, content, updated_at)
           SELECT ?, n.file_path, length(b.content), b.content, ?
           FROM memory_notes n JOIN memory_note_files b ON b.note_id = n.id WHERE n.id = ?
           ON CONFLICT(document_id, path) DO UPDATE SET size = excluded.size, content = excluded.content,
                                                        updated_at = excluded.updated_at""",
        (document_id, now, note_id))
    conn.execute("DELETE FROM memory_note_files WHERE note_id = ?", (note_id,))
