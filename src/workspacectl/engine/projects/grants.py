"""Project grants: `PUT /v1/projects/:id/grants {membershipId | workspace: true, role}` (owner only).

One grant per member and one for the workspace; `role` editor or viewer, or null to remove it.
The role a member gets is the nearest grant's (store.projects.ROLE_SQL), never the highest.
"""
from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.projects.routes import full_json, load, require_owner
from workspacectl.engine.registry import Ctx, route
from workspacectl.engine.schema_blocks import obj, ref, text
from workspacectl.engine.store import identity as identity_store
from workspacectl.engine.store import projects as store
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

ROLES = ("editor", "viewer")


def _grant_target(conn: Conn, body: dict) -> sqlite3.Row | None:
    """The member row the body names, or None for the workspace grant."""
    workspace = v.boolean(body, "workspace", required=False, default=False)
    ref = v.string(body, "membershipId", required=False, max_len=320)
    if bool(workspace) == bool(ref):
        raise v.bad("Give exactly one of 'membershipId' or 'workspace': true.")
    if not ref:   # so `workspace` is true
        return None
    member = identity_store.find_member(conn, ref.strip().lower() if "@" in ref else ref)
    if member is None:
        raise ApiError("not_found", f"No member {ref[:120]}. Run `wsctl members list`.")
    return member


_GRANT_BODY = {
    "description": "Exactly one of membershipId (a member id or email) and workspace: true; role null removes "
                   "the grant. The owner cannot be granted.",
    "oneOf": [
        obj({"membershipId": text(1, 320), "workspace": {"const": False},
             "role": {"enum": ["editor", "viewer", None]}}, required=["membershipId", "role"]),
        obj({"workspace": {"const": True}, "role": {"enum": ["editor", "viewer", None]}},
            required=["workspace", "role"]),
    ]}


@route("PUT", "/v1/projects/{id}/grants", scope="projects:manage",
       body=_GRANT_BODY,
       responses={200: ref("Project")},
       summary="Grant a member or the workspace editor or viewer on a project, or remove it.")
def put_grant(ctx: Ctx) -> dict:
    body = v.body_dict(ctx, allow_empty=False)
    if "role" not in body:
        raise v.bad("'role' is required: editor, viewer, or null to remove the grant.")
    role = body["role"]
    if role is not None and role not in ROLES:
        raise v.bad("'role' must be editor, viewer, or null to remove the grant.")
    with transaction(ctx.db):
        row = load(ctx)
        require_owner(row, "change who has access")
        member = _grant_target(ctx.db, body)
        member_id = member["id"] if member is not None else None
        if member is not None and member["role"] == "guest" and role == "editor":
            raise v.bad(f"{member['email']} is a guest, and guests are read-only: grant viewer, "
                        "or make them a member first.")
        if member_id == row["owner_member_id"]:
            raise v.bad("The owner always has full access; grant another member or the workspace.")
        store.set_grant(ctx.db, row["id"], member_id, role)
        return full_json(ctx.db, load(ctx))
