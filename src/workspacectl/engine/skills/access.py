"""Who may see or change a skill: the skills wing's public rule, also used by the projects wing
(pinning a skill into a project)."""
from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workspacectl.engine.registry import Caller

def access(caller: Caller, row: sqlite3.Row) -> str | None:
    """'edit', 'read' or None (invisible) for this caller on this skill row."""
    mine = row["created_by"] == caller.member_id
    project_role = row["project_role"]
    if caller.role == "guest":
        return "read" if (row["project_id"] is None or mine or project_role) else None
    if caller.is_admin or mine or project_role in ("owner", "editor"):
        return "edit"
    if row["project_id"] is None or project_role:
        return "read"
    return None
