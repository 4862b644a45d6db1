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


class _Stamp:
    """logging's default asctime ('2026-11-25 22:09:38,123', local time), its seconds part made
    once per second."""

    def __init__(self):
        self.second = -1
        self.text = ""

    def now(self) -> str:
        t = time.time()
        second = int(t)
        if second != self.second:
            self.second, self.text = second, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
        return f"{self.text},{int((t - second) * 1000):03d}"


class AccessLog:
    """ASGI middleware: see the module docstring.

    `line_format`: the format `wsctl serve` gave logging.basicConfig ('%(asctime)s w1 %(name)s
    %(message)s'). While that configuration stands (the root's one handler, nothing on the way),
    the line is written to that handler's stream as that handler would have written it, in one
    write under its lock, without a LogRecord, a caller lookup and a Formatter per request (they
    were ~10 % of a request's held-GIL samples). Otherwise, or without line_format, through logging."""

    def __init__(self, app, line_format: str | None = None):
        self.app = app
        self.handler: logging.StreamHandler | None = None
        self.prefix = ""
        self.stamp = _Stamp()
        if line_format is None or "%(asctime)s " not in line_format or not line_format.endswith("%(message)s"):
            return
        handlers = logging.root.handlers
        head = line_format[:-len("%(message)s")]
        if (len(handlers) == 1 and type(handlers[0]) is logging.StreamHandler and handlers[0].formatter is not None
                and handlers[0].formatter._fmt == line_format and not handlers[0].filters):
            self.handler = handlers[0]
            self.head_before, self.head_after = head.split("%(asctime)s", 1)
            self.head_after = self.head_after.replace("%(name)s", log.name)
            if "%(" in self.head_before + self.head_after:   # another field: leave it to logging
                self.handler = None

    def _direct(self) -> logging.StreamHandler | None:
        """The handler to write to directly, while the configuration seen at the start stands."""
        h = self.handler
        if (h is None or logging.root.handlers != [h] or log.handlers or log.filters or not log.propagate
                or log.disabled or logging.root.filters or h.level > logging.INFO):
            return None
        return h

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
            ms = (time.perf_counter() - started) * 1000
            if (h := self._direct()) is not None:
                line = (f"{self.head_before}{self.stamp.now()}{self.head_after}{scope['method']} "
                        f"{redact_path(raw_path(scope))} {status} {ms:.1f}ms\n")
                with h.lock:   # as StreamHandler.emit: one write and a flush, under the handler's lock
                    try:
                        h.stream.write(line)
                        h.stream.flush()
                    except Exception:   # as logging: a log that cannot be written never fails the request
                        pass
            else:
                log.info("%s %s %d %.1fms", scope["method"], redact_path(raw_path(scope)), status, ms)
