"""Skill versions: publishing a set of files as the next version, the history, revert.

Every publish runs inside one BEGIN IMMEDIATE transaction: the live version is re-read under
the write lock, a `baseVersion` that is not it is 409, and the new number is one more than the
highest ever published, so numbers strictly increase and no published version is lost.
"""
from __future__ import annotations

import json
import sqlite3
from itertools import chain
from typing import TYPE_CHECKING

from workspacectl.engine import validate as v
from workspacectl.engine.blobs import blob_lock
from workspacectl.engine.blobs.staging import FileRef
from workspacectl.engine.db import transaction
from workspacectl.engine.events.record import record_event
from workspacectl.engine.pagination import page, page_args
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.schema_blocks import PAGE, nullable, obj, page_of, ref
from workspacectl.engine.skills import contents
from workspacectl.engine.skills.records import load_skill, reload, skill_json
from workspacectl.engine.store import skills as store
from workspacectl.errors import ApiError
from workspacectl.formats import skill_bundle as fmt

if TYPE_CHECKING:
    from workspacectl.engine.blobs import Stage, Staged
    from workspacectl.engine.workspaces.folder import Workspace


def version_json(row: sqlite3.Row) -> dict:
    return {"id": row["id"], "skillId": row["skill_id"], "number": row["number"], "publishedAt": row["published_at"],
            "publishedBy": row["published_by"], "source": row["source"], "sha256": row["sha256"]}


def manifest_of(vrow: sqlite3.Row) -> list[dict]:
    return json.loads(vrow["manifest"])


def version_refs(vrow: sqlite3.Row) -> dict[str, FileRef]:
    """A version's files by path; contents stay in the blob store (read them with contents.open_ref)."""
    return {f["path"]: FileRef(f["sha256"], f["size"], f.get("executable", False)) for f in manifest_of(vrow)}


def live_version(ctx: Ctx, row: sqlite3.Row) -> sqlite3.Row | None:
    if row["version"] == 0:
        return None
    return store.get_version_by_number(ctx.db, row["id"], row["version"])


def live_refs(ctx: Ctx, row: sqlite3.Row) -> dict[str, FileRef]:
    vrow = live_version(ctx, row)
    return version_refs(vrow) if vrow is not None else {}


def invalid_bundle(errors: list, warnings: list) -> ApiError:
    first = errors[0]
    where = f"{first['path']}: " if first["path"] else ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return ApiError("unprocessable", f"The bundle is not valid: {where}{first['message']}{more}",
                    detail={"errors": errors, "warnings": warnings})


def check_base(row: sqlite3.Row, base_version: int | None) -> None:
    if base_version is not None and base_version != row["version"]:
        raise ApiError("conflict", f"Skill '{row['name']}' is at version {row['version']}, not {base_version}; "
                                   "fetch it again and retry.", detail={"currentVersion": row["version"]})


def check_refs(ws: Workspace, files: dict[str, FileRef], staged: dict[str, Staged], skill_name: str,
               top: str | None = None) -> tuple[list[dict], list[dict], dict | None]:
    """(errors, warnings, frontmatter) of a bundle whose contents are blobs, staged or stored.
    SKILL.md is read as a stream: its frontmatter is capped before any YAML is parsed."""
    md = None
    if (ref := files.get(fmt.SKILL_MD)) is not None:
        with contents.open_ref(ws, staged, ref.sha256) as fh:
            md = fmt.read_md(iter(lambda: fh.read(contents.CHUNK), b""))
    return fmt.validate_bundle(files, md, skill_name=skill_name, folder=top)


def files_digest(ws: Workspace, files: dict[str, FileRef], staged: dict) -> str:
    return fmt.digest(fmt.canonical_entries(files, lambda p: contents.open_ref(ws, staged, files[p].sha256)))


def skill_lock(skill_id: str) -> str:
    """The resource a new version of a skill locks (its version sequence: db.transaction's locks)."""
    return f"skill:{skill_id}"


def publish_refs(ctx: Ctx, row: sqlite3.Row, files: dict[str, FileRef], staged: dict[str, Staged], source: str,
                 base_version: int | None, upload_id: str | None = None) -> sqlite3.Row:
    """Validate and publish `files` as the skill's next version; answers the version row. Contents
    are staged blobs (`staged`, published in the version's transaction) or stored ones.
    upload_id: the staged upload they came from, marked used in the same transaction."""
    errors, warnings, meta = check_refs(ctx.ws, files, staged, row["name"])
    if errors:
        raise invalid_bundle(errors, warnings)
    assert meta is not None   # validate_bundle answers the frontmatter whenever it found no error
    contents.require_stored(ctx.ws, [f.sha256 for f in files.values() if f.sha256 not in staged])
    manifest = [{"path": p, "size": f.size, "sha256": f.sha256, "executable": f.executable}
                for p, f in sorted(files.items())]
    sha = files_digest(ctx.ws, files, staged)   # the canonical tar, streamed before taking the write lock
    # The skill's version sequence alone, and every blob the version names (engine/blobs blob_lock:
    # none is deleted meanwhile; a stored one is checked again under its lock).
    stored = [f.sha256 for f in files.values() if f.sha256 not in staged]
    with transaction(ctx.db, locks=[skill_lock(row["id"]), *map(blob_lock, stored), *map(blob_lock, staged)]):
        if getattr(ctx.db, "dialect", "sqlite") != "sqlite":   # on SQLite no writer ran since the check
            contents.require_stored(ctx.ws, stored)
        row = reload(ctx, row["id"])   # the live version as of the write lock
        if row["status"] == "archived":
            raise ApiError("conflict", f"Skill '{row['name']}' is archived; create a new skill instead.")
        check_base(row, base_version)
        if upload_id is not None and not store.mark_used(ctx.db, upload_id):
            raise ApiError("conflict", "This upload was already published; upload the bundle again.")
        contents.publish_all(ctx.ws, staged)
        number = store.next_number(ctx.db, row["id"])
        vid = store.insert_version(ctx.db, row["id"], number, ctx.caller.member_id, source, sha, manifest)
        store.update_skill(ctx.db, row["id"], {"version": number, "status": "published",
                                               "description": meta["description"]})
        record_event(ctx.db, "skill.published", subject_id=row["id"], actor_id=ctx.caller.member_id,
                     data={"skill": row["name"], "version": number, "source": source})
        version = store.get_version(ctx.db, vid)
        assert version is not None   # just inserted
        return version


def with_frontmatter(ws: Workspace, stage: Stage, files: dict[str, FileRef], updates: dict) -> tuple[dict[str, FileRef], dict]:
    """(files, staged): SKILL.md's frontmatter fields replaced in a new staged blob, the body
    streamed from the stored one; unchanged when SKILL.md has no frontmatter to change."""
    ref = files.get(fmt.SKILL_MD)
    if ref is None:
        return files, {}
    with contents.open_ref(ws, {}, ref.sha256) as fh:
        new_head = fmt.set_frontmatter_head(fh.read(fmt.MAX_FRONTMATTER + 1024), updates)
        if new_head is None:
            return files, {}
        st = stage.put(chain([new_head], iter(lambda: fh.read(contents.CHUNK), b"")))
    return {**files, fmt.SKILL_MD: FileRef(st.sha256, st.size, ref.executable)}, {st.sha256: st}


def published_answer(ctx: Ctx, vrow: sqlite3.Row, status: int = 200) -> Response:
    body = {**version_json(vrow), "skill": skill_json(reload(ctx, vrow["skill_id"]), ctx.caller)}
    return Response(status, body)


def base_version_of(body: dict) -> int | None:
    return v.integer(body, "baseVersion", required=False, minimum=0, maximum=2**53)


BASE_VERSION = {"type": "integer", "minimum": 0, "maximum": 2**53,
                "description": "The live version the change is based on; another is 409 with detail.currentVersion."}


@route("GET", "/v1/skills/{id}/versions", scope="skills:manage",
       query=PAGE,
       responses={200: page_of("versions", ref("SkillVersion"))},
       summary="Every published version, newest first.")
def list_versions(ctx: Ctx) -> dict:
    row = load_skill(ctx)
    limit, before = page_args(ctx, int)
    rows = store.list_versions(ctx.db, row["id"], before, limit + 1)
    return page("versions", rows, limit, lambda r: r["number"], version_json)


@route("POST", "/v1/skills/{id}/versions/{versionId}/revert", scope="skills:manage",
       body=obj({"baseVersion": nullable(BASE_VERSION)}),
       body_required=False,
       responses={201: ref("SkillPublished")},
       summary="Publish an earlier version's content as a new version.")
def revert(ctx: Ctx) -> Response:
    body = v.body_dict(ctx)
    base = base_version_of(body)
    row = load_skill(ctx, edit=True)
    vrow = store.get_version(ctx.db, ctx.params["versionId"])
    if vrow is None or vrow["skill_id"] != row["id"]:
        raise ApiError("not_found", f"Skill '{row['name']}' has no version '{ctx.params['versionId'][:60]}'. "
                                    f"Run `wsctl skill versions {row['name']}`.")
    with contents.staging(ctx.ws) as stage:
        # the skill may have been renamed since: the old content takes today's name
        files, staged = with_frontmatter(ctx.ws, stage, version_refs(vrow), {"name": row["name"]})
        return published_answer(ctx, publish_refs(ctx, row, files, staged, "revert", base), 201)
