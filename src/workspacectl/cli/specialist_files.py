"""`wsctl specialist files`: a specialist's shared files, and tar.gz bundles of them.

Transfers stream: a download goes to a temp file beside the target and is renamed when whole;
an uploaded folder is packed on the fly. Progress bars go to stderr, only on a terminal.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional
from urllib.parse import quote

import typer

from workspacectl.cli.config import atomic_output
from workspacectl.cli import choices
from workspacectl.cli.context import all_pages, backend, state
from workspacectl.cli.output import JsonOpt, confirm_or_refuse, emit, info, progress_bar, table
from workspacectl.errors import ApiError

app = typer.Typer(no_args_is_help=True, help="A specialist's shared files: list, remove, bundle download/upload.")
bundle_app = typer.Typer(no_args_is_help=True, help="Download or upload all files as one tar.gz.")
app.add_typer(bundle_app, name="bundle")

IdArg = Annotated[str, typer.Argument(metavar="ID", click_type=choices.specialist(), help="Specialist id (proj_…) or its exact name.")]
COLUMNS = [("path", "PATH"), ("size", "SIZE"), ("sha256", "SHA256"), ("updatedAt", "UPDATED")]


def _project_id(ctx: typer.Context, ref: str) -> str:
    from workspacectl.cli.specialist import project_id  # imported late: specialist.py mounts this module

    return project_id(ctx, ref)


def _files_path(ctx: typer.Context, ref: str) -> str:
    return f"/v1/projects/{quote(_project_id(ctx, ref), safe='')}/files"


@app.command("list")
def list_(ctx: typer.Context, pid: IdArg, json: JsonOpt = False):
    """List the specialist's files (every page)."""
    body = all_pages(ctx, _files_path(ctx, pid), "files")
    emit(ctx, body, lambda b: table(b["files"], COLUMNS, "No files."), json_flag=json)


@app.command("rm")
def rm(ctx: typer.Context, pid: IdArg,
       path: Annotated[str, typer.Argument(metavar="PATH", help="The file's path, as `files list` shows it.")],
       yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
       json: JsonOpt = False):
    """Remove one file."""
    confirm_or_refuse(f"Remove {path} from {pid}?", yes)
    body = backend(ctx).request("DELETE", _files_path(ctx, pid), query={"path": path})
    emit(ctx, body, lambda _: info(f"Removed {path}."), json_flag=json)


@bundle_app.command("download")
def download(ctx: typer.Context, pid: IdArg,
             output: Annotated[Optional[str], typer.Option(
                 "--output", "-o", metavar="FILE", help="Where to write (default ID.tar.gz; - for stdout).")] = None,
             json: JsonOpt = False):
    """Download every file as a tar.gz (entries at the root)."""
    as_json = json or state(ctx).json
    pid = _project_id(ctx, pid)
    path = f"/v1/projects/{quote(pid, safe='')}/files/bundle"
    if output == "-":
        if as_json:
            raise typer.BadParameter("--json prints a summary on stdout; write the bundle to a file with -o FILE.")
        with progress_bar("Downloading", None) as advance:
            backend(ctx).download(path, sys.stdout.buffer, advance)
        sys.stdout.buffer.flush()
        return
    dest = Path(output or f"{pid}.tar.gz")
    if dest.is_dir():
        raise ApiError("invalid_request", f"{dest} is a folder; give a file name with -o.")
    with atomic_output(dest, 0o644 & ~_umask()) as out, progress_bar("Downloading", None) as advance:
        size = backend(ctx).download(path, out, advance)
    emit(ctx, {"path": str(dest), "bytes": size}, lambda b: info(f"Saved {b['bytes']} bytes to {b['path']}."),
         json_flag=json)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@bundle_app.command("upload")
def upload(ctx: typer.Context, pid: IdArg,
           source: Annotated[Path, typer.Argument(metavar="DIR|FILE.tar.gz",
                                                  help="A folder (packed on the fly) or a .tar.gz file.")],
           json: JsonOpt = False):
    """Upload files: added or overwritten, never removed. Answers how many were added and updated."""
    path = f"{_files_path(ctx, pid)}/bundle"
    if source.is_dir():
        reader, size = _IterReader(_pack_folder(source)), None
    elif source.is_file():
        reader, size = open(source, "rb"), source.stat().st_size
    else:
        raise ApiError("invalid_request", f"No folder or file at {source}; give a folder or a .tar.gz file.")
    with reader, progress_bar("Uploading", size) as advance:
        body = backend(ctx).upload("POST", path, reader, size, "application/gzip", advance)
    emit(ctx, body, lambda b: print(f"Added {b['added']}, updated {b['updated']} files in {pid}."), json_flag=json)


def _pack_folder(root: Path):
    """The folder's regular files as a tar.gz stream, paths relative to root. A link or special
    file is refused here, before anything is sent: the server would refuse the bundle anyway."""
    from workspacectl.formats.tar_stream import write_bundle

    entries = []
    stack = [root]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as it:
            for e in sorted(it, key=lambda e: e.name):
                rel = Path(e.path).relative_to(root).as_posix()
                if e.is_symlink():
                    raise ApiError("invalid_request", f"{rel} is a symbolic link; bundles hold only regular "
                                                      "files. Replace it with a copy or remove it.")
                if e.is_dir(follow_symlinks=False):
                    stack.append(Path(e.path))
                elif e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    entries.append((rel, st.st_size, st.st_mtime, lambda p=e.path: open(p, "rb")))
                else:
                    raise ApiError("invalid_request", f"{rel} is not a regular file; remove it from the folder.")
    entries.sort(key=lambda t: t[0])
    return write_bundle(entries)


class _IterReader:
    """A read()-able file over an iterator of bytes chunks."""

    def __init__(self, chunks):
        self.chunks, self.buf = iter(chunks), b""

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
        return out

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None
