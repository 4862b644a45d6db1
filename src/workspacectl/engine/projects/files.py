"""A project's (specialist's) shared files: list, download all as tar.gz, upload a tar.gz
(additive), remove one.

Reads need any access to the project, writes need editor or owner. An upload is checked whole
and staged before anything changes; then the rows are written in one transaction, inside which
the staged blobs are published. Blobs no file names any more are removed after the commit.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO

from workspacectl import clock
from workspacectl.engine import blobs
from workspacectl.engine.blobs.staging import stage_archive
from workspacectl.engine.db import transaction
from workspacectl.engine.pagination import page, page_args
from workspacectl.engine.projects.routes import load, require_edit
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.schema_blocks import INT, PAGE, TIME, obj, page_of, query, text
from workspacectl.engine.store import project_files as store
from workspacectl.errors import ApiError
from workspacectl.formats.tar_stream import Limits, check_path, size_text, tar_length, write_bundle
from workspacectl.formats.transfer_size import UNCOMPRESSED_LENGTH

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

# The limits, in one place: a bundle, and a project's files as a whole, stay within both.
LIMITS = Limits(max_files=10_000, max_bytes=1 << 30)


def _project(ctx: Ctx, write: bool) -> sqlite3.Row:
    row = load(ctx)
    if write:
        require_edit(row)
    return row


def file_json(row: sqlite3.Row) -> dict:
    return {"path": row["path"], "size": row["size"], "sha256": row["sha256"], "updatedAt": row["updated_at"]}


_PROJECT_FILE = obj({"path": text(1, 1024, description="A relative POSIX path: no '..', '.', empty parts, "
                                                       "leading '/', backslash or control characters."),
                     "size": INT, "sha256": text(64, 64), "updatedAt": TIME}, required="all")


@route("GET", "/v1/projects/{id}/files", scope="projects:manage",
       query=PAGE,
       responses={200: page_of("files", _PROJECT_FILE)})
def list_files(ctx: Ctx) -> dict:
    """List a specialist's shared files, by path."""
    limit, after = page_args(ctx)
    pid = _project(ctx, write=False)["id"]
    return page("files", store.list_files(ctx.db, pid, after, limit + 1), limit, lambda r: r["path"], file_json)


@route("GET", "/v1/projects/{id}/files/bundle", scope="projects:manage",
       responses={200: None})
def download_bundle(ctx: Ctx) -> Response:
    """Download every file as one tar.gz, entries at the root."""
    pid = _project(ctx, write=False)["id"]
    rows = [(r["path"], r["size"], r["sha256"], r["updated_at"]) for r in store.all_files(ctx.db, pid)]
    ws = ctx.ws

    def opener(sha: str) -> Callable[[], BinaryIO | None]:
        def open_() -> BinaryIO | None:
            try:
                return ws.blob_store.open(sha)
            except FileNotFoundError:  # removed by a concurrent change since the listing
                return None
        return open_

    entries = [(path, size, clock.parse_iso(at).timestamp(), opener(sha)) for path, size, sha, at in rows]
    return Response(200, stream=write_bundle(entries), content_type="application/gzip",
                    headers={"Content-Disposition": f'attachment; filename="{pid}.tar.gz"',
                             UNCOMPRESSED_LENGTH: str(tar_length(entries))})


def files_lock(pid: str) -> str:
    """The resource a change of a project's file set locks (db.transaction's locks)."""
    return f"project-files:{pid}"


@route("POST", "/v1/projects/{id}/files/bundle", scope="projects:manage",
       responses={200: obj({"added": INT, "updated": INT}, required="all",
                           description="The body is the tar.gz itself (Content-Type: application/gzip). "
                                       "Adds and overwrites, never removes; refused whole (400/409/413) "
                                       "on a link, device, unsafe path or the limits (10,000 files, 1 GiB).")})
def upload_bundle(ctx: Ctx) -> dict:
    """Upload a tar.gz: adds and overwrites files, never removes; answers {added, updated}."""
    pid = _project(ctx, write=True)["id"]
    reader = blobs.reader_of(ctx.body)
    if reader is None:
        raise ApiError("invalid_request", "Send the bundle as the request body: a .tar.gz file "
                                          "(Content-Type: application/gzip).")
    blob_store = ctx.ws.blob_store
    with blob_store.staging() as stage:
        files, staged = stage_archive(reader, stage, LIMITS)
        replaced: set[str] = set()
        # this project's file set alone (and the blobs it publishes: engine/blobs blob_lock)
        with transaction(ctx.db, locks=[files_lock(pid), *(blobs.blob_lock(s.sha256) for s in staged.values())]):
            _project(ctx, write=True)  # the role may have changed while the bundle arrived
            current = store.files_at(ctx.db, pid, list(files))
            _check_fits(ctx.db, pid, files, current)
            now = clock.now_iso()
            added = updated = 0
            for path, ref in files.items():
                sha, size = ref.sha256, ref.size
                old = current.get(path)
                if old is not None and old["sha256"] == sha:
                    continue  # same content: left as it is, counted in neither
                store.put_file(ctx.db, pid, path, size, sha, now)
                if old is None:
                    added += 1
                else:
                    updated += 1
                    replaced.add(old["sha256"])
            for s in staged.values():
                blob_store.publish(s)
    blob_store.remove_unreferenced(replaced)
    return {"added": added, "updated": updated}


def _check_fits(conn: Conn, pid: str, files: dict, current: dict) -> None:
    """A path may not be a file and a folder at once, and the whole stays within LIMITS."""
    parents = {p.rsplit("/", i)[0] for p in files for i in range(1, p.count("/") + 1)}
    parent_files = store.files_at(conn, pid, sorted(parents))  # one lookup, not one per path and level
    for path in files:
        if path not in current and (under := store.first_file_under(conn, pid, path)):
            raise ApiError("conflict", f"'{path[:120]}' is a folder in this specialist (it holds '{under[:120]}'); "
                                       "remove those files first or rename the upload.")
        parts = path.split("/")
        for i in range(1, len(parts)):
            parent = "/".join(parts[:i])
            if parent in parent_files:
                raise ApiError("conflict", f"'{parent[:120]}' is a file in this specialist, so '{path[:120]}' "
                                           "cannot be added under it; remove it first.")
    count, size = store.totals(conn, pid)
    count += sum(1 for p in files if p not in current)
    size += sum(ref.size for ref in files.values()) - sum(current[p]["size"] for p in files if p in current)
    if count > LIMITS.max_files or size > LIMITS.max_bytes:
        raise ApiError("payload_too_large", f"The specialist would hold over {LIMITS.max_files} files or "
                                            f"{size_text(LIMITS.max_bytes)} in all; remove files first.")


@route("DELETE", "/v1/projects/{id}/files", scope="projects:manage",
       query=[query("path", text(1, 1024), "The file to remove.", required=True)],
       responses={204: None})
def delete_file(ctx: Ctx) -> Response:
    """Remove one file; the path is the query parameter `path`."""
    pid = _project(ctx, write=True)["id"]
    raw = ctx.query.get("path")
    if not raw:
        raise ApiError("invalid_request", "Say which file to remove: query parameter 'path' is required, "
                                          "a path as the file list shows it (?path=docs/readme.md).")
    path = check_path(raw, "'path' query parameter")
    with transaction(ctx.db, locks=[files_lock(pid)]):
        _project(ctx, write=True)
        sha = store.delete_file(ctx.db, pid, path)
    if sha is None:
        raise ApiError("not_found", f"No file '{path[:200]}' in {pid}. Run `wsctl specialist files list {pid}`.")
    ctx.ws.blob_store.remove_unreferenced([sha])
    return Response(204)
