"""The access log as plain ASGI around the whole app: one line per request (method, path with
secrets redacted, status, milliseconds), and the contract's 500 body for a bug that escapes a
handler before its response started. (It was a BaseHTTPMiddleware: a task group, memory streams
and events per request, ~18 % of the server's CPU under load.)"""
from __future__ import annotations

import logging
import re
import time
import urllib.parse

from workspacectl.errors import ApiError
from workspacectl.server.api_path import raw_path, send_json

log = logging.getLogger("wsctl.server")
# Path segments that carry one-time secrets: never written to the log.
_SECRET_PATH = re.compile(r"^/(signin|connect|uploads|blobs)/[^?]+")


def redact_path(path: str) -> str:
    """The path for the log, secrets out. Matched on the decoded path with slashes collapsed too:
    '/%62lobs/download/<token>' or '//blobs/<token>' must not write a token out either."""
    decoded = re.sub(r"/+", "/", urllib.parse.unquote(path))
    for candidate in (path, decoded):
        if m := _SECRET_PATH.match(candidate):
            return f"/{m.group(1)}/***"
    if re.search(r"/(signin|connect|uploads|blobs)/", decoded):  # e.g. '/x/../blobs/<token>'
        return "/***"
    return path


class AccessLog:
    """ASGI middleware: see the module docstring."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        status = 500
        response_started = False

        async def send_and_note(message):
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status, response_started = message["status"], True
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        except Exception:  # a bug: answer the contract's body, never a traceback to the client
            log.exception("unhandled error on %s %s", scope["method"], redact_path(raw_path(scope)))
            if response_started:
                raise
            status = 500
            await send_json(send, 500, ApiError("internal", "Internal error; see the server log.").body())
        if log.isEnabledFor(logging.INFO):
            log.info("%s %s %d %.1fms", scope["method"], redact_path(raw_path(scope)), status,
                     (time.perf_counter() - started) * 1000)
