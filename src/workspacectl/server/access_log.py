"""The access log as plain ASGI around the whole app: one line per request (method, path with
secrets redacted, status, milliseconds), and the contract's 500 body for a bug that escapes a
handler before its response started. (It was a BaseHTTPMiddleware: a task group, memory streams
and events per request, ~18 % of the server's CPU under load.)"""
from __future__ import annotations

import logging
import re
import sys
import time
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING

from workspacectl.errors import ApiError
from workspacectl.server.api_path import raw_path, send_json

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

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


class _Stamp:
    """logging's default asctime ('2026-11-25 22:09:38,123', local time), its seconds part made
    once per second."""

    def __init__(self) -> None:
        self.second = -1
        self.text = ""

    def now(self) -> str:
        t = time.time()
        second = int(t)
        if second != self.second:
            self.second, self.text = second, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
        return f"{self.text},{int((t - second) * 1000):03d}"


def configure_serve_logging(prefix: str = "") -> Callable[[str], None]:
    """`wsctl serve`'s logging, set up here and nowhere else: INFO and up to stderr, each line
    '<local time,ms> <prefix><logger name> <message>' (`prefix`: 'w2 ' in worker 2 of --workers N).

    Answers the access log's writer: `write(message)` puts one line of that same layout (logger
    wsctl.server) on the same stream, in one write and a flush under the handler's lock as
    StreamHandler.emit does, so it never interleaves with logging's own lines; it skips the
    LogRecord, the caller lookup and the Formatter, ~10 % of a request's held-GIL samples."""
    stream = sys.stderr
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(f"%(asctime)s {prefix}%(name)s %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    stamp = _Stamp()
    head = f" {prefix}{log.name} "

    def write(message: str) -> None:
        line = f"{stamp.now()}{head}{message}\n"
        handler.acquire()
        try:
            stream.write(line)
            stream.flush()
        except Exception:   # as logging: a log that cannot be written never fails the request
            pass
        finally:
            handler.release()

    return write


class AccessLog:
    """ASGI middleware: see the module docstring. `write`: the line writer `wsctl serve` set up
    (configure_serve_logging); without it (the local backend's loopback pages) the line goes
    through logging."""

    def __init__(self, app: ASGIApp, write: Callable[[str], None] | None = None) -> None:
        self.app = app
        self.write = write

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        status = 500
        response_started = False

        async def send_and_note(message: Message) -> None:
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
            ms = (time.perf_counter() - started) * 1000
            # raw_path is the path as sent, percent-encoded: a control character stays %0A, one line
            message = f"{scope['method']} {redact_path(raw_path(scope))} {status} {ms:.1f}ms"
            if self.write is not None:
                self.write(message)
            else:
                log.info("%s", message)
