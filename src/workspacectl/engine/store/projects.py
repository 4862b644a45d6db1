"""Projects SQL: rows, grants, and the caller's role resolved from the nearest grant."""
from __future__ import annotations

import json

from workspacectl import clock
from workspacectl.engine.ids import new_id

_ROLE_SQL = """
CASE
  WHEN p.owner_member_id = :me THEN 'owner'
  ELSE COALESCE((SELECT role FROM project_grants g WHERE g.project_id = p.id AND g.member_id = :me),
                (SELECT role FROM project_grants g WHERE g.project_id = p.id AND g.member_id IS NULL))
END
"""
_COLUMNS = f"""p.*, ({_ROLE_SQL}) AS role,
  (SELECT role FROM project_grants g WHERE g.project_id = p.id AND g.member_id IS NULL) AS org_role,
  (SELECT COUNT(*) FROM project_grants g WHERE g.project_id = p.id) AS grant_count"""


def insert_project(conn, owner_id: str, values: dict) -> str:
    pid = new_id("proj")
    now = clock.now_iso()
    conn.execute(
        "INSERT INTO projects (id, name, description, icon, worker_color, worker_accessories, owner_member_id,"
        " memory_updated_at, memory_updated_by, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        (pid, values["name"], values.get("description"), values.get("icon"), values.get("workerColor"),
         json.dumps(values.get("workerAccessories") or {"head": None, "shirt": None, "hand": None}),
         owner_id, now, owner_id, now, now))
    return pid


def update_project(conn, pid: str, values: dict) -> None:
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


def get_project(conn, pid: str, me: str):
    """The row with the caller's role, or None when the caller has no access (404, no leak)."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM projects p WHERE p.id = :id", {"id": pid, "me": me}).fetchone()
    return row if row is not None and row["role"] else None


def list_projects(conn, me: str, after, limit: int) -> list:
    return conn.execute(
        f"""SELECT {_COLUMNS} FROM projects p
            WHERE (p.owner_member_id = :me
                   OR EXISTS (SELECT 1 FROM project_grants g WHERE g.project_id = p.id
                              AND (g.member_id = :me OR g.member_id IS NULL)))
              AND p.id > :after
            ORDER BY p.id LIMIT :limit""",
        {"me": me, "after": after or "", "limit": limit}).fetchall()


def member_brief(conn, member_id: str | None) -> dict | None:
    if not member_id:
        return None
    row = conn.execute("SELECT id, name FROM members WHERE id = ?", (member_id,)).fetchone()
    return {"membershipId": row["id"], "displayName": row["name"]} if row else {"membershipId": member_id}
