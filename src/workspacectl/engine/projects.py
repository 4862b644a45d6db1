"""Projects (specialists): list, create, read and edit, with the role of the nearest grant.

Grants, memory writes, pinning, files and delete follow in the projects issue.
"""
from __future__ import annotations

import json

from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.pagination import page, page_args
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.store import projects as store
from workspacectl.errors import ApiError

ACCESSORIES = ("head", "shirt", "hand")


def project_json(row) -> dict:
    role = row["role"]
    org = {"role": row["org_role"]} if row["org_role"] else None
    return {
        "id": row["id"], "name": row["name"], "description": row["description"], "icon": row["icon"],
        "workerColor": row["worker_color"], "workerAccessories": json.loads(row["worker_accessories"]),
        "role": role, "isOwner": role == "owner", "canEdit": role in ("owner", "editor"),
        "ownerMembershipId": row["owner_member_id"], "orgGrant": org, "isShared": row["grant_count"] > 0,
        "counts": {"workflows": 0, "apps": 0, "skills": 0, "files": 0},
        "createdAt": row["created_at"], "updatedAt": row["updated_at"],
    }


def full_json(conn, row) -> dict:
    return {
        "project": project_json(row),
        "memory": {"text": row["memory_text"], "version": row["memory_version"],
                   "updatedAt": row["memory_updated_at"], "updatedBy": store.member_brief(conn, row["memory_updated_by"])},
        "resources": [],
    }


def _fields(body: dict, creating: bool) -> dict:
    out = {}
    if creating or "name" in body:
        out["name"] = v.string(body, "name", max_len=200).strip()
        if not out["name"]:
            raise v.bad("'name' must not be blank.")
    for key, limit in (("description", 2000), ("icon", 16), ("workerColor", 40)):
        if key in body:
            out[key] = v.string(body, key, required=False, min_len=0, max_len=limit)
    if "workerAccessories" in body:
        acc = body["workerAccessories"]
        if not isinstance(acc, dict) or set(acc) - set(ACCESSORIES) or any(
                x is not None and not isinstance(x, str) for x in acc.values()):
            raise v.bad("'workerAccessories' must be an object with keys head, shirt, hand (string or null).")
        out["workerAccessories"] = {k: acc.get(k) for k in ACCESSORIES}
    return out


def load(ctx: Ctx):
    row = store.get_project(ctx.db, ctx.params["id"], ctx.caller.member_id)
    if row is None:
        raise ApiError("not_found", f"No specialist '{ctx.params['id']}'. Run `wsctl specialist list`.")
    return row


@route("GET", "/v1/projects")
def list_projects(ctx: Ctx) -> dict:
    limit, after = page_args(ctx)
    rows = store.list_projects(ctx.db, ctx.caller.member_id, after, limit + 1)
    return page("projects", rows, limit, lambda r: r["id"], project_json)


@route("POST", "/v1/projects")
def create_project(ctx: Ctx) -> Response:
    if ctx.caller.role == "guest":
        raise ApiError("forbidden", "Guests cannot create specialists.")
    values = _fields(v.body_dict(ctx, allow_empty=False), creating=True)
    with transaction(ctx.db):
        pid = store.insert_project(ctx.db, ctx.caller.member_id, values)
        row = store.get_project(ctx.db, pid, ctx.caller.member_id)
        out = full_json(ctx.db, row)
    return Response(201, out)


@route("GET", "/v1/projects/{id}")
def get_project(ctx: Ctx) -> dict:
    return full_json(ctx.db, load(ctx))


@route("PATCH", "/v1/projects/{id}")
def patch_project(ctx: Ctx) -> dict:
    values = _fields(v.body_dict(ctx, allow_empty=False), creating=False)
    with transaction(ctx.db):
        row = load(ctx)
        if row["role"] not in ("owner", "editor"):
            raise ApiError("forbidden", "You can view this specialist but not change it; ask its owner for edit access.")
        if values:
            store.update_project(ctx.db, row["id"], values)
        return full_json(ctx.db, load(ctx))
