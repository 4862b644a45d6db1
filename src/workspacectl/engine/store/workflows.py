"""Workflows and apps SQL, with the caller's access: the creator, else the role on the holding project."""
from __future__ import annotations

import json

from workspacectl import clock
from workspacectl.engine.db.conn import Conn, Row
from workspacectl.engine.ids import new_id
from workspacectl.engine.store import fetch_named, name_clause
from workspacectl.engine.store.projects import ROLE_SQL

# 'creator' for the member who made it; else the role on the project holding it (grants flow down).
_ACCESS = f"""CASE WHEN w.created_by = :me THEN 'creator'
  ELSE (SELECT {ROLE_SQL} FROM projects p WHERE p.id = w.project_id) END"""
_COLUMNS = f"w.*, ({_ACCESS}) AS access"


def insert_workflow(conn: Conn, me: str, values: dict, project_id: str | None) -> str:
    wid = new_id("wf")
    now = clock.now_iso()
    conn.execute(
        "INSERT INTO workflows (id, kind, name, description, nodes, created_by, project_id, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (wid, values["kind"], values["name"], values.get("description"), json.dumps(values["nodes"]), me,
         project_id, now, now))
    return wid


def get_workflow(conn: Conn, wid: str, me: str) -> Row:
    """The row with the caller's `access`, or None when the caller cannot see it."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM workflows w WHERE w.id = :id", {"id": wid, "me": me}).fetchone()
    return row if row is not None and row["access"] else None


def get_workflow_home(conn: Conn, wid: str) -> Row:
    """id, name, description, kind, project_id, created_by of any workflow (for pin), or None."""
    return conn.execute("SELECT id, name, description, kind, project_id, created_by, last_used_at FROM workflows"
                        " WHERE id = ?", (wid,)).fetchone()


def workflow_homes_named(conn: Conn, name: str, limit: int = 200) -> list:
    """Workflows and apps of this name (names are not unique), as get_workflow_home answers them."""
    return conn.execute("SELECT id, name, description, kind, project_id, created_by, last_used_at FROM workflows"
                        " WHERE name = ? ORDER BY id LIMIT ?", (name, limit)).fetchall()


def list_workflows(conn: Conn, me: str, after: str | None, limit: int, kind: str | None, project_id: str | None,
                   named: tuple[str, str] | None = None) -> list:
    """Workflows the caller made or can reach through a project, in id order."""
    clause, args = name_clause("w.name", named)
    sql = (f"SELECT * FROM (SELECT {_COLUMNS} FROM workflows w WHERE w.id > :after"
           + (" AND w.kind = :kind" if kind else "")
           + (" AND w.project_id = :pid" if project_id else "") + clause
           + " AND (w.created_by = :me OR w.project_id IS NOT NULL)) AS visible WHERE access IS NOT NULL ORDER BY id LIMIT :limit")
    return fetch_named(conn, sql, {"me": me, "after": after or "", "limit": limit, "kind": kind,
                                   "pid": project_id, **args}, named)


def touch_used(conn: Conn, wid: str) -> None:
    """Record a use (a read of the definition: docs/api.md §7.5) without changing updatedAt."""
    conn.execute("UPDATE workflows SET last_used_at = ? WHERE id = ?", (clock.now_iso(), wid))


def set_nodes(conn: Conn, wid: str, nodes: list) -> None:
    conn.execute("UPDATE workflows SET nodes = ?, updated_at = ? WHERE id = ?", (json.dumps(nodes), clock.now_iso(), wid))


def move_workflow(conn: Conn, wid: str, pid: str | None) -> None:
    conn.execute("UPDATE workflows SET project_id = ?, updated_at = ? WHERE id = ?", (pid, clock.now_iso(), wid))


def project_workflow_nodes(conn: Conn, pid: str) -> list:
    """(id, name, kind, nodes) of every workflow and app in the project."""
    return conn.execute("SELECT id, name, kind, nodes FROM workflows WHERE project_id = ? ORDER BY id",
                        (pid,)).fetchall()


def credential_briefs(conn: Conn, cred_ids: list[str]) -> dict:
    """{id: row(id, service, name, credential_type, status)} of the credentials that exist."""
    out = {}
    for i in range(0, len(cred_ids), 500):
        chunk = cred_ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        out.update({r["id"]: r for r in conn.execute(
            f"SELECT id, service, name, credential_type, status FROM credentials WHERE id IN ({marks})", chunk)})
    return out
