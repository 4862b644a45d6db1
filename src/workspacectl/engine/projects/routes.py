"""Projects (specialists): list, create, read, edit, replace memory, delete.

The caller's role comes from the nearest grant (store.ROLE_SQL): owner, else a member grant,
else the workspace grant, else no access (404). Grants are in projects/grants.py, pinning and
connections in projects/contents.py, files in projects/files.py.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.pagination import name_filter, page, page_args
from workspacectl.engine.projects import appearance
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.schema_blocks import INT, NAMED_PAGE, NOT_BLANK, STR, nullable, obj, page_of, ref, text
from workspacectl.engine.store import projects as store
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

ACCESSORIES = ("head", "shirt", "hand")
KINDS = ("workflow", "app")   # of a workflow record (engine/projects/workflows.py)
# A project's answer lists at most this many resources (id order): `counts` has the totals, and
# GET /v1/workflows?projectId= and GET /v1/skills?projectId= page through all of them.
MAX_RESOURCES = 500


def project_json(row: sqlite3.Row) -> dict:
    role = row["role"]
    org = {"role": row["org_role"]} if row["org_role"] else None
    return {
        "id": row["id"], "name": row["name"], "description": row["description"], "icon": row["icon"] or appearance.DEFAULT_ICON,
        "workerColor": row["worker_color"] or appearance.DEFAULT_COLOR, "workerAccessories": json.loads(row["worker_accessories"]),
        "role": role, "isOwner": role == "owner", "canEdit": role in ("owner", "editor"),
        "ownerMembershipId": row["owner_member_id"], "orgGrant": org, "isShared": row["grant_count"] > 0,
        "counts": {"workflows": row["n_workflows"], "apps": row["n_apps"], "skills": row["n_skills"],
                   "files": row["n_files"]},
        "createdAt": row["created_at"], "updatedAt": row["updated_at"],
    }


def grants_json(conn: Conn, pid: str) -> list[dict]:
    return [{"workspace": True, "role": g["role"]} if g["member_id"] is None
            else {"membershipId": g["member_id"], "displayName": g["name"], "role": g["role"]}
            for g in store.list_grants(conn, pid)]


def memory_json(conn: Conn, row: sqlite3.Row) -> dict:
    return {"text": row["memory_text"], "version": row["memory_version"], "updatedAt": row["memory_updated_at"],
            "updatedBy": store.member_brief(conn, row["memory_updated_by"])}


def resource_json(r: sqlite3.Row | Mapping[str, Any]) -> dict:
    return {"id": r["id"], "name": r["name"], "description": r["description"], "type": r["type"],
            "lastUsedAt": r["last_used_at"]}


def full_json(conn: Conn, row: sqlite3.Row) -> dict:
    project = project_json(row)
    project["grants"] = grants_json(conn, row["id"])
    return {"project": project, "memory": memory_json(conn, row),
            "resources": [resource_json(r) for r in store.list_resources(conn, row["id"], MAX_RESOURCES)]}


def _fields(body: dict, creating: bool) -> dict:
    out: dict[str, Any] = {}
    if creating or "name" in body:
        out["name"] = v.string(body, "name", max_len=200).strip()
        if not out["name"]:
            raise v.bad("'name' must not be blank.")
    if "description" in body:
        out["description"] = v.string(body, "description", required=False, min_len=0, max_len=2000)
    if "icon" in body:
        out["icon"] = appearance.icon(body)
    if "workerColor" in body:
        out["workerColor"] = appearance.worker_color(body)
    if "workerAccessories" in body:
        acc = body["workerAccessories"]
        if not isinstance(acc, dict) or set(acc) - set(ACCESSORIES) or any(
                x is not None and not isinstance(x, str) for x in acc.values()):
            raise v.bad("'workerAccessories' must be an object with keys head, shirt, hand (string or null).")
        out["workerAccessories"] = {k: acc.get(k) for k in ACCESSORIES}
    return out


def load(ctx: Ctx, pid: str | None = None) -> sqlite3.Row:
    """The project with the caller's role; 404 when the caller has no access at all."""
    pid = ctx.params["id"] if pid is None else pid
    row = store.get_project(ctx.db, pid, ctx.caller.member_id)
    if row is None:
        raise ApiError("not_found", f"No specialist '{pid[:120]}' that you can see. Run `wsctl specialist list`.")
    return row


def require_edit(row: sqlite3.Row) -> None:
    if row["role"] not in ("owner", "editor"):
        raise ApiError("forbidden", f"You can view specialist {row['id']} but not change it; "
                                    "ask its owner for edit access.")


def require_owner(row: sqlite3.Row, what: str) -> None:
    if row["role"] != "owner":
        raise ApiError("forbidden", f"Only the owner of specialist {row['id']} may {what}; ask them to do it.")


_PROJECT_FIELDS = {
    "name": text(1, 200, NOT_BLANK),
    "description": nullable(text(0, 2000)),
    "icon": nullable(text(1, 32, description="Exactly one emoji (one grapheme cluster); null: the default 🤖.")),
    "workerColor": nullable(text(1, 40, description="A colour name: letters, spaces, hyphens; null: the default blue.")),
    "workerAccessories": obj({k: nullable(STR) for k in ACCESSORIES},
                             description="Missing keys become null."),
}


@route("GET", "/v1/projects", scope="projects:manage",
       query=NAMED_PAGE,
       responses={200: page_of("projects", ref("ProjectSummary"))},
       summary="List the projects the caller can see.")
def list_projects(ctx: Ctx) -> dict:
    limit, after = page_args(ctx)
    rows = store.list_projects(ctx.db, ctx.caller.member_id, after, limit + 1, name_filter(ctx))
    return page("projects", rows, limit, lambda r: r["id"], project_json)


@route("POST", "/v1/projects", scope="projects:manage",
       body=obj(_PROJECT_FIELDS, required=["name"]),
       responses={201: ref("Project")},
       summary="Create a project.")
def create_project(ctx: Ctx) -> Response:
    if ctx.caller.role == "guest":
        raise ApiError("forbidden", "Guests cannot create specialists; ask a member to create one and share it with you.")
    values = _fields(v.body_dict(ctx, allow_empty=False), creating=True)
    with transaction(ctx.db):
        pid = store.insert_project(ctx.db, ctx.caller.member_id, values)
        row = store.get_project(ctx.db, pid, ctx.caller.member_id)
        out = full_json(ctx.db, row)
    return Response(201, out)


@route("GET", "/v1/projects/{id}", scope="projects:manage",
       responses={200: ref("Project")},
       summary="One project, with the caller's role and what it holds.")
def get_project(ctx: Ctx) -> dict:
    return full_json(ctx.db, load(ctx))


@route("PATCH", "/v1/projects/{id}", scope="projects:manage",
       body=obj(_PROJECT_FIELDS, description="Every field optional; {} changes "
                                             "nothing."),
       responses={200: ref("Project")},
       summary="Change a project's name, description, icon or worker look.")
def patch_project(ctx: Ctx) -> dict:
    values = _fields(v.body_dict(ctx, allow_empty=False), creating=False)
    with transaction(ctx.db):
        row = load(ctx)
        require_edit(row)
        if values:
            store.update_project(ctx.db, row["id"], values)
        return full_json(ctx.db, load(ctx))


MEMORY_MAX = 1_000_000


@route("PUT", "/v1/projects/{id}/memory", scope="projects:manage",
       body=obj({"text": text(0, MEMORY_MAX, description="The whole memory; may be empty."),
                 "version": {**INT, "description": "The current version; any other integer is 409 with "
                                                   "detail.currentVersion."}}, required="all"),
       responses={200: ref("ProjectMemory")},
       summary="Replace the project's memory text, given the current version.")
def put_memory(ctx: Ctx) -> dict:
    body = v.body_dict(ctx, allow_empty=False)
    text = v.string(body, "text", min_len=0, max_len=MEMORY_MAX)
    version = v.integer(body, "version")  # any integer: one that is not the current version is 409
    with transaction(ctx.db):
        row = load(ctx)
        require_edit(row)
        if not (0 <= version <= 2**62 and store.replace_memory(ctx.db, row["id"], text, version, ctx.caller.member_id)):
            current = row["memory_version"]
            raise ApiError("conflict", f"The memory is at version {current}, not {str(version)[:30]}; "
                                       "read it again and write with that version.",
                           {"version": current, "currentVersion": current})
        return memory_json(ctx.db, load(ctx))


@route("POST", "/v1/projects/{id}/delete", scope="projects:manage",
       responses={200: obj({
           "id": STR, "deleted": {"const": True}, "returnedResources": INT, "deletedFiles": INT}, required="all")},
       summary="Delete a project: files go, held resources return to their creators.")
def delete_project(ctx: Ctx) -> dict:
    from workspacectl.engine.store.project_files import file_shas

    with transaction(ctx.db):
        row = load(ctx)
        require_owner(row, "delete it")
        shas = file_shas(ctx.db, row["id"])
        counts = store.delete_project(ctx.db, row["id"])
    ctx.ws.blob_store.remove_unreferenced(shas)  # after the commit, as engine/blobs/__init__.py requires
    return {"id": row["id"], "deleted": True, **counts}
