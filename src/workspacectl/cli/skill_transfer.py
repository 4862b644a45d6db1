"""Moving skill bundles through presigned URLs: http(s) URLs of a server, file:// URLs locally.

Progress bars go to stderr, and only when stderr is a terminal.
"""
from __future__ import annotations

import os
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from workspacectl.cli.output import progress_bar
from workspacectl.engine import skill_format as fmt
from workspacectl.errors import ApiError


def _file_path(url: str) -> Path:
    return Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))


def put_to_url(url: str, data: bytes, label: str) -> None:
    """The presigned PUT of one object."""
    if url.startswith("file://"):
        dest = _file_path(url)
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".part-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, dest)
        return
    import httpx

    def chunks():
        with progress_bar(label, len(data)) as advance:
            for i in range(0, len(data), 1 << 20):
                advance(len(data[i:i + (1 << 20)]))
                yield data[i:i + (1 << 20)]

    try:
        resp = httpx.put(url, content=chunks(), headers={"Content-Type": "application/gzip",
                                                         "Content-Length": str(len(data))},
                         timeout=300, trust_env=False)
    except httpx.TransportError as e:
        raise ApiError("unreachable", f"Cannot reach the upload URL ({type(e).__name__}); check the server.") from None
    if resp.status_code >= 400:
        raise ApiError.from_body(resp.status_code, _json(resp))


def get_from_url(url: str, label: str) -> bytes:
    """The presigned GET."""
    if url.startswith("file://"):
        try:
            return _file_path(url).read_bytes()
        except OSError:
            raise ApiError("expired", "The download link's file is gone; ask for a new link.") from None
    import httpx

    try:
        with httpx.stream("GET", url, timeout=300, trust_env=False) as resp:
            if resp.status_code >= 400:
                resp.read()
                raise ApiError.from_body(resp.status_code, _json(resp))
            total = int(resp.headers.get("content-length") or 0) or None
            parts = []
            with progress_bar(label, total) as advance:
                for chunk in resp.iter_bytes():
                    parts.append(chunk)
                    advance(len(chunk))
            return b"".join(parts)
    except httpx.TransportError as e:
        raise ApiError("unreachable", f"Cannot reach the download URL ({type(e).__name__}); check the server.") from None


def _json(resp):
    try:
        return resp.json()
    except ValueError:
        return None


def write_bundle(data: bytes, dest: Path) -> list[str]:
    """Unpack a tar.gz into dest under the bundle rules (nothing written if any entry is refused)."""
    files, errors, _top = fmt.read_archive(data)
    if errors:
        raise ApiError("unprocessable", f"The downloaded bundle is not valid: {errors[0]['message']}")
    dest.mkdir(parents=True, exist_ok=True)
    for path, f in sorted(files.items()):
        target = dest.joinpath(*path.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(f.data)
        os.chmod(tmp, 0o755 if f.executable else 0o644)
        os.replace(tmp, target)
    return sorted(files)


def check_folder(path: Path) -> tuple[dict, list, list, dict | None]:
    """(files, errors, warnings, frontmatter) of a skill folder, by the server's rules."""
    if not path.is_dir():
        raise ApiError("invalid_request", f"{path} is not a folder; pass the skill's folder (holding SKILL.md).")
    files, errors = fmt.read_folder(path)
    warnings: list = []
    if not errors:
        errors, warnings, meta = fmt.validate_bundle(files, folder=path.resolve().name)
        return files, errors, warnings, meta
    return files, errors, warnings, None
