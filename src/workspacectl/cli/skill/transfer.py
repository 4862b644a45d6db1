"""Moving skill bundles through presigned URLs: http(s) URLs of a server, file:// URLs locally.

Progress bars go to stderr, and only when stderr is a terminal.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, cast

from workspacectl.cli.common.config import atomic_output
from workspacectl.cli.common.output import progress_bar
from workspacectl.errors import ApiError
from workspacectl.formats import skill_bundle as fmt
from workspacectl.formats import transfer_size
from workspacectl.formats.tar_stream import CHUNK, ArchiveError, Record, read_tar

if TYPE_CHECKING:
    import httpx


def _file_path(url: str) -> Path:
    import urllib.request  # http.client and ssl come with it: only when a file:// URL is followed

    return Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))


def _check_url(url: object, local: bool) -> None:
    """A presigned URL comes from the backend: file:// only from the local backend (the engine in
    this process), http(s) from anyone. A server answering file:///home/you/.bashrc must not make
    the CLI read or overwrite the user's files."""
    scheme = urllib.parse.urlsplit(url).scheme.lower() if isinstance(url, str) else ""
    if scheme in ("http", "https") or (scheme == "file" and local):
        return
    raise ApiError("invalid_request", f"The server answered a transfer URL with scheme '{scheme[:20]}'; "
                                      "only http(s) URLs are followed. Check the server you are using.")


def put_to_url(url: str, data: IO[bytes], size: int, label: str, local: bool = False) -> None:
    """The presigned PUT of one object, streamed from a binary file of `size` bytes.
    local: the URL comes from the local backend."""
    _check_url(url, local)
    if url.startswith("file://"):
        with atomic_output(_file_path(url)) as fh:
            shutil.copyfileobj(data, fh, CHUNK)
        return
    import httpx

    def chunks() -> Iterator[bytes]:
        with progress_bar(label, size) as advance:
            while chunk := data.read(CHUNK):
                advance(len(chunk))
                yield chunk

    from workspacectl.backend.http_trace import trace

    started = time.monotonic()
    try:
        resp = httpx.put(url, content=chunks(), headers={"Content-Type": "application/gzip",
                                                         "Content-Length": str(size)},
                         timeout=_limits(), trust_env=False)
    except httpx.TransportError as e:
        trace("PUT", url, type(e).__name__, time.monotonic() - started)
        raise _failed(e, "PUT", url) from None
    trace("PUT", url, str(resp.status_code), time.monotonic() - started)
    if resp.status_code >= 400:
        raise ApiError.from_body(resp.status_code, _json(resp))


def get_from_url(url: str, out: BinaryIO, label: str, local: bool = False) -> None:
    """The presigned GET, written to `out` as it arrives. local: the URL comes from the local backend."""
    _check_url(url, local)
    if url.startswith("file://"):
        try:
            with _file_path(url).open("rb") as fh, progress_bar(label, os.fstat(fh.fileno()).st_size) as advance:
                while chunk := fh.read(CHUNK):
                    out.write(chunk)
                    advance(len(chunk))
            return
        except OSError:
            raise ApiError("expired", "The download link's file is gone; ask for a new link.") from None
    import httpx

    from workspacectl.backend.http_trace import trace

    started = time.monotonic()
    try:
        with httpx.stream("GET", url, timeout=_limits(), trust_env=False) as resp:
            trace("GET", url, str(resp.status_code), time.monotonic() - started)
            if resp.status_code >= 400:
                resp.read()
                raise ApiError.from_body(resp.status_code, _json(resp))
            with progress_bar(label, None) as bar:   # its total: what the answer announces
                count = transfer_size.counter(resp.headers.get, bar, bar.total)
                for chunk in resp.iter_bytes():
                    out.write(chunk)
                    count(chunk)
    except httpx.TransportError as e:
        raise _failed(e, "GET", url) from None


def _limits() -> httpx.Timeout:
    """A transfer is bounded by progress (backend/timeouts.py): each read and write within the limit."""
    import httpx

    from workspacectl.backend import timeouts

    limit = timeouts.seconds()
    return httpx.Timeout(limit, connect=timeouts.connect_seconds(limit))


def _failed(exc: Exception, method: str, url: str) -> ApiError:
    """The one line for a transfer that failed, naming the server and the path (never the link's
    query, which carries its signature)."""
    from urllib.parse import urlsplit

    from workspacectl.backend import timeouts

    parts = urlsplit(url)
    return timeouts.transport_error(exc, f"the server at {parts.scheme}://{parts.netloc}", f"{method} {parts.path}",
                                    timeouts.seconds(), transfer=True, may_have_landed=method != "GET")


def _json(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return None


def packed(files: dict, label: str = "pack") -> tuple[IO[bytes], int, str]:
    """(file, size, sha256): a folder's files as the canonical tar.gz, spooled to disk past 8 MiB,
    and the version digest the server will compute (of the tar, made once for both). A bar
    against the folder's measured size moves as the files are packed (before the upload's bar)."""
    from workspacectl.cli.common.folder_sync import CountingReader

    out = tempfile.SpooledTemporaryFile(max_size=8 << 20)
    with progress_bar(label, sum(f.size for f in files.values())) as advance:
        def opener(p: str) -> BinaryIO:
            # the packer only reads and closes it, which a CountingReader does as the file would
            return cast(BinaryIO, CountingReader(open(files[p].full, "rb"), advance))

        chunks, digest = fmt.pack_hashed(fmt.canonical_entries(files, opener))
        for chunk in chunks:
            out.write(chunk)
    size = out.tell()
    out.seek(0)
    return out, size, digest()


def _read(archive: BinaryIO) -> Iterator[Record]:
    """The downloaded bundle through the one archive reader, from its start."""
    archive.seek(0)
    return read_tar(archive, fmt.LIMITS)


def write_bundle(archive: BinaryIO, dest: Path) -> list[str]:
    """Unpack a downloaded tar.gz (a seekable file) into dest under the bundle rules: a first pass
    checks every entry, so nothing is written if any is refused; the second writes, streaming."""
    try:
        paths = {rec.path: rec.executable for rec in _read(archive)}
        _check_targets(paths, dest)
        dest.mkdir(parents=True, exist_ok=True)
        for rec in _read(archive):
            target = dest.joinpath(*rec.path.split("/"))
            target.parent.mkdir(parents=True, exist_ok=True)
            with atomic_output(target, 0o755 if rec.executable else 0o644) as fh:
                while chunk := rec.read():
                    fh.write(chunk)
    except ArchiveError as e:
        raise ApiError("unprocessable", f"The downloaded bundle is not valid: {e.message} Nothing was written; "
                                              "check the skill with `wsctl skill show`, or download it again.") from None
    return sorted(paths)


def _check_targets(files: dict, dest: Path) -> None:
    """Before anything is written: no path of the bundle is a folder of another, and no folder on
    the way to a file is, in DEST, a symbolic link (followed, it would write outside DEST) or a file."""
    def refuse(why: str) -> None:
        raise ApiError("unprocessable", f"The downloaded bundle cannot be written to {dest}: {why} Nothing was "
                                          "written; choose another destination folder.")

    if dest.is_symlink() and not dest.is_dir():
        refuse(f"{dest} is a link to something that is not a folder.")
    folders: set[str] = set()
    for path in files:
        parts = path.split("/")
        folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
    for path in sorted(files):
        if path in folders:
            refuse(f"'{path[:120]}' is both a file and a folder in the bundle.")
        parts = path.split("/")
        at = dest
        for i, part in enumerate(parts):
            at = at / part
            last = i == len(parts) - 1
            if at.is_symlink():
                refuse(f"{at} is a symbolic link; remove it or pull into an empty folder.")
            if not at.exists():
                break
            if not last and not at.is_dir():
                refuse(f"{at} is a file where the bundle has a folder; move it or pull elsewhere.")
            if last and at.is_dir():
                refuse(f"{at} is a folder where the bundle has a file; move it or pull elsewhere.")


def check_folder(path: Path) -> tuple[dict, list, list, dict | None]:
    """(files, errors, warnings, frontmatter) of a skill folder, by the server's rules."""
    if not path.is_dir():
        raise ApiError("invalid_request", f"{path} is not a folder; pass the skill's folder (holding SKILL.md).")
    files, errors = fmt.read_folder(path)
    warnings: list = []
    if not errors:
        md = None
        if (f := files.get(fmt.SKILL_MD)) is not None:
            with open(f.full, "rb") as fh:
                md = fmt.read_md(iter(lambda: fh.read(CHUNK), b""))
        errors, warnings, meta = fmt.validate_bundle(files, md, folder=path.resolve().name)
        return files, errors, warnings, meta
    return files, errors, warnings, None
