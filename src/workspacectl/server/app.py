"""FastAPI app: every engine route mounted through one generic handler; web pages beside them.

Handlers here only parse the request, call the engine and serialize; the rules live in engine/.
"""
from __future__ import annotations

import json
import logging
import re
import socket
import sys
import tempfile
import time
import urllib.parse

from fastapi import FastAPI, Request
from fastapi.responses import Response as RawResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from workspacectl.engine.dispatch import Engine, load_routes, parse_json_body
from workspacectl.engine.registry import Response
from workspacectl.errors import ApiError

MAX_JSON_BODY = 64 * 1024 * 1024
# Binary uploads (tar.gz bundles) are spooled to a temp file and handed to the engine as a
# stream, which applies its own tighter limits (engine/projects/files.py LIMITS).
STREAM_TYPES = {"application/gzip", "application/x-gzip"}
MAX_STREAM_BODY = 2 * 1024 * 1024 * 1024
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
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


def json_response(status: int, body) -> RawResponse:
    if status == 204 or body is None:
        return RawResponse(status_code=status)
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    return RawResponse(content=data, status_code=status, media_type="application/json")


def to_http(resp: Response) -> RawResponse:
    if resp.stream is not None:
        return StreamingResponse(resp.stream, status_code=resp.status, media_type=resp.content_type,
                                 headers=resp.headers)
    if resp.content_type != "application/json":
        return RawResponse(content=resp.body, status_code=resp.status, media_type=resp.content_type,
                           headers=resp.headers)
    out = json_response(resp.status, resp.body)
    out.headers.update(resp.headers)
    return out


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ApiError("payload_too_large", f"The request body is over {limit // (1024 * 1024)} MiB.")
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ApiError("payload_too_large", f"The request body is over {limit // (1024 * 1024)} MiB.")
            chunks.append(chunk)
    except ClientDisconnect:  # the body was cut off (or badly framed): not a server error
        raise ApiError("invalid_request", "The request body ended early.") from None
    return b"".join(chunks)


def is_stream_type(content_type: str) -> bool:
    return content_type.split(";")[0].strip().lower() in STREAM_TYPES


async def spool_body(request: Request, limit: int):
    """A binary upload (a tar.gz bundle) into a temp file, spilling to disk past 1 MiB: the
    engine reads it as a stream and applies its own limits. Over `limit` bytes: 413."""
    declared = request.headers.get("content-length")
    too_large = ApiError("payload_too_large", f"The upload is over {limit // (1 << 20)} MiB; split it.")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large
    f = tempfile.SpooledTemporaryFile(max_size=1 << 20)
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise too_large
            f.write(chunk)
    except ClientDisconnect:
        f.close()
        raise ApiError("invalid_request", "The request body ended early.") from None
    except BaseException:
        f.close()
        raise
    f.seek(0)
    return f


def engine_path(request: Request) -> str:
    """The path as sent, still percent-encoded. The engine decodes path parameters itself, as it
    does for the local backend; handing it the decoded path would decode twice ('%2541' -> 'A')
    and split an id holding an encoded '/'."""
    raw = request.scope.get("raw_path")
    return raw.decode("latin-1") if raw else urllib.parse.quote(request.url.path)


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def base_url_of(request: Request, public_url: str | None) -> str:
    return (public_url or str(request.base_url)).rstrip("/")


def create_app(engine: Engine, public_url: str | None = None) -> FastAPI:
    app = FastAPI(title="workspacectl", openapi_url=None, docs_url=None, redoc_url=None)
    app.state.engine = engine
    app.state.public_url = public_url

    @app.middleware("http")
    async def access_log(request: Request, call_next):
        started = time.perf_counter()
        try:
            response = await call_next(request)
        except Exception:  # a bug: answer the contract's body, never a traceback to the client
            log.exception("unhandled error on %s %s", request.method, redact_path(engine_path(request)))
            response = json_response(500, ApiError("internal", "Internal error; see the server log.").body())
        log.info("%s %s %d %.1fms", request.method, redact_path(engine_path(request)), response.status_code,
                 (time.perf_counter() - started) * 1000)
        return response

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        code = {404: "not_found", 405: "not_found", 413: "payload_too_large"}.get(exc.status_code, "invalid_request")
        return json_response(exc.status_code, ApiError(code, str(exc.detail), status=exc.status_code).body())

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError):
        return json_response(exc.status, exc.body())

    @app.get("/healthz")
    async def healthz():
        return {"ok": True}

    @app.api_route("/v1/{rest:path}", methods=METHODS)
    async def api(request: Request, rest: str):
        ctype = request.headers.get("content-type", "")
        if is_stream_type(ctype):
            try:  # refuse a stranger before spooling up to MAX_STREAM_BODY to disk
                await run_in_threadpool(engine.precheck, request.method, engine_path(request), bearer(request))
            except ApiError as e:
                refused = json_response(e.status, e.body())
                refused.headers["Connection"] = "close"  # the unread body is not worth draining
                return refused
            body = await spool_body(request, MAX_STREAM_BODY)  # a temp file the engine reads
        else:
            raw = await read_body(request, MAX_JSON_BODY)
            try:
                body = raw if raw and "json" not in ctype and not raw.lstrip().startswith((b"{", b"[")) else parse_json_body(raw)
            except ApiError as e:
                body = e  # answered by the engine after authentication and the scope check
        try:
            resp = await run_in_threadpool(engine.handle, request.method, engine_path(request),
                                           dict(request.query_params), body, bearer(request),
                                           base_url_of(request, app.state.public_url))
        finally:
            if isinstance(body, tempfile.SpooledTemporaryFile):
                body.close()
        return to_http(resp)

    from workspacectl.server import web

    web.mount(app, engine)
    from workspacectl.server import skill_transfer_pages

    skill_transfer_pages.mount(app, engine)
    from workspacectl.server import docs_page

    docs_page.mount(app)
    return app


def listen_socket(host: str, port: int) -> socket.socket:
    """Bind before uvicorn starts: a busy port or an unknown host is then an OSError the CLI
    reports in one line (uvicorn would log it and exit 3, the CLI's code for unauthenticated)."""
    family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                       flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
    except OSError:
        sock.close()
        raise
    return sock


def _sweep_abandoned_stages(ws) -> None:
    """Staged uploads of requests killed with an earlier server go now, not at the next hourly
    housekeeping (kill -9 drills left hundreds of MB); folders other live processes use stay."""
    removed = ws.blob_store.remove_abandoned_stages()
    if removed:
        log.info("housekeeping: removed %d abandoned stage folders", removed)


def serve(workspace_path, sock: socket.socket, public_url: str | None = None,
          memory_interval: float | None = None) -> None:
    import uvicorn

    from workspacectl.engine.workspaces import open_workspace

    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    from workspacectl.engine.vault.outbound import quiet_library_loggers

    quiet_library_loggers()   # the HTTP library logs whole URLs (a key may be in the query) at INFO
    ws = open_workspace(str(workspace_path))
    _sweep_abandoned_stages(ws)
    load_routes()   # every route module now, so no first request pays for an import
    engine = Engine(ws)
    app = create_app(engine, public_url)
    from workspacectl.server.memory_timer import resolve_interval, start_memory_timer

    start_memory_timer(ws, resolve_interval(memory_interval))
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"wsctl serving {ws.shown} on http://{shown}:{port}", file=sys.stderr, flush=True)
    from workspacectl.server.http_protocol import ContractH11Protocol

    config = uvicorn.Config(app, http=ContractH11Protocol, access_log=False, log_level="warning",
                            server_header=False)
    uvicorn.Server(config).run(sockets=[sock])
