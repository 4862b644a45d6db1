"""Skills SQL: skills, their versions and staged uploads, with the caller's project role."""
from __future__ import annotations

import json

from workspacectl import clock
from workspacectl.engine.db import INTEGRITY_ERRORS
from workspacectl.engine.db.conn import Conn, Row
from workspacectl.engine.ids import new_id
from workspacectl.engine.store.projects import ROLE_SQL

# The caller's role on the project holding the skill: the project's own rule (nearest grant,
# guests capped at viewer), NULL for a skill outside any project.
_PROJECT_ROLE = f"""CASE WHEN s.project_id IS NULL THEN NULL ELSE ({ROLE_SQL}) END"""
_SELECT = f"SELECT s.*, ({_PROJECT_ROLE}) AS project_role FROM skills s LEFT JOIN projects p ON p.id = s.project_id"
# Rows a member who is not an owner or admin may see at all.
_VISIBLE = f"""(s.project_id IS NULL OR s.created_by = :me OR ({_PROJECT_ROLE}) IS NOT NULL)"""


def insert_skill(conn: Conn, name: str, description: str, me: str) -> str | None:
    """The new id, or None when a skill that is not archived already has the name."""
    sid = new_id("skl")
    now = clock.now_iso()
    try:
        conn.execute("INSERT INTO skills (id, name, description, created_by, created_at, updated_at)"
                     " VALUES (?, ?, ?, ?, ?, ?)", (sid, name, description, me, now, now))
    except INTEGRITY_ERRORS:
        return None
    return sid


def get_skill(conn: Conn, sid: str, me: str) -> Row:
    return conn.execute(f"{_SELECT} WHERE s.id = :id", {"id": sid, "me": me}).fetchone()


def get_skill_by_name(conn: Conn, name: str, me: str) -> Row:
    return conn.execute(f"{_SELECT} WHERE s.name = :name AND s.status != 'archived'",
                        {"name": name, "me": me}).fetchone()


def list_skills(conn: Conn, me: str, see_all: bool, statuses: tuple[str, ...], after: str | None, limit: int,
                project_id: str | None = None) -> list:
    args = {"me": me, "after": after or "", "limit": limit, "pid": project_id}
    args.update({f"s{i}": st for i, st in enumerate(statuses)})
    marks = ",".join(f":s{i}" for i in range(len(statuses)))
    where = "1 = 1" if see_all else _VISIBLE
    if project_id is not None:
        where += " AND s.project_id = :pid"
    return conn.execute(f"{_SELECT} WHERE s.status IN ({marks}) AND {where} AND s.id > :after "
                        "ORDER BY s.id LIMIT :limit", args).fetchall()


def update_skill(conn: Conn, sid: str, values: dict) -> bool:
    """values: column -> value. False when a live skill already holds the new name."""
    values = {**values, "updated_at": clock.now_iso()}
    sets = ", ".join(f"{col} = ?" for col in values)
    try:
        conn.execute(f"UPDATE skills SET {sets} WHERE id = ?", (*values.values(), sid))
    except INTEGRITY_ERRORS:
        return False
    return True


def touch_used(conn: Conn, sid: str) -> None:
    conn.execute("UPDATE skills SET last_used_at = ? WHERE id = ?", (clock.now_iso(), sid))


# ------------------------------------------------------------------ versions

def next_number(conn: Conn, sid: str) -> int:
    row = conn.execute("SELECT MAX(number) FROM skill_versions WHERE skill_id = ?", (sid,)).fetchone()
    return (row[0] or 0) + 1


def insert_version(conn: Conn, sid: str, number: int, me: str, source: str, sha: str, manifest: list) -> str:
    vid = new_id("skv")
    conn.execute("INSERT INTO skill_versions (id, skill_id, number, published_at, published_by, source, sha256,"
                 " manifest) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 (vid, sid, number, clock.now_iso(), me, source, sha, json.dumps(manifest)))
    return vid


def get_version(conn: Conn, vid: str) -> Row:
    return conn.execute("SELECT * FROM skill_versions WHERE id = ?", (vid,)).fetchone()


def get_version_by_number(conn: Conn, sid: str, number: int) -> Row:
    return conn.execute("SELECT * FROM skill_versions WHERE skill_id = ? AND number = ?", (sid, number)).fetchone()


def list_versions(conn: Conn, sid: str, before: int | None, limit: int) -> list:
    """Newest first; `before`: the number of the last version of the previous page."""
    return conn.execute("SELECT * FROM skill_versions WHERE skill_id = ? AND number < ? ORDER BY number DESC LIMIT ?",
                        (sid, before if before is not None else 2**62, limit)).fetchall()


# ------------------------------------------------------------------ staged uploads

def insert_upload(conn: Conn, sid: str, me: str, url_expires_at: str, expires_at: str) -> str:
    uid = new_id("upl")
    conn.execute("INSERT INTO skill_uploads (id, skill_id, created_by, created_at, url_expires_at, expires_at)"
                 " VALUES (?, ?, ?, ?, ?, ?)", (uid, sid, me, clock.now_iso(), url_expires_at, expires_at))
    return uid


def get_upload(conn: Conn, uid: str) -> Row:
    return conn.execute("SELECT * FROM skill_uploads WHERE id = ?", (uid,)).fetchone()


def mark_uploaded(conn: Conn, uid: str, sha: str, size: int) -> bool:
    cur = conn.execute("UPDATE skill_uploads SET state = 'uploaded', blob_sha256 = ?, size = ?"
                       " WHERE id = ? AND state = 'pending'", (sha, size, uid))
    return cur.rowcount == 1


def delete_uploads_expired_before(conn: Conn, cutoff: str) -> list[str | None]:
    """Delete staged uploads whose expires_at is before cutoff; answers their blob sha256s (None
    for one never uploaded), one per row deleted."""
    rows = conn.execute("SELECT blob_sha256 FROM skill_uploads WHERE expires_at < ?", (cutoff,)).fetchall()
    conn.execute("DELETE FROM skill_uploads WHERE expires_at < ?", (cutoff,))
    return [r[0] for r in rows]


def mark_used(conn: Conn, uid: str) -> bool:
    cur = conn.execute("UPDATE skill_uploads SET state = 'used' WHERE id = ? AND state = 'uploaded'", (uid,))
    return cur.rowcount == 1
