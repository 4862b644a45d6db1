"""Helpers for skill tests: archives built with tarfile directly, and presigned transfers done the
way a client does them (httpx for http URLs, a file write or read for the local file:// URLs)."""
from __future__ import annotations

import io
import tarfile
import urllib.parse
import urllib.request
from pathlib import Path

import httpx


def skill_md(name: str, description: str = "Does a thing. Use when testing.", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\n{extra}---\n# {name}\n\nInstructions.\n"


def targz(files: dict, top: str | None = None) -> bytes:
    """files: path -> str|bytes; optionally all under one top folder."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(f"{top}/{path}" if top else path)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def hostile_targz(kind: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        ok = b"---\nname: hostile\ndescription: x\n---\n"
        info = tarfile.TarInfo("SKILL.md")
        info.size = len(ok)
        tar.addfile(info, io.BytesIO(ok))
        info = tarfile.TarInfo({"symlink": "assets/link", "hardlink": "assets/hard", "absolute": "/etc/evil",
                                "escape": "../evil", "device": "assets/dev"}[kind])
        if kind == "symlink":
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        elif kind == "hardlink":
            info.type, info.linkname = tarfile.LNKTYPE, "SKILL.md"
        elif kind == "device":
            info.type, info.devmajor, info.devminor = tarfile.CHRTYPE, 1, 3
        if info.isreg():
            info.size = 4
            tar.addfile(info, io.BytesIO(b"evil"))
        else:
            tar.addfile(info)
    return buf.getvalue()


def file_path(url: str) -> Path:
    return Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))


def put_url(url: str, data: bytes) -> int:
    """PUT to a presigned URL; answers the HTTP status (200 for a local file write)."""
    if url.startswith("file://"):
        file_path(url).write_bytes(data)
        return 200
    return httpx.put(url, content=data, trust_env=False, timeout=60).status_code


def get_url(url: str) -> bytes:
    if url.startswith("file://"):
        return file_path(url).read_bytes()
    r = httpx.get(url, trust_env=False, timeout=60)
    assert r.status_code == 200, (r.status_code, r.text)
    return r.content


def create(b, name: str, description: str = "Does a thing. Use when testing.", secret=None) -> dict:
    r = b.api("POST", "/v1/skills", {"name": name, "description": description}, secret=secret)
    assert r.status == 201, r.body
    return r.body


def stage(b, sid: str, data: bytes) -> str:
    up = b.api("POST", f"/v1/skills/{sid}/bundle-upload-url")
    assert up.status == 201, up.body
    assert put_url(up.body["url"], data) == 200
    return up.body["uploadId"]


def publish_bundle(b, sid: str, data: bytes, **extra):
    return b.api("POST", f"/v1/skills/{sid}/publish", {"uploadId": stage(b, sid, data), **extra})


def ext_header_targz(kind: bytes, size: int, files: dict) -> bytes:
    """A tar.gz opening with an extended header (pax b'x' or GNU long name b'L') of `size` bytes
    of zeros, then `files`: a few KiB packed that a naive reader holds whole in memory."""
    import zlib

    head = tarfile.TarInfo("././@ext")
    head.type, head.size = kind, size
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [z.compress(head.tobuf(tarfile.USTAR_FORMAT))]
    block = b"\0" * (1 << 16)
    for _ in range(size // len(block)):
        out.append(z.compress(block))
    out.append(z.compress(b"\0" * (size % len(block)) + b"\0" * ((-size) % tarfile.BLOCKSIZE)))
    tail = io.BytesIO()
    with tarfile.open(fileobj=tail, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    out.append(z.compress(tail.getvalue()))
    out.append(z.flush())
    return b"".join(out)
