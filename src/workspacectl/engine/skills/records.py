"""The skill record (CONTRACT §8): finding one the caller may see, the edit check, its JSON.

Shared by the record's routes (routes.py), its versions (versions.py) and bundles (bundles.py), which
all sit above it.
"""
from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from workspacectl.engine.registry import Ctx
from workspacectl.engine.skills.access import access
from workspacectl.engine.store import skills as store
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.registry import Caller


def skill_json(row: sqlite3.Row, caller: Caller) -> dict:
    return {
        "id": row["id"], "name": row["name"], "description": row["description"], "status": row["status"],
        "enabled": bool(row["enabled"]), "version": row["version"], "projectId": row["project_id"],
        "createdBy": row["created_by"], "createdAt": row["created_at"], "updatedAt": row["updated_at"],
        "lastUsedAt": row["last_used_at"], "canEdit": access(caller, row) == "edit" and row["status"] != "archived",
    }


def find_skill(ctx: Ctx, ref: str) -> sqlite3.Row:
    """The row named by an id or a (live) name, or 404 when absent or invisible."""
    me = ctx.caller.member_id
    row = store.get_skill(ctx.db, ref, me) if ref.startswith("skl_") else store.get_skill_by_name(ctx.db, ref, me)
    if row is None or access(ctx.caller, row) is None:
        raise ApiError("not_found", f"No skill '{ref[:100]}'. Run `wsctl skill list`.")
    return row


def load_skill(ctx: Ctx, edit: bool = False) -> sqlite3.Row:
    row = find_skill(ctx, ctx.params["id"])
    if edit:
        require_edit(ctx, row)
    return row


def require_edit(ctx: Ctx, row: sqlite3.Row) -> None:
    """403 unless the caller may change the skill, 409 when it is archived."""
    if access(ctx.caller, row) != "edit":
        raise ApiError("forbidden", f"You can read skill '{row['name']}' but not change it; ask its creator "
                                    "or an editor of its specialist.")
    if row["status"] == "archived":
        raise ApiError("conflict", f"Skill '{row['name']}' is archived; create a new skill instead.")


def reload(ctx: Ctx, sid: str) -> sqlite3.Row:
    """A skill read again (after a change): one the caller has seen, and skills are archived, never
    deleted, so it is there."""
    row = store.get_skill(ctx.db, sid, ctx.caller.member_id)
    assert row is not None
    return row
