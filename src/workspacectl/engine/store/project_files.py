"""Project files SQL: one row per (project, path); contents are blobs named by sha256."""
from __future__ import annotations

from workspacectl.engine.db.conn import Conn

_CHUNK = 500  # bound parameters per IN (...) query


def list_files(conn: Conn, pid: str, after: str | None, limit: int) -> list:
    return conn.execute(
        "SELECT path, size, sha256, updated_at FROM project_files WHERE project_id = ? AND path > ?"
        " ORDER BY path LIMIT ?", (pid, after or "", limit)).fetchall()


def all_files(conn: Conn, pid: str) -> list:
    return conn.execute("SELECT path, size, sha256, updated_at FROM project_files WHERE project_id = ?"
                        " ORDER BY path", (pid,)).fetchall()


def files_at(conn: Conn, pid: str, paths: list[str]) -> dict:
    """{path: row} for those of paths the project holds."""
    out = {}
    for i in range(0, len(paths), _CHUNK):
        part = paths[i:i + _CHUNK]
        marks = ",".join("?" * len(part))
        sql = f"SELECT path, size, sha256 FROM project_files WHERE project_id = ? AND path IN ({marks})"
        for r in conn.execute(sql, (pid, *part)):
            out[r["path"]] = r
    return out


def first_file_under(conn: Conn, pid: str, folder: str) -> str | None:
    """A file path under folder/ (so folder cannot also be a file), or None."""
    row = conn.execute("SELECT path FROM project_files WHERE project_id = ? AND path > ? AND path < ? LIMIT 1",
                       (pid, folder + "/", folder + "0")).fetchone()  # '0' sorts right after '/'
    return row["path"] if row else None


def totals(conn: Conn, pid: str) -> tuple[int, int]:
    row = conn.execute("SELECT COUNT(*) AS n, COALESCE(SUM(size), 0) AS bytes FROM project_files WHERE project_id = ?",
                       (pid,)).fetchone()
    return row["n"], row["bytes"]


def put_file(conn: Conn, pid: str, path: str, size: int, sha: str, now: str) -> None:
    conn.execute("INSERT INTO project_files (project_id, path, size, sha256, updated_at) VALUES (?,?,?,?,?)"
                 " ON CONFLICT (project_id, path) DO UPDATE SET size = excluded.size, sha256 = excluded.sha256,"
                 " updated_at = excluded.updated_at", (pid, path, size, sha, now))


def delete_file(conn: Conn, pid: str, path: str) -> str | None:
    """Delete one file; answer its sha256, or None when the project held no such path."""
    row = conn.execute("DELETE FROM project_files WHERE project_id = ? AND path = ? RETURNING sha256",
                       (pid, path)).fetchone()
    return row["sha256"] if row else None


def file_shas(conn: Conn, pid: str) -> list[str]:
    """The blobs a project's files hold (to collect after the project is deleted)."""
    return [r[0] for r in conn.execute("SELECT DISTINCT sha256 FROM project_files WHERE project_id = ?", (pid,))]
