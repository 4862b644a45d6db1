"""Presigned skill transfers over HTTP (engine/skills/transfers.py holds the rules).

    PUT /blobs/upload/<token>     the one object of a staged bundle upload (no API key)
    GET /blobs/download/<token>   a live bundle or one of its files (no API key)

Any other method on these paths is 403: the signature covers the method.
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import Response as RawResponse
from fastapi.responses import StreamingResponse

from workspacectl.engine import doors
from workspacectl.errors import ApiError
from workspacectl.formats import skill_bundle as fmt
from workspacectl.server.api_path import json_response
from workspacectl.server.page_calls import run_engine
from workspacectl.server.spool import spool_body

if TYPE_CHECKING:
    from workspacectl.engine.doors import Engine

OTHER_METHODS = ["GET", "PUT", "POST", "PATCH", "DELETE"]


def _refuse() -> RawResponse:
    return json_response(403, ApiError("forbidden", "This link is not valid for this request; ask for a new one.").body())


def mount(app: FastAPI, engine: Engine) -> None:
    ws = engine.ws

    @app.api_route("/blobs/upload/{token}", methods=OTHER_METHODS)
    async def upload(token: str, request: Request) -> RawResponse:
        if request.method != "PUT":
            return _refuse()
        try:
            await run_engine(doors.verify_transfer, ws, token, "PUT")   # refuse before reading the body
            body = await spool_body(request, fmt.MAX_PACKED)   # a temp file past 1 MiB, never whole in memory
            try:
                out = await run_engine(doors.receive_upload, ws, token, body)
            finally:
                body.close()
        except ApiError as e:
            return json_response(e.status, e.body())
        return json_response(200, out)

    @app.api_route("/blobs/download/{token}", methods=OTHER_METHODS)
    async def download(token: str, request: Request) -> RawResponse:
        if request.method != "GET":
            return _refuse()
        try:
            out = await run_engine(doors.serve_download, ws, token)
        except ApiError as e:
            return json_response(e.status, e.body())
        return StreamingResponse(out.chunks, media_type=out.content_type, headers={
            "Content-Disposition": content_disposition(out.filename), "Cache-Control": "no-store",
            **out.size_headers})


def content_disposition(name: str) -> str:
    """An attachment header for any file name: headers are latin-1, so an ASCII fallback plus the
    UTF-8 name in RFC 5987 form (a bundle file may be called `references/技能.md`)."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "_" for c in name) or "download"
    return f"attachment; filename=\"{safe}\"; filename*=UTF-8''{quote(name, safe='')}"
