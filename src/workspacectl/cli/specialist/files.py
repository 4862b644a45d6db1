"""`wsctl specialist files`: a specialist's shared files, and tar.gz bundles of them.

Transfers stream: a download goes to a temp file beside the target and is renamed when whole;
an uploaded folder is compared with the specialist's files and only what changed is packed, on
the fly (cli/common/folder_sync.py). Progress bars go to stderr, only on a terminal and never with --json.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, BinaryIO, cast
from urllib.parse import quote

import typer

from workspacectl.cli.common import choices
from workspacectl.cli.common.config import atomic_output
from workspacectl.cli.common.context import all_pages, backend, state
from workspacectl.cli.common.output import (
    JsonOpt,
    confirm_or_refuse,
    emit,
    human_size,
    info,
    json_switch,
    list_table,
    progress_bar,
)
from workspacectl.cli.specialist.refs import project_id
from workspacectl.errors import ApiError

app = typer.Typer(no_args_is_help=True, help="A specialist's shared files: list, remove, bundle download/upload.")
bundle_app = typer.Typer(no_args_is_help=True, help="Download or upload all files as one tar.gz.")
app.add_typer(bundle_app, name="bundle")

IdArg = Annotated[str, typer.Argument(metavar="ID", click_type=choices.specialist(), help="Specialist id (proj_…) or its exact name.")]
COLUMNS = [("path", "PATH"), ("size", "SIZE"), ("sha256", "SHA256"), ("updatedAt", "UPDATED")]
# --json of the transfers, which print no one API body: their help says what they print instead.
SavedJson = Annotated[bool, typer.Option("--json", callback=json_switch, help=(
    "Print {path, bytes} as JSON: where the bundle was saved, its size."))]
UploadJson = Annotated[bool, typer.Option("--json", callback=json_switch, help=(
    "Print JSON: for a .tar.gz the API's body {added, updated}; for a folder "
    "{added, updated, unchanged, deleted, bytesSent} over its calls."))]


def _files_path(ctx: typer.Context, ref: str) -> str:
    return f"/v1/projects/{quote(project_id(ctx, ref), safe='')}/files"


@app.command("list")
def list_(ctx: typer.Context, pid: IdArg, json: JsonOpt = False) -> None:
    """List the specialist's files (every page).

    \b
    Examples:
      wsctl specialist files list ops-desk
    """
    list_table(ctx, _files_path(ctx, pid), "files", COLUMNS, "No files.", json)


@app.command("rm")
def rm(ctx: typer.Context, pid: IdArg,
       path: Annotated[str, typer.Argument(metavar="PATH", help="The file's path, as `files list` shows it.")],
       yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
       json: JsonOpt = False) -> None:
    """Remove one file.

    \b
    Examples:
      wsctl specialist files rm ops-desk notes/old.md --yes
    """
    confirm_or_refuse(f"Remove {path} from {pid}?", yes)
    body = backend(ctx).request("DELETE", _files_path(ctx, pid), query={"path": path})
    emit(ctx, body, lambda _: info(f"Removed {path}."), json_flag=json)


@bundle_app.command("download")
def download(ctx: typer.Context, pid: IdArg,
             output: Annotated[str | None, typer.Option(
                 "--output", "-o", metavar="FILE", click_type=choices.local_file(), help="Where to write (default ID.tar.gz; - for stdout).")] = None,
             json: SavedJson = False) -> None:
    """Download every file as a tar.gz (entries at the root).

    \b
    Examples:
      wsctl specialist files bundle download ops-desk -o ops-desk.tar.gz
    """
    as_json = json or state(ctx).json
    pid = project_id(ctx, pid)
    path = f"/v1/projects/{quote(pid, safe='')}/files/bundle"
    if output == "-":
        if as_json:
            raise typer.BadParameter("--json prints a summary on stdout; write the bundle to a file with -o FILE.")
        with progress_bar("Downloading", None) as advance:
            backend(ctx).download(path, sys.stdout.buffer, advance, total=advance.total)
        sys.stdout.buffer.flush()
        return
    dest = Path(output or f"{pid}.tar.gz")
    if dest.is_dir():
        raise ApiError("invalid_request", f"{dest} is a folder; give a file name with -o.")
    with atomic_output(dest, 0o644 & ~_umask()) as out, progress_bar("Downloading", None) as advance:
        size = backend(ctx).download(path, out, advance, total=advance.total)
    emit(ctx, {"path": str(dest), "bytes": size}, lambda b: info(f"Saved {human_size(b['bytes'])} to {b['path']}."),
         json_flag=json)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@bundle_app.command("upload")
def upload(ctx: typer.Context, pid: IdArg,
           source: Annotated[Path, typer.Argument(metavar="DIR|FILE.tar.gz",
                                                  help="A folder (only changed files are sent) or a .tar.gz file.")],
           delete: Annotated[bool, typer.Option("--delete", help="Folder only: also remove the specialist's "
                                                "files that are not in the folder (as rsync --delete).")] = False,
           json: UploadJson = False) -> None:
    """Upload files: added or overwritten; others are kept unless --delete. A folder is compared with
    the specialist's files first (sha256) and only new or changed files are sent.

    \b
    Examples:
      wsctl specialist files bundle upload ops-desk ./ops-desk  # only changed files travel
      wsctl specialist files bundle upload ops-desk ./ops-desk --delete
    """
    path = f"{_files_path(ctx, pid)}/bundle"
    if source.is_dir():
        _upload_folder(ctx, pid, source, delete, json)
        return
    if delete:
        raise typer.BadParameter("--delete needs a folder: a .tar.gz does not say which files to keep.")
    if not source.is_file():
        raise ApiError("invalid_request", f"No folder or file at {source}; give a folder or a .tar.gz file.")
    size = source.stat().st_size
    with open(source, "rb") as reader, progress_bar("Uploading", size) as advance:
        body = backend(ctx).upload("POST", path, reader, size, "application/gzip", advance)
    emit(ctx, body, lambda b: print(f"Added {b['added']}, updated {b['updated']} files in {pid}."), json_flag=json)


def _upload_folder(ctx: typer.Context, ref: str, source: Path, delete: bool, json: bool) -> None:
    """Measure, hash, compare with the listing, send what changed (cli/common/folder_sync.py). Prints a
    summary: the server's {added, updated} plus unchanged, deleted and bytesSent."""
    from workspacectl.cli.common import folder_sync

    files = folder_sync.measure(source)
    with progress_bar("Comparing", sum(f.size for f in files)) as advance:
        folder_sync.hash_files(files, advance)
    base = _files_path(ctx, ref)
    plan = folder_sync.plan(files, all_pages(ctx, base, "files")["files"])
    summary = {"added": 0, "updated": 0, "unchanged": plan.unchanged, "deleted": 0, "bytesSent": 0}
    if plan.send:
        with progress_bar(f"Uploading {len(plan.send)} files", plan.send_bytes) as advance:
            reader = _IterReader(folder_sync.packed(plan.send, advance))
            # upload only reads it (read(n), read()), as it would a file
            answer = backend(ctx).upload("POST", f"{base}/bundle", cast(BinaryIO, reader), None, "application/gzip")
        summary.update(added=answer["added"], updated=answer["updated"], bytesSent=reader.sent)
    for extra in plan.extra if delete else ():
        backend(ctx).request("DELETE", base, query={"path": extra})
        summary["deleted"] += 1

    def render(b: Any) -> None:
        line = (f"Added {b['added']}, updated {b['updated']}, unchanged {b['unchanged']}"
                + (f", deleted {b['deleted']}" if delete else "") + f" files in {ref} ({human_size(b['bytesSent'])} sent).")
        print(line)
        if plan.extra and not delete:
            info(f"{len(plan.extra)} files in {ref} are not in {source}; kept (--delete removes them).")

    emit(ctx, summary, render, json_flag=json)


class _IterReader:
    """A read()-able file over an iterator of bytes chunks; `sent` counts the bytes read."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks, self.buf, self.sent = iter(chunks), b"", 0

    def read(self, n: int = -1) -> bytes:
        while n < 0 or len(self.buf) < n:
            chunk = next(self.chunks, None)
            if chunk is None:
                break
            self.buf += chunk
        if n < 0:
            out, self.buf = self.buf, b""
        else:
            out, self.buf = self.buf[:n], self.buf[n:]
        self.sent += len(out)
        return out

    def __enter__(self) -> _IterReader:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
