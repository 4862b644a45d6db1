"""What a project holds: pinning a workflow, app or skill into it, and the credentials its
workflows are wired to.

`POST /v1/projects/pin {resourceId, projectId}` moves one resource (named by id or name); a resource lives in at most
one project (`projectId: null` returns it to its creator). It needs edit on the target and on
the project it leaves; a resource in no project may be moved by its creator or a workspace
owner or admin.
"""
from __future__ import annotations

import json
import sqlite3

from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.pagination import page, page_args
from workspacectl.engine.projects.routes import KINDS, load, require_edit, resource_json
from workspacectl.engine.registry import Ctx, route
from workspacectl.engine.schema_blocks import INT, PAGE, STR, array, nullable, obj, ref, text
from workspacectl.engine.store import projects as store
from workspacectl.engine.store import workflows as wf_store
from workspacectl.errors import ApiError


def _resource(ctx: Ctx, ref: str) -> tuple[sqlite3.Row, str] | None:
    """(row, type) of a workflow, app or skill by id, or None.

    Anything else is a name: of a live skill (unique) or of workflows and apps (not unique). Only
    what the caller can see counts, so a name never reveals a hidden resource; a name that fits
    several is refused, listing their ids to choose from."""
    conn = ctx.db
    if ref.startswith("wf_"):
        row = wf_store.get_workflow_home(conn, ref)
        return (row, row["kind"]) if row else None
    if ref.startswith("skl_"):
        row = store.get_skill_home(conn, ref)
        return (row, "skill") if row else None
    hits = [(r, "skill") for r in store.skill_homes_named(conn, ref)]
    hits += [(r, r["kind"]) for r in wf_store.workflow_homes_named(conn, ref)]
    hits = [(r, t) for r, t in hits if _sees(ctx, r, t)]
    if len(hits) > 1:
        listed = ", ".join(f"{r['id']} ({t})" for r, t in hits[:MAX_LISTED])
        more = f" and {len(hits) - MAX_LISTED} more" if len(hits) > MAX_LISTED else ""
        raise v.bad(f"'{ref[:120]}' names {len(hits)} things you can see: {listed}{more}. Give one of these ids.")
    return hits[0] if hits else None


MAX_LISTED = 10


def _sees(ctx: Ctx, row: sqlite3.Row, rtype: str) -> bool:
    """Whether the caller can see the resource at all (CONTRACT §3: unseen is 404, seen is 403).

    A workflow or app: its creator, those with a role on its project, and, while it is in no
    project, workspace owners and admins (who may pin it). A skill: as the skills routes decide
    (engine/skills/access.py): also every member when it is in no project.
    """
    me = ctx.caller.member_id
    if rtype == "skill":
        from workspacectl.engine.skills.access import access
        from workspacectl.engine.store import skills as skill_store

        return access(ctx.caller, skill_store.get_skill(ctx.db, row["id"], me)) is not None
    if row["created_by"] == me:
        return True
    if row["project_id"] is None:
        return ctx.caller.is_admin
    return store.get_project(ctx.db, row["project_id"], me) is not None


def _check_leaving(ctx: Ctx, row: sqlite3.Row, rtype: str) -> None:
    """The caller may take the resource out of where it is now: 404 when it cannot see it,
    403 when it can see it but may not move it."""
    me = ctx.caller.member_id
    if not _sees(ctx, row, rtype):
        raise ApiError("not_found", f"No workflow, app or skill '{row['id']}' that you can see.")
    if rtype == "skill" and row["status"] == "archived":
        raise ApiError("conflict", f"Skill {row['id']} is archived and read-only; it cannot be moved.")
    if row["project_id"] is None:
        if row["created_by"] != me and not ctx.caller.is_admin:
            raise ApiError("forbidden", f"{row['id']} belongs to another member; only its creator or a workspace "
                                        "owner or admin may move it into a specialist.")
        return
    source = store.get_project(ctx.db, row["project_id"], me)
    if source is None:
        raise ApiError("forbidden", f"{row['id']} is in specialist {row['project_id']}, where you have no edit "
                                    "access; ask its owner to move it.")
    require_edit(source)


@route("POST", "/v1/projects/pin", scope="projects:manage",
       body=obj({"resourceId": text(1, 200, description="A workflow or app (wf_…) or a skill (skl_…), or "
                                                        "its name; a name several fit is 400, listing them."),
                 "projectId": nullable(text(1, 200, description="null returns it to its creator."))},
                required="all"),
       responses={200: obj({"resource": ref("ProjectResource"), "projectId": nullable(STR),
                            "previousProjectId": nullable(STR)}, required="all")},
       summary="Move a workflow, app or skill into a project.")
def pin_resource(ctx: Ctx) -> dict:
    body = v.body_dict(ctx, allow_empty=False)
    rid = v.string(body, "resourceId", max_len=200)
    if "projectId" not in body:
        raise v.bad("'projectId' is required: the specialist to move it into, or null to return it to its creator.")
    target = v.string(body, "projectId", required=False, max_len=200)
    with transaction(ctx.db):
        found = _resource(ctx, rid)
        if found is None:
            raise ApiError("not_found", f"No workflow, app or skill '{rid[:120]}' that you can see. Give its id "
                                        "or name (`wsctl skill list`, `wsctl workflow list`).")
        row, rtype = found
        _check_leaving(ctx, row, rtype)
        if target is not None:
            require_edit(load(ctx, target))
        previous = row["project_id"]
        if target != previous:
            if rtype == "skill":
                store.move_skill(ctx.db, row["id"], target)
            else:
                wf_store.move_workflow(ctx.db, row["id"], target)
    entry = resource_json({**dict(row), "type": rtype})
    return {"resource": entry, "projectId": target, "previousProjectId": previous}


# Each connection lists at most this many of the workflows and apps using it (id order);
# usedByCount says how many there are (docs/api.md §1 "Bounded answers").
MAX_USED_BY = 100


@route("GET", "/v1/projects/{id}/connections", scope="projects:manage",
       query=PAGE,
       responses={200: obj({
           "connections": array(obj({
           "id": STR, "service": nullable(STR), "name": nullable(STR), "credentialType": nullable(text(enum=["oauth2", "apiKey", "platform", "noAuth"])),
           "status": text(enum=["ok", "needs_reconnect", "invalid", "missing"],
           description="missing: the credential was deleted (service, name, type null)."),
           "usedBy": array(obj({"id": STR, "name": STR, "type": text(enum=list(KINDS)), "nodeIds": array(STR)},
           required="all"), description="At most 100, in id order."),
           "usedByCount": INT}, required="all")),
           "nextCursor": nullable(STR)}, required="all")},
       summary="The credentials the project's workflows are wired to.")
def project_connections(ctx: Ctx) -> dict:
    """The credentials the project's workflow nodes name, paged by credential id."""
    row = load(ctx)
    limit, after = page_args(ctx)
    used: dict[str, dict[str, dict]] = {}
    for wf in wf_store.project_workflow_nodes(ctx.db, row["id"]):
        for node in json.loads(wf["nodes"]):
            cred_id = node.get("credentialId") if isinstance(node, dict) else None
            if not isinstance(cred_id, str) or (after is not None and cred_id <= after):
                continue
            users = used.setdefault(cred_id, {})
            entry = users.setdefault(wf["id"], {"id": wf["id"], "name": wf["name"], "type": wf["kind"], "nodeIds": []})
            entry["nodeIds"].append(node.get("id"))
    ids = sorted(used)[:limit + 1]
    creds = wf_store.credential_briefs(ctx.db, ids)
    out = []
    for cred_id in ids:
        c = creds.get(cred_id)
        using = sorted(used[cred_id].values(), key=lambda u: u["id"])
        out.append({"id": cred_id, "service": c["service"] if c else None, "name": c["name"] if c else None,
                    "credentialType": c["credential_type"] if c else None, "status": c["status"] if c else "missing",
                    "usedBy": using[:MAX_USED_BY], "usedByCount": len(using)})
    return page("connections", out, limit, lambda c: c["id"], lambda c: c)
