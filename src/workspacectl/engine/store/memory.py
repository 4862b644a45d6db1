"""Memory SQL: documents per owner, pending notes, reference files."""
from __future__ import annotations

from workspacectl.engine.ids import new_id


def ensure_document(conn, owner_type: str, member_id: str | None, now: str):
    """The owner's document row, made (empty, version 1) the first time it is needed."""
    conn.execute("INSERT OR IGNORE INTO memory_documents (owner_type, member_id, updated_at) VALUES (?, ?, ?)",
                 (owner_type, member_id, now))
    return get_document(conn, owner_type, member_id)


def get_document(conn, owner_type: str, member_id: str | None):
    return conn.execute("SELECT * FROM memory_documents WHERE owner_type = ? AND IFNULL(member_id, '') = ?",
                        (owner_type, member_id or "")).fetchone()


def get_document_by_id(conn, document_id: int):
    return conn.execute("SELECT * FROM memory_documents WHERE id = ?", (document_id,)).fetchone()


def documents_with_pending(conn) -> list:
    return conn.execute(
        """SELECT d.* FROM memory_documents d
           WHERE EXISTS (SELECT 1 FROM memory_notes n WHERE n.document_id = d.id AND n.status = 'pending')
           ORDER BY d.id""").fetchall()


def update_guide(conn, document_id: int, guide: str, version: int, now: str) -> None:
    conn.execute("UPDATE memory_documents SET guide = ?, version = ?, updated_at = ? WHERE id = ?",
                 (guide, version, now, document_id))


# --- notes ------------------------------------------------------------------------------------

def insert_note(conn, document_id: int, text: str, section: str | None, file_path: str | None,
                file_content: bytes | None, proposed_by: str, now: str) -> str:
    note_id = new_id("note")
    conn.execute(
        "INSERT INTO memory_notes (id, document_id, text, section, file_path, file_content, proposed_by, proposed_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (note_id, document_id, text, section, file_path, file_content, proposed_by, now))
    return note_id


def pending_notes(conn, document_id: int, limit: int) -> list:
    return conn.execute(
        "SELECT * FROM memory_notes WHERE document_id = ? AND status = 'pending' ORDER BY rowid LIMIT ?",
        (document_id, limit)).fetchall()


def count_pending(conn, document_id: int) -> int:
    return conn.execute("SELECT COUNT(*) FROM memory_notes WHERE document_id = ? AND status = 'pending'",
                        (document_id,)).fetchone()[0]


def resolve_note(conn, note_id: str, status: str, now: str) -> None:
    conn.execute("UPDATE memory_notes SET status = ?, resolved_at = ? WHERE id = ? AND status = 'pending'",
                 (status, now, note_id))


# --- files ------------------------------------------------------------------------------------

def list_files(conn, document_id: int, after: str | None, limit: int) -> list:
    return conn.execute(
        "SELECT path, size, updated_at FROM memory_files WHERE document_id = ? AND path > ? ORDER BY path LIMIT ?",
        (document_id, after or "", limit)).fetchall()


def get_file(conn, document_id: int, path: str):
    return conn.execute("SELECT * FROM memory_files WHERE document_id = ? AND path = ?",
                        (document_id, path)).fetchone()


def iter_files(conn, document_id: int):
    """Every file with its content, one row at a time (one SELECT: one consistent snapshot)."""
    return conn.execute("SELECT path, size, content, updated_at FROM memory_files WHERE document_id = ? ORDER BY path",
                        (document_id,))


def path_clash(conn, document_id: int, path: str) -> str | None:
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


def put_file(conn, document_id: int, path: str, content: bytes, now: str) -> None:
    conn.execute(
        """INSERT INTO memory_files (document_id, path, size, content, updated_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT(document_id, path) DO UPDATE SET size = excluded.size, content = excluded.content,
                                                        updated_at = excluded.updated_at""",
        (document_id, path, len(content), content, now))
