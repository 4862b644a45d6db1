"""A skill's files: read the live bundle, save one file inline, and the staged bundle flow
(presigned upload -> validate -> publish), plus presigned downloads of the live bundle."""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import quote

from workspacectl.engine import validate as v
from workspacectl.engine.blobs.staging import FileRef, stage_archive
from workspacectl.engine.db import transaction
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.schema_blocks import BOOL, INT, STR, TIME, array, nullable, obj, query, ref, text
from workspacectl.engine.skills import contents, transfers
from workspacectl.engine.skills.records import load_skill
from workspacectl.engine.skills.versions import (
    BASE_VERSION,
    base_version_of,
    check_refs,
    invalid_bundle,
    live_refs,
    live_version,
    manifest_of,
    publish_refs,
    published_answer,
    version_refs,
)
from workspacectl.engine.store import skills as store
from workspacectl.errors import ApiError
from workspacectl.formats import skill_bundle as fmt
from workspacectl.formats.tar_stream import ArchiveError

if TYPE_CHECKING:
    from workspacectl.engine.blobs import Stage
    from workspacectl.engine.workspaces.folder import Workspace

MAX_INLINE_CONTENT = 8 * 1024 * 1024
MAX_SHOWN_CONTENT = 1024 * 1024       # a text file larger than this is never inlined
# What GET …/files inlines in all (as JSON text): a bundle of text files up to its unpacked limit
# (200 MiB) would otherwise answer ~200 MiB in one body, more with JSON escapes. 4 MiB holds every real skill whole (SKILL.md is a few KiB);
# past it, files are listed with their size and `fileUrl`. docs/api.md §9 "Bounded answers".
MAX_INLINED_TOTAL = 4 * 1024 * 1024


def _text(ws: Workspace, ref: FileRef) -> str | None:
    """A file's text when it is UTF-8 of at most MAX_SHOWN_CONTENT bytes (only those are read)."""
    if ref.size > MAX_SHOWN_CONTENT:
        return None
    with contents.open_ref(ws, {}, ref.sha256) as fh:
        data = fh.read(MAX_SHOWN_CONTENT + 1)
    if len(data) > MAX_SHOWN_CONTENT or b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _mark_used(ctx: Ctx, row: sqlite3.Row) -> None:
    with transaction(ctx.db):
        store.touch_used(ctx.db, row["id"])


def _live_or_404(ctx: Ctx, row: sqlite3.Row) -> sqlite3.Row:
    vrow = live_version(ctx, row)
    if vrow is None:
        raise ApiError("not_found", f"Skill '{row['name']}' has no published version yet; "
                                    f"publish one with `wsctl skill publish DIR` or `wsctl skill put`.")
    return vrow


def _inline_order(paths: Iterable[str]) -> list[str]:
    """SKILL.md first (an agent reads it first; the MCP door's resource is it), then by path."""
    return sorted(paths, key=lambda p: (p != "SKILL.md", p))


def _json_size(text: str) -> int:
    """Bytes `text` takes in the answer: JSON escapes (a control character is six) counted."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8"))


_UPLOAD_ID = text(1, description="From bundle-upload-url; the archive must have been PUT to its url.")
_FILES = obj({"skillId": STR, "version": INT, "files": array(obj({
    "path": STR, "size": INT, "sha256": text(64, 64), "executable": BOOL,
    "content": nullable(text(description=f"The text of a UTF-8 file up to {MAX_SHOWN_CONTENT} bytes while the "
                                         f"answer's inlined text stays within {MAX_INLINED_TOTAL} bytes; else null.")),
    "contentOmitted": nullable(text(enum=["large", "binary", "budget"],
                                    description="Why content is null: over 1 MiB, not UTF-8 text, or past the "
                                                "answer's inline limit.")),
    "fileUrl": text(description="When content is null: the route (GET, with your key) answering a presigned "
                                "download of the file.")},
    required=["path", "size", "sha256", "executable", "content", "contentOmitted"])),
    "inlinedBytes": INT, "inlineLimit": INT}, required="all")


@route("GET", "/v1/skills/{id}/files", scope="skills:manage",
       responses={200: _FILES})
def list_files(ctx: Ctx) -> dict:
    """The live version's files, each with `content`: its text when it is UTF-8 of at most 1 MiB
    and the answer's inlined text stays within MAX_INLINED_TOTAL, else null with `contentOmitted`
    (why) and `fileUrl` (the route answering a presigned download of it). Bounded: at most
    fmt.MAX_FILES entries and MAX_INLINED_TOTAL bytes of content, whatever the bundle holds."""
    row = load_skill(ctx)
    vrow = live_version(ctx, row)
    files = version_refs(vrow) if vrow is not None else {}
    contents: dict[str, str] = {}
    omitted: dict[str, str] = {}
    budget = MAX_INLINED_TOTAL
    for p in _inline_order(files):
        ref = files[p]
        if ref.size > MAX_SHOWN_CONTENT:
            omitted[p] = "large"
        elif ref.size > budget:   # the raw size already passes what is left: not even read
            omitted[p] = "budget"
        elif (text := _text(ctx.ws, ref)) is None:
            omitted[p] = "binary"
        elif (cost := _json_size(text)) > budget:
            omitted[p] = "budget"
        else:
            contents[p] = text
            budget -= cost
    base = f"/v1/skills/{quote(row['id'], safe='')}/file-url?path="
    out = []
    for p, f in sorted(files.items()):
        entry = {"path": p, "size": f.size, "sha256": f.sha256, "executable": f.executable,
                 "content": contents.get(p), "contentOmitted": omitted.get(p)}
        if p in omitted:
            entry["fileUrl"] = base + quote(p, safe="")
        out.append(entry)
    if files:
        _mark_used(ctx, row)
    return {"skillId": row["id"], "version": row["version"], "files": out,
            "inlinedBytes": MAX_INLINED_TOTAL - budget, "inlineLimit": MAX_INLINED_TOTAL}


@route("PUT", "/v1/skills/{id}/files", scope="skills:manage",
       body=obj({"path": text(1, 1024, description="A relative path inside the bundle."),
                 "content": text(0, MAX_INLINE_CONTENT, description="UTF-8 text."),
                 "baseVersion": nullable(BASE_VERSION)}, required=["path", "content"]),
       responses={200: ref("SkillPublished")},
       summary="Save one text file and publish the result as a new version.")
def put_file(ctx: Ctx) -> Response:
    body = v.body_dict(ctx, allow_empty=False)
    path = v.string(body, "path", max_len=1024)
    if (why := fmt.path_problem(path)) is not None:
        raise v.bad(f"'path' {path[:100]!r}: {why}")
    content = v.string(body, "content", min_len=0, max_len=MAX_INLINE_CONTENT)
    base = base_version_of(body)
    with contents.staging(ctx.ws) as stage:
        st = stage.put_bytes(content.encode("utf-8"))
        with transaction(ctx.db):    # read the live files and publish under one write lock
            row = load_skill(ctx, edit=True)
            files = live_refs(ctx, row)
            old = files.get(path)
            files[path] = FileRef(st.sha256, st.size, old.executable if old else False)
            return published_answer(ctx, publish_refs(ctx, row, files, {st.sha256: st}, "inline", base))


@route("GET", "/v1/skills/{id}/bundle-url", scope="skills:manage",
       responses={200: ref("PresignedUrl")},
       summary="A presigned URL to download the live version's bundle.")
def bundle_url(ctx: Ctx) -> dict:
    row = load_skill(ctx)
    vrow = _live_or_404(ctx, row)
    out = transfers.download_url(ctx, vrow, "", f"{row['name']}-v{vrow['number']}.tar.gz")
    _mark_used(ctx, row)
    return out


@route("GET", "/v1/skills/{id}/file-url", scope="skills:manage",
       query=[query("path", text(1), "A file of the live version, e.g. SKILL.md.", required=True)],
       responses={200: ref("PresignedUrl")},
       summary="A presigned URL to download one file of the live version.")
def file_url(ctx: Ctx) -> dict:
    row = load_skill(ctx)
    path = ctx.query.get("path") or ""
    if not path:
        raise v.bad("Query parameter 'path' is required, e.g. ?path=SKILL.md.")
    vrow = _live_or_404(ctx, row)
    if path not in {f["path"] for f in manifest_of(vrow)}:
        raise ApiError("not_found", f"Version {vrow['number']} of skill '{row['name']}' has no file "
                                    f"'{path[:200]}'. Run `wsctl skill files {row['name']}`.")
    out = transfers.download_url(ctx, vrow, path, path.rsplit("/", 1)[-1])
    _mark_used(ctx, row)
    return out


@route("POST", "/v1/skills/{id}/bundle-upload-url", scope="skills:manage",
       responses={201: obj({
           "uploadId": STR, "url": text(description="Takes one PUT of the tar.gz, without an API key."),
           "expiresAt": TIME}, required="all")},
       summary="A presigned URL (15 minutes) to upload one bundle for validate or publish.")
def bundle_upload_url(ctx: Ctx) -> Response:
    row = load_skill(ctx, edit=True)
    return Response(201, transfers.new_upload(ctx, row))


def _read_staged(ctx: Ctx, row: sqlite3.Row, stage: Stage) -> tuple[dict, dict, list, list, dict]:
    """(files, staged, errors, warnings, body) of the upload named in the body: the archive read
    by the one reader as a stream, its files staged in `stage`."""
    body = v.body_dict(ctx, allow_empty=False)
    sha = transfers.staged_upload(ctx, row, body.get("uploadId"))
    try:
        with contents.open_ref(ctx.ws, {}, sha) as fh:
            files, staged = stage_archive(fh, stage, fmt.LIMITS)
    except ArchiveError as e:
        return {}, {}, fmt.archive_problems(e), [], body
    files, top = fmt.strip_top_folder(files)
    errors, warnings, _meta = check_refs(ctx.ws, files, staged, row["name"], top)
    return files, staged, errors, warnings, body


@route("POST", "/v1/skills/{id}/validate", scope="skills:manage",
       body=obj({"uploadId": _UPLOAD_ID}, required="all"),
       responses={200: obj({"valid": BOOL, "errors": array(ref("SkillProblem")),
                            "warnings": array(ref("SkillProblem"))}, required="all",
                           description="200 even when invalid.")},
       summary="Check an uploaded bundle without publishing it.")
def validate_upload(ctx: Ctx) -> dict:
    row = load_skill(ctx, edit=True)
    with contents.staging(ctx.ws) as stage:
        _files, _staged, errors, warnings, _body = _read_staged(ctx, row, stage)
    return {"valid": not errors, "errors": errors, "warnings": warnings}


@route("POST", "/v1/skills/{id}/publish", scope="skills:manage",
       body=obj({"uploadId": _UPLOAD_ID, "baseVersion": nullable(BASE_VERSION)}, required=["uploadId"]),
       responses={201: ref("SkillPublished")},
       summary="Publish an uploaded bundle as the new live version.")
def publish_upload(ctx: Ctx) -> Response:
    row = load_skill(ctx, edit=True)
    with contents.staging(ctx.ws) as stage:
        files, staged, errors, warnings, body = _read_staged(ctx, row, stage)
        base = base_version_of(body)
        if errors:
            raise invalid_bundle(errors, warnings)
        vrow = publish_refs(ctx, row, files, staged, "bundle", base, upload_id=body["uploadId"])
    return published_answer(ctx, vrow, 201)
