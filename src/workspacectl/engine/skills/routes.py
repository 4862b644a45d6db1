"""Skills (CONTRACT §8): the record, its lifecycle and who may see or change it.

Access (docs/api.md "Skills"): a skill outside any project is seen by every member; one held by
a project is seen by those with a role on that project (grants flow down), by its creator and by
owners and admins. Its creator, owners and admins, and editors and owners of the holding
project may change it; everyone else reads. Guests only read. Archived skills are read-only and
leave the default list; their name is free again.
"""
from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.pagination import page, page_args
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.schema_blocks import BOOL, INT, NOT_BLANK, PAGE, STR, array, obj, page_of, query, ref, text
from workspacectl.engine.skills.access import access
from workspacectl.engine.skills.records import load_skill, reload, require_edit, skill_json
from workspacectl.engine.store import projects as project_store
from workspacectl.engine.store import skills as store
from workspacectl.errors import ApiError
from workspacectl.formats import skill_bundle as fmt

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

STATUSES = ("draft", "published", "archived")


def checked_name(body: dict) -> str:
    name = v.string(body, "name", max_len=64)
    if (why := fmt.name_problem(name)) is not None:
        raise v.bad(f"{why} Example: 'pdf-forms'.")
    return name


def checked_description(body: dict) -> str:
    desc = v.string(body, "description", max_len=1024)
    if not desc.strip():
        raise v.bad("'description' must not be blank.")
    return desc


def name_taken(name: str) -> ApiError:
    return ApiError("conflict", f"A skill named '{name}' already exists; pick another name or archive that one.")


_NAME = text(1, 64, r"^[a-z0-9]+(-[a-z0-9]+)*$",
             description="Agent Skills name: lowercase letters, digits and single hyphens; unique among skills "
                         "that are not archived.")
_DESCRIPTION = text(1, 1024, NOT_BLANK)


@route("GET", "/v1/skills", scope="skills:manage",
       query=[query("status", text(enum=[*STATUSES, "all"]), "Default: draft and published."),
              query("projectId", STR, "Only those in this specialist (404 when you cannot see it)."), *PAGE],
       responses={200: page_of("skills", ref("Skill"))},
       summary="List the skills the caller can see.")
def list_skills(ctx: Ctx) -> dict:
    limit, after = page_args(ctx)
    wanted = ctx.query.get("status") or ""
    if wanted and wanted not in (*STATUSES, "all"):
        raise v.bad("Query parameter 'status' must be draft, published, archived or all.")
    statuses = {"": ("draft", "published"), "all": STATUSES}.get(wanted, (wanted,))
    pid = ctx.query.get("projectId") or None
    if pid is not None and project_store.get_project(ctx.db, pid, ctx.caller.member_id) is None:
        raise ApiError("not_found", f"No specialist '{pid[:120]}' that you can see. Run `wsctl specialist list`.")
    rows = store.list_skills(ctx.db, ctx.caller.member_id, ctx.caller.is_admin, statuses, after, limit + 1, pid)
    return page("skills", rows, limit, lambda r: r["id"], lambda r: skill_json(r, ctx.caller))


@route("POST", "/v1/skills", scope="skills:manage",
       body=obj({"name": _NAME, "description": _DESCRIPTION}, required="all"),
       responses={201: ref("Skill")},
       summary="Create a draft skill.")
def create_skill(ctx: Ctx) -> Response:
    if ctx.caller.role == "guest":
        raise ApiError("forbidden", "Guests cannot create skills; ask a member to create it.")
    body = v.body_dict(ctx, allow_empty=False)
    name, desc = checked_name(body), checked_description(body)
    with transaction(ctx.db):
        sid = store.insert_skill(ctx.db, name, desc, ctx.caller.member_id)
        if sid is None:
            raise name_taken(name)
        return Response(201, skill_json(reload(ctx, sid), ctx.caller))


@route("GET", "/v1/skills/{id}", scope="skills:manage",
       responses={200: ref("Skill")},
       summary="One skill's record.")
def get_skill(ctx: Ctx) -> dict:
    return skill_json(load_skill(ctx), ctx.caller)


@route("PATCH", "/v1/skills/{id}", scope="skills:manage",
       body=obj({"name": _NAME, "description": _DESCRIPTION},
                description="On a published skill SKILL.md's frontmatter follows, as a new inline version."),
       responses={200: ref("Skill")})
def patch_skill(ctx: Ctx) -> dict:
    """Rename or describe. On a published skill SKILL.md's frontmatter follows, as a new version."""
    # imported here so that the other skill routes (`skill list`) load no more than this module
    from workspacectl.engine.skills import contents
    from workspacectl.engine.skills.versions import live_refs, publish_refs, with_frontmatter

    body = v.body_dict(ctx, allow_empty=False)
    changes = {}
    if "name" in body:
        changes["name"] = checked_name(body)
    if "description" in body:
        changes["description"] = checked_description(body)
    with transaction(ctx.db):
        row = load_skill(ctx, edit=True)
        changes = {k: val for k, val in changes.items() if val != row[k]}
        if not changes:
            return skill_json(row, ctx.caller)
        if not store.update_skill(ctx.db, row["id"], changes):
            raise name_taken(changes["name"])
        if row["version"] > 0:
            with contents.staging(ctx.ws) as stage:
                files, staged = with_frontmatter(ctx.ws, stage, live_refs(ctx, row), changes)
                publish_refs(ctx, reload(ctx, row["id"]), files, staged, "inline", None)
        return skill_json(reload(ctx, row["id"]), ctx.caller)


@route("DELETE", "/v1/skills/{id}", scope="skills:manage",
       responses={200: {**ref("Skill"), "description": "The archived skill."}},
       summary="Archive a skill.")
def archive_skill(ctx: Ctx) -> dict:
    with transaction(ctx.db):
        row = load_skill(ctx)
        if row["status"] != "archived":
            require_edit(ctx, row)
            store.update_skill(ctx.db, row["id"], {"status": "archived", "enabled": 0})
        elif access(ctx.caller, row) != "edit":
            raise ApiError("forbidden", f"You can read skill '{row['name']}' but not change it; ask its "
                                        "creator or an editor of its specialist.")
        return skill_json(reload(ctx, row["id"]), ctx.caller)


@route("PATCH", "/v1/skills/{id}/enabled", scope="skills:manage",
       body=obj({"enabled": BOOL}, required="all"),
       responses={200: ref("Skill")},
       summary="Enable or disable a skill.")
def set_enabled(ctx: Ctx) -> dict:
    enabled = v.boolean(v.body_dict(ctx, allow_empty=False), "enabled")
    with transaction(ctx.db):
        row = load_skill(ctx, edit=True)
        if bool(row["enabled"]) != enabled:
            store.update_skill(ctx.db, row["id"], {"enabled": int(enabled)})
        return skill_json(reload(ctx, row["id"]), ctx.caller)


# ------------------------------------------------------------------ platform skills

def platform_root() -> Traversable:
    return resources.files("workspacectl") / "platform_skills"


def platform_names() -> list[str]:
    return sorted(p.name for p in platform_root().iterdir() if p.is_dir() and fmt.name_problem(p.name) is None)


@route("GET", "/v1/skills/platform/{name}", scope="skills:manage",
       responses={200: obj({
           "name": STR, "files": array(obj({"path": STR, "size": INT, "content": STR}, required="all"),
           description="SKILL.md first.")}, required="all")},
       summary="One platform skill shipped with the server, with its files.")
def get_platform_skill(ctx: Ctx) -> dict:
    name = ctx.params["name"]
    if name not in platform_names():
        raise ApiError("not_found", f"No platform skill '{name[:64]}'. Platform skills: {', '.join(platform_names())}.")
    folder = platform_root() / name
    out = []

    def walk(node: Traversable, prefix: str) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name in fmt.SKIPPED_NAMES:
                continue
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            else:
                data = child.read_bytes()
                out.append({"path": prefix + child.name, "size": len(data),
                            "content": data.decode("utf-8", errors="replace")})

    walk(folder, "")
    return {"name": name, "files": sorted(out, key=lambda f: (f["path"] != fmt.SKILL_MD, f["path"]))}
