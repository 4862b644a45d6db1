"""Presigned skill transfers: HMAC-signed tokens for one upload (PUT) or one download (GET).

A token is base64url(JSON [method, object, path, expiry]) "." base64url(HMAC-SHA256), keyed by
a key derived from the workspace key (engine/crypto/__init__.py), so no API key travels with the URL.
A token whose signature, object or method does not match is 403 forbidden; one past its expiry
is 410 expired (checked after the signature).

Served by `wsctl serve` at PUT /blobs/upload/<token> and GET /blobs/download/<token>
(server/skill_transfer_pages.py). The local backend hands out file:// URLs: downloads are a
materialized copy under blobs/outbox/, and an upload URL names blobs/incoming/<token>, a file the
client writes; validate and publish take it in, under the same checks.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import shutil
import sqlite3
import time
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from workspacectl import clock
from workspacectl.engine.db import transaction
from workspacectl.engine.skills import contents
from workspacectl.engine.store import skills as store
from workspacectl.errors import ApiError
from workspacectl.formats import skill_bundle as fmt
from workspacectl.formats.tar_stream import tar_length
from workspacectl.formats.transfer_size import UNCOMPRESSED_LENGTH

if TYPE_CHECKING:
    from workspacectl.engine.blobs import Readable
    from workspacectl.engine.registry import Ctx
    from workspacectl.engine.workspaces.folder import Workspace

URL_LIFETIME = 15 * 60
UPLOAD_LIFETIME = 60 * 60      # a staged upload may be validated and published for an hour
OUTBOX = "outbox"
INCOMING = "incoming"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text.encode("ascii") + b"===")


def _key(ws: Workspace) -> bytes:
    from workspacectl.engine import crypto

    raw = base64.b64decode(crypto.current_key(ws).encoded())
    return hmac.new(raw, b"wsctl skill presign v1", hashlib.sha256).digest()


def sign(ws: Workspace, method: str, obj: str, path: str, expires: int) -> str:
    payload = _b64(json.dumps([method, obj, path, expires], separators=(",", ":")).encode())
    mac = hmac.new(_key(ws), payload.encode(), hashlib.sha256).digest()
    return f"{payload}.{_b64(mac)}"


def verify(ws: Workspace, token: str, method: str) -> tuple[str, str]:
    """(object, path) of a valid token for `method`; 403 when anything does not match, 410 when expired."""
    forbidden = ApiError("forbidden", "This link is not valid for this request; ask for a new one.")
    try:
        payload, mac = token.split(".")
        good = hmac.compare_digest(_unb64(mac), hmac.new(_key(ws), payload.encode(), hashlib.sha256).digest())
    except (ValueError, TypeError, UnicodeError):
        raise forbidden from None
    if not good:  # nothing unsigned is ever parsed (deeply nested JSON would be a RecursionError)
        raise forbidden
    try:
        signed_method, obj, path, expires = json.loads(_unb64(payload))
    except (ValueError, TypeError, UnicodeError, RecursionError):
        raise forbidden from None
    if signed_method != method or not isinstance(obj, str) or not isinstance(expires, int):
        raise forbidden
    if clock.now().timestamp() > expires:
        raise ApiError("expired", "This link has expired; ask for a new one (links last 15 minutes).")
    return obj, path


def expiry() -> tuple[int, str]:
    exp = int(clock.now().timestamp()) + URL_LIFETIME
    return exp, clock.iso(datetime.fromtimestamp(exp, UTC))


# ------------------------------------------------------------------ uploads

def new_upload(ctx: Ctx, skill_row: sqlite3.Row) -> dict:
    exp, exp_iso = expiry()
    with transaction(ctx.db):
        uid = store.insert_upload(ctx.db, skill_row["id"], ctx.caller.member_id, exp_iso, clock.later(UPLOAD_LIFETIME))
    token = sign(ctx.ws, "PUT", uid, "", exp)
    if ctx.base_url:
        url = f"{ctx.base_url}/blobs/upload/{token}"
    else:
        incoming = Path(ctx.ws.blobs) / INCOMING
        incoming.mkdir(parents=True, exist_ok=True)
        url = (incoming / token).as_uri()
    return {"uploadId": uid, "url": url, "expiresAt": exp_iso}


def receive_upload(ws: Workspace, token: str, chunks: Readable | Iterable[bytes]) -> dict:
    """The presigned PUT: store the body as the upload's one object."""
    uid, _ = verify(ws, token, "PUT")
    return store_upload(ws, uid, chunks)


def store_upload(ws: Workspace, uid: str, chunks: Readable | Iterable[bytes]) -> dict:
    conn = ws.conn()
    row = store.get_upload(conn, uid)
    if row is None:
        raise ApiError("forbidden", "This link is not valid for this request; ask for a new one.")
    if row["state"] != "pending":
        raise ApiError("conflict", "This upload link was already used; ask for a new one with `bundle-upload-url`.")
    with contents.staging(ws) as stage:
        staged = contents.stage_stream(stage, chunks, fmt.MAX_PACKED)
        with transaction(conn):
            if not store.mark_uploaded(conn, uid, staged.sha256, staged.size):
                raise ApiError("conflict", "This upload link was already used; ask for a new one with "
                                           "`bundle-upload-url`.")
            ws.blob_store.publish(staged)
    return {"uploadId": uid, "size": staged.size, "sha256": staged.sha256}


def _take_local_upload(ws: Workspace, row: sqlite3.Row) -> None:
    """Local backend: the file written at the upload URL becomes the upload's object."""
    exp = int(clock.parse_iso(row["url_expires_at"]).timestamp())
    path = Path(ws.blobs) / INCOMING / sign(ws, "PUT", row["id"], "", exp)
    if not path.is_file():
        return
    written = path.stat().st_mtime + clock.offset_seconds()
    if written > exp:
        path.unlink(missing_ok=True)
        raise ApiError("expired", "The upload was written after its link expired; ask for a new upload URL.")
    with path.open("rb") as fh:
        try:
            store_upload(ws, row["id"], iter(lambda: fh.read(1 << 20), b""))
        finally:
            path.unlink(missing_ok=True)


def staged_upload(ctx: Ctx, skill_row: sqlite3.Row, upload_id: object) -> str:
    """The blob sha256 of an upload of this skill, ready to validate or publish."""
    if not isinstance(upload_id, str) or not upload_id:
        raise ApiError("invalid_request", "'uploadId' is required; get one from `bundle-upload-url`.")
    row = store.get_upload(ctx.db, upload_id)
    if row is None or row["skill_id"] != skill_row["id"]:
        raise ApiError("not_found", f"No upload '{upload_id[:60]}' for skill '{skill_row['name']}'. "
                                    "Ask for one with `bundle-upload-url`.")
    if row["state"] == "pending" and not ctx.base_url:
        _take_local_upload(ctx.ws, row)
        row = store.get_upload(ctx.db, upload_id)
    if row["state"] == "used":
        raise ApiError("conflict", "This upload was already published; upload the bundle again.")
    if clock.now() > clock.parse_iso(row["expires_at"]):
        raise ApiError("expired", "This staged upload has expired; upload the bundle again.")
    if row["state"] == "pending":
        raise ApiError("invalid_request", "Nothing was uploaded yet; PUT the tar.gz to the upload URL first.")
    return row["blob_sha256"]


# ------------------------------------------------------------------ downloads

def download_url(ctx: Ctx, vrow: sqlite3.Row, path: str, filename: str) -> dict:
    """A presigned GET of a version's bundle (path "") or one file of it."""
    exp, exp_iso = expiry()
    if ctx.base_url:
        return {"url": f"{ctx.base_url}/blobs/download/{sign(ctx.ws, 'GET', vrow['id'], path, exp)}",
                "expiresAt": exp_iso}
    outbox = Path(ctx.ws.blobs) / OUTBOX
    sweep_outbox(outbox)
    folder = outbox / secrets.token_hex(16)
    folder.mkdir(parents=True)
    dest = folder / filename
    tmp = folder / f".{filename}.tmp"
    with tmp.open("wb") as fh:
        for chunk in read_download(ctx.ws, vrow, path).chunks:
            fh.write(chunk)
    os.replace(tmp, dest)
    return {"url": dest.as_uri(), "expiresAt": exp_iso}


def sweep_outbox(outbox: Path) -> None:
    """Remove materialized copies older than a link's lifetime."""
    if not outbox.is_dir():
        return
    cutoff = time.time() - URL_LIFETIME
    for d in outbox.iterdir():
        try:
            if d.stat().st_mtime < cutoff:
                shutil.rmtree(d, ignore_errors=True)
        except OSError:
            pass


class Download(NamedTuple):
    chunks: Iterator[bytes]
    content_type: str
    filename: str
    size_headers: dict   # Content-Length of a file; X-Uncompressed-Length of a bundle (formats/transfer_size.py)


def read_download(ws: Workspace, vrow: sqlite3.Row, path: str) -> Download:
    """A version's bundle or one of its files, streamed from the blob store. Every blob is
    checked present first: a stream cannot turn into a 404."""
    from workspacectl.engine.skills.versions import version_refs

    files = version_refs(vrow)
    if not path:
        contents.require_stored(ws, [f.sha256 for f in files.values()])
        entries = fmt.canonical_entries(files, lambda p: contents.open_ref(ws, {}, files[p].sha256))
        return Download(fmt.pack(entries), "application/gzip", "bundle.tar.gz",
                        {UNCOMPRESSED_LENGTH: str(tar_length(entries))})
    ref = files.get(path)
    if ref is None:
        raise ApiError("forbidden", "This link is not valid for this request; ask for a new one.")
    fh = contents.open_ref(ws, {}, ref.sha256)
    return Download(_chunks_of(fh), "application/octet-stream", path.rsplit("/", 1)[-1],
                    {"Content-Length": str(ref.size)})


def _chunks_of(fh: BinaryIO) -> Iterator[bytes]:
    with fh:
        while chunk := fh.read(contents.CHUNK):
            yield chunk


def serve_download(ws: Workspace, token: str) -> Download:
    """The presigned GET."""
    vid, path = verify(ws, token, "GET")
    vrow = store.get_version(ws.conn(), vid)
    if vrow is None or not isinstance(path, str):
        raise ApiError("forbidden", "This link is not valid for this request; ask for a new one.")
    return read_download(ws, vrow, path)
