"""Projects SQL: rows, grants, memory, contents, and the caller's role from the nearest grant.

Skills (`skills`, m010) and shared files (`project_files`, m008) belong to other areas; every
migration is applied when a workspace opens, so their tables are always there.
"""
from __future__ import annotations

import json

from workspacectl import clock
from workspacectl.engine.db.conn import Conn, Row
from workspacectl.engine.ids import new_id
from workspacectl.engine.store import fetch_named, name_clause

# The caller's role on project `p`: owner, else its own grant, else the workspace grant (nearest wins).
# Guests are read-only: a grant gives them at most viewer, whenever it was made (a member
# granted editor and later made a guest is capped too).
ROLE_SQL = """
CASE
  WHEN p.owner_member_id = :me THEN 'owner'
  ELSE (SELECT CASE WHEN r = 'editor' AND (SELECT role FROM members WHERE id = :me) = 'guest'
                    THEN 'viewer' ELSE r END
        FROM (SELECT COALESCE(
                (SELECT role FROM project_grants g WHERE g.project_id = p.id AND g.member_id = :me),
                (SELECT role FROM project_grants g WHERE g.project_id = p.id AND g.member_id IS NULL)) AS r) AS nearest)
END
"""


_COLUMNS = f"""p.*, ({ROLE_SQL}) AS role,
  (SELECT role FROM project_grants g WHERE g.project_id = p.id AND g.member_id IS NULL) AS org_role,
  (SELECT COUNT(*) FROM project_grants g WHERE g.project_id = p.id) AS grant_count,
  (SELECT COUNT(*) FROM workflows w WHERE w.project_id = p.id AND w.kind = 'workflow') AS n_workflows,
  (SELECT COUNT(*) FROM workflows w WHERE w.project_id = p.id AND w.kind = 'app') AS n_apps,
  (SELECT COUNT(*) FROM skills s WHERE s.project_id = p.id AND s.status <> 'archived') AS n_skills,
  (SELECT COUNT(*) FROM project_files f WHERE f.project_id = p.id) AS n_files"""


def insert_project(conn: Conn, owner_id: str, values: dict) -> str:
    pid = new_id("proj")
    now = clock.now_iso()
    conn.execute(
        "INSERT INTO projects (id, name, description, icon, worker_color, worker_accessories, owner_member_id,"
        " memory_updated_at, memory_updated_by, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (pid, values["name"], values.get("description"), values.get("icon"), values.get("workerColor"),
         json.dumps(values.get("workerAccessories") or {"head": None, "shirt": None, "hand": None}),
         owner_id, now, owner_id, now, now))
    return pid


def update_project(conn: Conn, pid: str, values: dict) -> None:
    cols = {"name": "name", "description": "description", "icon": "icon", "workerColor": "worker_color"}
    sets, args = [], []
    for key, col in cols.items():
        if key in values:
            sets.append(f"{col} = ?")
            args.append(values[key])
    if "workerAccessories" in values:
        sets.append("worker_accessories = ?")
        args.append(json.dumps(values["workerAccessories"]))
    sets.append("updated_at = ?")
    args.append(clock.now_iso())
    conn.execute(f"UPDATE projects SET {', '.join(sets)} WHERE id = ?", (*args, pid))


def get_project(conn: Conn, pid: str, me: str) -> Row:
    """The row with the caller's role, or None when the caller has no access (404, no leak)."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM projects p WHERE p.id = :id", {"id": pid, "me": me}).fetchone()
    return row if row is not None and row["role"] else None


def list_projects(conn: Conn, me: str, after: str | None, limit: int, named: tuple[str, str] | None = None) -> list:
    clause, args = name_clause("p.name", named)
    return fetch_named(
        conn, f"""SELECT {_COLUMNS} FROM projects p
            WHERE (p.owner_member_id = :me
                   OR EXISTS (SELECT 1 FROM project_grants g WHERE g.project_id = p.id
                              AND (g.member_id = :me OR g.member_id IS NULL)))
              AND p.id > :after{clause}
            ORDER BY p.id LIMIT :limit""",
        {"me": me, "after": after or "", "limit": limit, **args}, named)


def member_brief(conn: Conn, member_id: str | None) -> dict | None:
    if not member_id:
        return None
    row = conn.execute("SELECT id, name FROM members WHERE id = ?", (member_id,)).fetchone()
    return {"membershipId": row["id"], "displayName": row["name"]} if row else {"membershipId": member_id}


# --- grants ----------------------------------------------------------------------------------

def list_grants(conn: Conn, pid: str) -> list:
    return conn.execute(
        "SELECT g.member_id, g.role, m.name FROM project_grants g LEFT JOIN members m ON m.id = g.member_id"
        " WHERE g.project_id = ? ORDER BY g.member_id IS NOT NULL, g.created_at, g.member_id", (pid,)).fetchall()


def set_grant(conn: Conn, pid: str, member_id: str | None, role: str | None) -> None:
    """Replace the grant of a member (or of the workspace, member_id None); role None removes it."""
    conn.execute("DELETE FROM project_grants WHERE project_id = ? AND IFNULL(member_id, '') = ?",
                 (pid, member_id or ""))
    if role is not None:
        conn.execute("INSERT INTO project_grants (project_id, member_id, role, created_at) VALUES (?, ?, ?, ?)",
                     (pid, member_id, role, clock.now_iso()))


# --- memory ----------------------------------------------------------------------------------

def replace_memory(conn: Conn, pid: str, text: str, version: int, me: str) -> bool:
    """Write the memory if its version is still `version`; False when another write won."""
    cur = conn.execute(
        "UPDATE projects SET memory_text = ?, memory_version = memory_version + 1, memory_updated_at = ?,"
        " memory_updated_by = ? WHERE id = ? AND memory_version = ?", (text, clock.now_iso(), me, pid, version))
    return cur.rowcount == 1


# --- contents --------------------------------------------------------------------------------

def list_resources(conn: Conn, pid: str, limit: int) -> list:
    """The first `limit` workflows, apps and non-archived skills in the project, in id order."""
    return conn.execute(
        "SELECT id, name, description, kind AS type, last_used_at FROM workflows WHERE project_id = :pid"
        " UNION ALL SELECT id, name, description, 'skill' AS type, last_used_at"
        " FROM skills WHERE project_id = :pid AND status <> 'archived' ORDER BY id LIMIT :limit",
        {"pid": pid, "limit": limit}).fetchall()


def delete_project(conn: Conn, pid: str) -> dict:
    """Return every workflow, app and skill to its creator, drop the files and the project.
    The caller holds the transaction. Answers how many resources went back and files went."""
    returned = conn.execute("UPDATE workflows SET project_id = NULL WHERE project_id = ?", (pid,)).rowcount
    returned += conn.execute("UPDATE skills SET project_id = NULL WHERE project_id = ?", (pid,)).rowcount
    files = conn.execute("DELETE FROM project_files WHERE project_id = ?", (pid,)).rowcount
    conn.execute("DELETE FROM projects WHERE id = ?", (pid,))
    return {"returnedResources": returned, "deletedFiles": files}


def get_skill_home(conn: Conn, skill_id: str) -> Row:
    """(id, name, description, project_id, created_by, status, last_used_at) of a skill, or None."""
    return conn.execute("SELECT id, name, description, project_id, created_by, status, last_used_at FROM skills"
                        " WHERE id = ?", (skill_id,)).fetchone()


def skill_homes_named(conn: Conn, name: str) -> list:
    """The live (not archived) skill of this name, as get_skill_home answers it: none or one."""
    return conn.execute("SELECT id, name, description, project_id, created_by, status, last_used_at FROM skills"
                        " WHERE name = ? AND status != 'archived'", (name,)).fetchall()


def move_skill(conn: Conn, skill_id: str, pid: str | None) -> None:
    conn.execute("UPDATE skills SET project_id = ? WHERE id = ?", (pid, skill_id))
