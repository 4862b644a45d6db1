"""The lean request path: `/v1` JSON requests answered straight from the engine, and the access log,
as plain ASGI in front of the FastAPI app (which keeps /healthz, the web pages, presigned
transfers and gzip uploads).

Why plain ASGI: under wrk, with the GIL held by one thread at a time, a whoami spent ~5 % of the
process's CPU in the engine and the rest around it: the access log as a BaseHTTPMiddleware (a
task group, memory streams and events per request, ~18 %), FastAPI's routing and parameter
solving (~26 %), anyio's thread hop (~8 %). Here a request is read from `receive`, handed to
one thread of a plain executor (the engine's SQLite calls block, and an OAuth refresh may call a
provider, so the event loop never runs them) and answered with one `send` of the whole body.
The rules are the engine's; what the FastAPI route did (body limits, deferred JSON errors,
percent-encoded paths, Bearer parsing, the base URL) is done here the same way.
"""
from __future__ import annotations

import functools
import json
import logging
import threading
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from workspacectl import clock
from workspacectl.engine.doors import QuickWriter, Response, parse_json_body
from workspacectl.errors import ApiError
from workspacectl.formats.proxy_path import split_proxy_path
from workspacectl.server.engine_pool import EnginePool

if TYPE_CHECKING:
    from starlette.responses import Response as RawResponse
    from starlette.types import ASGIApp, Receive, Scope, Send

    from workspacectl.engine.doors import Engine

log = logging.getLogger("wsctl.server")

MAX_JSON_BODY = 64 * 1024 * 1024
METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
STREAM_TYPES = {"application/gzip", "application/x-gzip"}
NDJSON = "application/x-ndjson"   # an Accept asking for progress lines (server/progress_stream.py)


def is_stream_type(content_type: str) -> bool:
    return content_type.split(";", maxsplit=1)[0].strip().lower() in STREAM_TYPES


def json_bytes(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def header(scope: Scope, name: bytes) -> str:
    """The first value of a request header (names arrive lower-cased), decoded as Starlette does."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return ""


def bearer_of(authorization: str) -> str | None:
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def raw_path(scope: Scope) -> str:
    """The path as sent, still percent-encoded: the engine decodes path parameters itself, as it
    does for the local backend; the decoded path would decode twice ('%2541' -> 'A') and split
    an id holding an encoded '/'."""
    raw = scope.get("raw_path")
    return raw.decode("latin-1") if raw else urllib.parse.quote(scope["path"])


@functools.lru_cache(maxsize=256)
def _base_url(scheme: str, host: str, server: tuple | None, root_path: str) -> str:
    """What Starlette's `request.base_url` answers, without the slash (a bounded cache: the Host
    header is the client's, so only its last 256 values are kept)."""
    from starlette.requests import Request

    scope = {"type": "http", "scheme": scheme, "server": server, "root_path": root_path, "path": "/",
             "query_string": b"", "headers": [(b"host", host.encode("latin-1"))] if host else []}
    return str(Request(scope).base_url).rstrip("/")


def base_url(scope: Scope, public_url: str | None) -> str:
    if public_url:
        return public_url.rstrip("/")
    server = scope.get("server")
    return _base_url(scope.get("scheme", "http"), header(scope, b"host"), tuple(server) if server else None,
                     scope.get("app_root_path", scope.get("root_path", "")))


def headers_for(status: int, content_type: str | None, body: bytes, extra: dict) -> list:
    """Starlette's Response headers: content-length except for 1xx/204/304, then the route's own."""
    out = []
    if not (status < 200 or status in (204, 304)):
        out.append((b"content-length", str(len(body)).encode()))
    if content_type:
        out.append((b"content-type", content_type.encode("latin-1")))
    out += [(k.lower().encode("latin-1"), str(v).encode("latin-1")) for k, v in extra.items()]
    return out


def json_response(status: int, body: Any) -> RawResponse:
    """A Starlette response of a JSON body (for the FastAPI routes and streamed answers)."""
    from starlette.responses import Response as RawResponse

    if status == 204 or body is None:
        return RawResponse(status_code=status)
    return RawResponse(content=json_bytes(body), status_code=status, media_type="application/json")


def to_http(resp: Response) -> RawResponse:
    """An engine Response as a Starlette response."""
    from starlette.responses import Response as RawResponse
    from starlette.responses import StreamingResponse

    if resp.stream is not None:
        return StreamingResponse(resp.stream, status_code=resp.status, media_type=resp.content_type,
                                 headers=resp.headers)
    if resp.content_type != "application/json":
        return RawResponse(content=resp.body, status_code=resp.status, media_type=resp.content_type,
                           headers=resp.headers)
    out = json_response(resp.status, resp.body)
    out.headers.update(resp.headers)
    return out


async def send_json(send: Send, status: int, body: Any) -> None:
    data = b"" if status == 204 or body is None else json_bytes(body)
    await send({"type": "http.response.start", "status": status,
                "headers": headers_for(status, "application/json" if data else None, data, {})})
    await send({"type": "http.response.body", "body": data})


async def read_body(receive: Receive, declared: str, limit: int) -> bytes:
    """The whole request body; 413 past `limit` (declared or read), 400 when it ends early."""
    too_large = ApiError("payload_too_large", f"The request body is over {limit // (1024 * 1024)} MiB.")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ApiError("invalid_request", "The request body ended early.")
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise too_large
            chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def body_value(raw: bytes, content_type: str) -> Any:
    """What the engine gets: raw bytes for a non-JSON body, else the parsed value, or the parse
    error itself (answered by the engine after authentication and the scope check)."""
    if raw and "json" not in content_type and not raw.lstrip().startswith((b"{", b"[")):
        return raw
    try:
        return parse_json_body(raw)
    except ApiError as e:
        return e


class LeanApi:
    """ASGI: `/v1/...` requests with a JSON (or no) body go to the engine directly; everything else
    (gzip uploads, /healthz, web pages, other methods) to `fallback`, the FastAPI app."""

    def __init__(self, engine: Engine, fallback: ASGIApp, public_url: str | None = None,
                 proxy: Callable[[LeanApi, Scope, Receive, Send], Awaitable[None]] | None = None) -> None:
        self.engine = engine
        self.proxy = proxy   # server/proxy_stream.answer: the credential proxy's requests
        self.fallback = fallback
        self.public_url = public_url
        self.pool = EnginePool(core=engine.ws.engine_threads, on_thread_exit=engine.ws.close)
        # Quick routes are answered on the event loop's thread, with a connection of its own (made
        # at the first request, used by that thread only): engine/db/quick.py QuickWriter; SQLite only.
        self.writer: QuickWriter | None = None
        self.quick_thread: int | None = None

    def _writer(self) -> QuickWriter | None:
        if self.quick_thread is None:
            make = getattr(self.engine.ws, "quick_conn", None)
            conn = make() if make is not None else None
            self.quick_thread = threading.get_ident()
            if conn is not None:
                self.writer = QuickWriter(conn, self.pool.submit, self.engine.ws.conn)
        return self.writer if self.quick_thread == threading.get_ident() else None

    def close(self) -> None:
        """At shutdown: the quick connection closed, and one line of how the quick calls ended (on
        the loop, after waiting for the write lock, on the engine pool and why) and of the WAL
        checkpoints: the bench (bench/server_path.py) reads it."""
        if self.writer is not None:
            log.info("quick path counts %s", self.writer.summary())
            self.writer.conn.close()
            self.writer = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (self.proxy is not None and scope["type"] == "http" and scope["path"].startswith("/v1/credentials/")
                and scope["method"] in METHODS and split_proxy_path(raw_path(scope)) is not None):
            return await self.proxy(self, scope, receive, send)   # bodies streamed both ways
        if (scope["type"] != "http" or not scope["path"].startswith("/v1/") or scope["method"] not in METHODS
                or is_stream_type(header(scope, b"content-type"))):
            return await self.fallback(scope, receive, send)
        received = clock.now()   # the request's arrival: what a token refresh is decided against (Ctx.received_at)
        content_type = header(scope, b"content-type")
        try:
            raw = await read_body(receive, header(scope, b"content-length"), MAX_JSON_BODY)
        except ApiError as e:
            return await send_json(send, e.status, e.body())
        body = body_value(raw, content_type)
        query = dict(urllib.parse.parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True))
        args = (scope["method"], raw_path(scope), query, body, bearer_of(header(scope, b"authorization")),
                base_url(scope, self.public_url))
        call = functools.partial(self.engine.handle, *args, received_at=received)
        if NDJSON in header(scope, b"accept"):   # long work with its phases (server/progress_stream.py)
            from workspacectl.server import progress_stream

            return await progress_stream.answer(self.pool, send, call, lambda r: self.reply(scope, receive, send, r))
        resp: Response | None = None
        if (writer := self._writer()) is not None and (label := self.engine.quick_route(*args[:2])) is not None:
            try:   # a quick route, answered here (Engine.handle_quick), or None: on an engine thread
                resp = await writer.run(functools.partial(self.engine.handle_quick, writer.conn, *args, received_at=received),
                                        label)
            except ApiError as e:   # the write lock held past the busy timeout, a refused commit
                resp = Response(e.status, e.body(), headers=e.headers)
        if resp is None:
            resp = await self.pool.run(call)
        await self.reply(scope, receive, send, resp)

    @staticmethod
    async def reply(scope: Scope, receive: Receive, send: Send, resp: Response) -> None:
        """Send an engine answer: a JSON body in one `send`, anything else through Starlette."""
        if resp.stream is None and resp.content_type == "application/json":
            data = b"" if resp.status == 204 or resp.body is None else json_bytes(resp.body)
            await send({"type": "http.response.start", "status": resp.status,
                        "headers": headers_for(resp.status, "application/json" if data else None, data,
                                               resp.headers)})
            await send({"type": "http.response.body", "body": data})
            return
        await to_http(resp)(scope, receive, send)


