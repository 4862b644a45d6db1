"""Memory (CONTRACT §7): read a guide and its pending notes, list and download its reference
files, queue proposals. There is no direct write: the memory agent (memory/agent.py) folds
proposals in.

Owners: `organization` (the workspace: any member reads; owner, admin and member propose) and
`membership` (the member the caller acts as: only that member reads and proposes).
"""
from __future__ import annotations

import re
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO

from workspacectl import clock
from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.memory import memory_lock
from workspacectl.engine.pagination import page, page_args
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.schema_blocks import INT, NOT_BLANK, PAGE, STR, TIME, array, nullable, obj, query, text
from workspacectl.engine.store import memory as store
from workspacectl.errors import ApiError

OWNER_TYPES = ("organization", "membership")
MAX_TEXT = 20000
MAX_SECTION = 200
MAX_PATH = 500
MAX_SEGMENT = 255
MAX_FILE_BYTES = 1024 * 1024
MAX_PENDING = 1000
PROPOSAL_KEYS = ("text", "section", "file")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CHUNK = 64 * 1024


def owner_of(ctx: Ctx) -> tuple[str, str | None]:
    """(ownerType, member id or None) named by the path; unknown owner types are 404."""
    owner_type = ctx.params["ownerType"]
    if owner_type not in OWNER_TYPES:
        raise ApiError("not_found", f"No memory owner type '{owner_type[:60]}'; use organization or membership.")
    return owner_type, (ctx.caller.member_id if owner_type == "membership" else None)


def document(ctx: Ctx) -> sqlite3.Row:
    owner_type, member_id = owner_of(ctx)
    row = store.get_document(ctx.db, owner_type, member_id)
    if row is None:
        with transaction(ctx.db, locks=[memory_lock(owner_type, member_id)]):
            row = store.ensure_document(ctx.db, owner_type, member_id, clock.now_iso())
    return row


def note_json(row: sqlite3.Row) -> dict:
    return {"id": row["id"], "text": row["text"], "section": row["section"],
            "proposedBy": row["proposed_by"], "proposedAt": row["proposed_at"]}


_MEMORY_FILE = obj({"path": text(1, MAX_PATH, description="A safe relative path: names separated by "
                                                          "'/', no '..', '.', empty names or '\\'."),
                    "content": text(0, MAX_FILE_BYTES, description=f"UTF-8 text, at most "
                                                                 f"{MAX_FILE_BYTES} bytes.")},
                   required="all")
_NOTE = {"id": STR, "text": STR, "section": nullable(STR), "proposedBy": STR, "proposedAt": TIME}


@route("GET", "/v1/memory/{ownerType}", scope="memory:manage",
       responses={200: obj({
           "ownerType": text(enum=list(OWNER_TYPES)),
           "guide": text(description="Markdown, at most 1 MiB of UTF-8."),
           "version": INT, "updatedAt": TIME,
           "pendingNotes": array(obj(_NOTE, required="all"), maxItems=MAX_PENDING),
           "heldNotes": array(obj({**_NOTE, "reason": text(enum=["guide_full"])}, required="all"),
           maxItems=MAX_PENDING)}, required="all")},
       summary="The memory guide and the notes waiting for the memory agent.")
def get_memory(ctx: Ctx) -> dict:
    """The memory guide, the notes waiting for the memory agent, and the notes it holds back
    (kept, not folded: the guide would pass its size bound)."""
    row = document(ctx)
    held = store.held_notes(ctx.db, row["id"], MAX_PENDING)  # first: a note held meanwhile is not listed twice
    notes = store.pending_notes(ctx.db, row["id"], MAX_PENDING)
    return {"ownerType": row["owner_type"], "guide": row["guide"], "version": row["version"],
            "updatedAt": row["updated_at"], "pendingNotes": [note_json(n) for n in notes],
            "heldNotes": [{**note_json(n), "reason": n["held_reason"]} for n in held]}


# --- files --------------------------------------------------------------------------------------

def content_type_of(path: str) -> str:
    if path.lower().endswith((".md", ".markdown")):
        return "text/markdown; charset=utf-8"
    return "application/octet-stream"


def _tar_gz(rows: Iterable[sqlite3.Row]) -> tempfile.SpooledTemporaryFile:
    """All files as one tar.gz (entries at the archive's root), spooled to disk past 8 MiB, made
    by the project's one tar writer (formats/tar_stream.py). Spooled, not streamed: the rows come
    from this thread's database connection."""
    from workspacectl.formats.tar_stream import opener_of, write_bundle

    out = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)
    entries = ((r["path"], r["size"], clock.parse_iso(r["updated_at"]).timestamp(), opener_of(bytes(r["content"])))
               for r in rows)
    for chunk in write_bundle(entries):
        out.write(chunk)
    out.seek(0)
    return out


def _chunks(fileobj: IO[bytes]) -> Iterator[bytes]:
    try:
        while chunk := fileobj.read(_CHUNK):
            yield chunk
    finally:
        fileobj.close()


@route("GET", "/v1/memory/{ownerType}/files", scope="memory:manage",
       query=[query("path", text(1, MAX_PATH), "Answer this file's bytes instead of the list."),
              query("format", text(enum=["tar.gz"]), "Answer every file as one tar.gz (entries at its root)."),
              *PAGE],
       responses={200: obj({"files": array(obj({"path": STR, "size": INT, "updatedAt": TIME}, required="all")),
                            "nextCursor": nullable(STR)}, required="all",
                           description="The list; with ?path= the file's bytes (text/markdown or "
                                       "application/octet-stream), with ?format=tar.gz application/gzip.")})
def memory_files(ctx: Ctx) -> Response | dict:
    """List the reference files; ?path= answers one file's bytes, ?format=tar.gz all of them."""
    path, fmt = ctx.query.get("path"), ctx.query.get("format")
    if path is not None and fmt is not None:
        raise v.bad("Pass either 'path' (one file) or 'format=tar.gz' (all files), not both.")
    if fmt is not None and fmt != "tar.gz":
        raise v.bad("Query parameter 'format' must be tar.gz; leave it out to list the files.")
    if path is not None:
        path = file_path(path)
    row = document(ctx)
    if path is not None:
        f = store.get_file(ctx.db, row["id"], path)
        if f is None:
            raise ApiError("not_found", f"No memory file '{path[:200]}'. Run `wsctl memory files {row['owner_type']}`.")
        return Response(200, stream=iter([bytes(f["content"])]), content_type=content_type_of(path),
                        headers={"Content-Length": str(f["size"])})
    if fmt == "tar.gz":
        archive = _tar_gz(store.iter_files(ctx.db, row["id"]))
        return Response(200, stream=_chunks(archive), content_type="application/gzip",
                        headers={"Content-Disposition": f'attachment; filename="memory-{row["owner_type"]}.tar.gz"'})
    limit, after = page_args(ctx)
    rows = store.list_files(ctx.db, row["id"], after, limit + 1)
    return page("files", rows, limit, lambda r: r["path"],
                lambda r: {"path": r["path"], "size": r["size"], "updatedAt": r["updated_at"]})


# --- proposals ----------------------------------------------------------------------------------

def file_path(value: object) -> str:
    """A safe relative path: '/'-separated names, no '.', '..', empty names, backslashes or
    control characters."""
    if not isinstance(value, str) or not value:
        raise v.bad("A memory file path must be a non-empty string such as 'guides/style.md'.")
    parts = value.split("/")
    if (len(value) > MAX_PATH or value.startswith("/") or "\\" in value or _CONTROL.search(value)
            or any(p in ("", ".", "..") or len(p.encode("utf-8")) > MAX_SEGMENT for p in parts)):
        raise v.bad(f"Memory file path '{value[:100]}' is not a safe relative path: use names separated by '/', "
                    f"without '..', '.', empty names or backslashes, at most {MAX_PATH} characters.")
    return value


def proposal_fields(body: dict) -> tuple[str, str | None, tuple[str, bytes] | None]:
    unknown = sorted(set(body) - set(PROPOSAL_KEYS))
    if unknown:
        raise v.bad(f"Unknown field '{unknown[0][:50]}'; a proposal takes text, section and file.")
    text = v.string(body, "text", max_len=MAX_TEXT)
    if not text.strip():
        raise v.bad("'text' must not be blank.")
    section = v.string(body, "section", required=False, min_len=0, max_len=MAX_SECTION)
    if section is not None and _CONTROL.search(section):
        raise v.bad("'section' must be one line of text (a heading title), without control characters.")
    section = " ".join(section.split()) if section else None
    file = body.get("file")
    if file is None:
        return text, section or None, None
    if not isinstance(file, dict) or set(file) - {"path", "content"}:
        raise v.bad("'file' must be an object {path, content}.")
    path = file_path(file.get("path"))
    content = file.get("content")
    if not isinstance(content, str):
        raise v.bad("'file.content' must be a string (UTF-8 text; binary files are not supported).")
    if len(content) > MAX_FILE_BYTES or len(data := content.encode("utf-8")) > MAX_FILE_BYTES:
        raise v.bad(f"'file.content' is over {MAX_FILE_BYTES // 1024} KiB of UTF-8 (at most {MAX_FILE_BYTES} bytes); "
                    "propose a smaller file.")
    return text, section or None, (path, data)


@route("POST", "/v1/memory/{ownerType}/proposals", scope="memory:manage",
       body=obj({"text": text(1, MAX_TEXT, NOT_BLANK),
                 "section": nullable(text(0, MAX_SECTION, description="One line; default Notes.")),
                 "file": nullable(_MEMORY_FILE)}, required=["text"]),
       responses={202: obj({"id": STR, "status": {"const": "pending"}}, required="all")})
def propose(ctx: Ctx) -> Response:
    """Queue a note (and optionally a reference file) for the memory agent's next run."""
    owner_type, member_id = owner_of(ctx)
    if owner_type == "organization" and ctx.caller.role == "guest":
        raise ApiError("forbidden", "Guests cannot propose changes to organization memory; ask a member to.")
    text, section, file = proposal_fields(v.body_dict(ctx, allow_empty=False))
    now = clock.now_iso()
    with transaction(ctx.db, locks=[memory_lock(owner_type, member_id)]):
        row = store.ensure_document(ctx.db, owner_type, member_id, now)
        if file is not None and (clash := store.path_clash(ctx.db, row["id"], file[0])):
            raise ApiError("conflict", f"Memory file path '{file[0][:100]}' collides with the file '{clash[:100]}'; "
                                       "pick another path.")
        if store.count_pending(ctx.db, row["id"]) >= MAX_PENDING:
            raise ApiError("conflict", f"{MAX_PENDING} notes are already pending; run `wsctl memory agent run` "
                                       "and propose again.")
        note_id = store.insert_note(ctx.db, row["id"], text, section, file[0] if file else None,
                                    file[1] if file else None, ctx.caller.member_id, now)
    return Response(202, {"id": note_id, "status": "pending"})
