"""FastAPI app: every engine route mounted through one generic handler; web pages beside them.

Handlers here only parse the request, call the engine and serialize; the rules live in engine/.
"""
from __future__ import annotations

import contextlib
import logging
import socket
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response as RawResponse

from workspacectl.engine.doors import Engine, load_routes
from workspacectl.errors import ApiError
from workspacectl.server.access_log import AccessLog, configure_serve_logging, redact_path  # noqa: F401 (redact_path: tests)
from workspacectl.server.api_path import MAX_JSON_BODY, LeanApi, bearer_of, json_response, raw_path, to_http  # noqa: F401
from workspacectl.server.spool import spool_body

if TYPE_CHECKING:
    from workspacectl.engine.doors import Workspace

# Binary uploads (tar.gz bundles) are spooled to a temp file and handed to the engine as a
# stream, which applies its own tighter limits (engine/projects/files.py LIMITS).
MAX_STREAM_BODY = 2 * 1024 * 1024 * 1024
BACKLOG = 2048          # uvicorn's default
GRACEFUL_SECONDS = 10   # on SIGTERM, requests in flight get this long to finish
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
log = logging.getLogger("wsctl.server")


def engine_path(request: Request) -> str:
    """The path as sent, still percent-encoded. The engine decodes path parameters itself, as it
    does for the local backend; handing it the decoded path would decode twice ('%2541' -> 'A')
    and split an id holding an encoded '/'."""
    return raw_path(request.scope)


def bearer(request: Request) -> str | None:
    return bearer_of(request.headers.get("authorization", ""))


def base_url_of(request: Request, public_url: str | None) -> str:
    return (public_url or str(request.base_url)).rstrip("/")


def error_response(e: ApiError) -> RawResponse:
    """An ApiError as its JSON answer, with its headers (the `Allow` of a 405)."""
    out = json_response(e.status, e.body())
    out.headers.update(e.headers)
    return out


def http_layer_error(request: Request, exc: StarletteHTTPException) -> ApiError:
    """What the HTTP layer refused (an unknown path, a method no route of the path has, a body too
    large) as the contract's error. A 405 names the methods the path takes, in its message and its
    `Allow` header; on /v1 they are the engine's routes of that path (HEAD, OPTIONS and other
    methods the lean path does not take end here), elsewhere the page's own."""
    status = exc.status_code
    if status == 405:
        path = request.url.path
        allowed = (exc.headers or {}).get("Allow", "")
        if path.startswith("/v1/"):
            from workspacectl.engine.doors import allowed_methods, split_path

            methods = allowed_methods(split_path(engine_path(request))[0])
            if not methods:
                return ApiError("not_found", f"No route {request.method} {path[:200]}. "
                                             "See /v1/openapi.json for the routes.")
            allowed = ", ".join(methods)
        return ApiError("method_not_allowed", f"{request.method} is not supported on {path[:200]}; "
                                              f"it takes {allowed}.", headers={"Allow": allowed})
    code = {404: "not_found", 413: "payload_too_large"}.get(status, "invalid_request")
    return ApiError(code, str(exc.detail), status=status)


def create_app(engine: Engine, public_url: str | None = None, worker: int | None = None,
               on_shutdown: Callable[[], None] | None = None, on_ready: Callable[[], None] | None = None,
               access_write: Callable[[str], None] | None = None) -> AccessLog:
    """The ASGI app: the access log around the lean /v1 path (server/api_path.py), around FastAPI
    for the rest. `worker`: this process's number among `wsctl serve --workers N` (N > 1), which
    /healthz answers so a client can tell the workers apart (a number, not a pid). `on_ready` runs
    once the server starts taking requests; `on_shutdown` runs (in a thread) once it stops, before
    the process exits. `access_write`: the access log's line writer `serve` set up with its logging
    (access_log.configure_serve_logging); without it the access log goes through logging."""
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if on_ready is not None:
            on_ready()
        yield
        await agents.close()
        lean.close()
        if on_shutdown is not None:
            await run_in_threadpool(on_shutdown)

    app = FastAPI(title="workspacectl", openapi_url=None, docs_url=None, redoc_url=None, lifespan=lifespan)
    health = {"ok": True} if worker is None else {"ok": True, "worker": worker}
    app.state.engine = engine
    app.state.public_url = public_url

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> RawResponse:
        err = http_layer_error(request, exc)
        return error_response(err)

    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> RawResponse:
        return error_response(exc)

    @app.get("/healthz", response_model=None)   # the dict as it is, no response model
    async def healthz() -> dict:
        """Liveness: the process answers (whatever its database does)."""
        return health

    @app.get("/readyz", response_model=None)
    async def readyz() -> dict:
        """Readiness: 200 while the workspace's database answers, 503 (Retry-After) while it does not
        (Workspace.ready: on PostgreSQL an answer seen in the last second or so, else one probe
        shared by every caller, waited for about a second)."""
        if await run_in_threadpool(engine.ws.ready):
            return health
        raise ApiError("unreachable", "The workspace's database does not answer; this server cannot serve "
                                      "requests now. Retry later.")

    @app.api_route("/v1/{rest:path}", methods=METHODS)
    async def api_upload(request: Request, rest: str) -> RawResponse:
        """gzip uploads only: every other /v1 request is answered by api_path.LeanApi first."""
        try:  # refuse a stranger before spooling up to MAX_STREAM_BODY to disk
            await run_in_threadpool(engine.precheck, request.method, engine_path(request), bearer(request))
        except ApiError as e:
            refused = error_response(e)
            refused.headers["Connection"] = "close"  # the unread body is not worth draining
            return refused
        body = await spool_body(request, MAX_STREAM_BODY)  # a temp file the engine reads
        try:
            resp = await run_in_threadpool(engine.handle, request.method, engine_path(request),
                                           dict(request.query_params), body, bearer(request),
                                           base_url_of(request, app.state.public_url))
        finally:
            body.close()
        return to_http(resp)

    from workspacectl.server import web

    web.mount(app, engine)
    from workspacectl.server import skill_transfer_pages

    skill_transfer_pages.mount(app, engine)
    from workspacectl.server import docs_page

    docs_page.mount(app)
    from workspacectl.server.mcp_http import McpHttp

    agents = McpHttp(engine, public_url)   # the agent door, MCP over streamable HTTP (docs/mcp.md)
    from starlette.routing import Route

    app.router.routes.append(Route("/mcp", agents, methods=["GET", "POST", "DELETE"], include_in_schema=False))
    from workspacectl.server import proxy_stream
    from workspacectl.server.page_headers import StrictHeaders

    lean = LeanApi(engine, StrictHeaders(app), public_url, proxy=proxy_stream.answer)
    agents.run = lean.pool.run
    return AccessLog(lean, access_write)


def listen_socket(host: str, port: int) -> socket.socket:
    """Bind and listen before uvicorn starts: a busy port or an unknown host is then an OSError the
    CLI reports in one line (uvicorn would log it and exit 3, the CLI's code for unauthenticated),
    and from the moment `wsctl serving … on URL` is printed a connection waits in the backlog
    instead of being refused (the workers of --workers N start after that line)."""
    family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                       flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    return sock


def _sweep_abandoned_stages(ws: Workspace) -> None:
    """Staged uploads of requests killed with an earlier server go now, not at the next hourly
    housekeeping (kill -9 drills left hundreds of MB); folders other live processes use stay."""
    removed = ws.blob_store.remove_abandoned_stages()
    if removed:
        log.info("housekeeping: removed %d abandoned stage folders", removed)


def announce(ws_shown: str, sock: socket.socket, workers: int = 1) -> None:
    """The line naming the workspace (a PostgreSQL URL without its password) and the address."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    several = f" with {workers} workers" if workers > 1 else ""
    print(f"wsctl serving {ws_shown} on http://{shown}:{port}{several}", file=sys.stderr, flush=True)


def serve(workspace_path: str, sock: socket.socket, public_url: str | None = None,
          memory_interval: float | None = None, worker: int | None = None,
          on_ready: Callable[[], None] | None = None) -> None:
    """Serve until SIGTERM or SIGINT. `worker` is set in a worker of `wsctl serve --workers N`
    (server/workers.py), whose parent announced the address and hears `on_ready`."""
    import uvicorn

    from workspacectl.engine.doors import open_workspace

    access_write = configure_serve_logging("" if worker is None else f"w{worker} ")
    from workspacectl.engine.doors import quiet_library_loggers

    quiet_library_loggers()   # the HTTP library logs whole URLs (a key may be in the query) at INFO
    ws = open_workspace(str(workspace_path))
    _sweep_abandoned_stages(ws)
    ws.close()   # the sweep's connection: this thread now runs the event loop (quick routes have their own)
    load_routes()   # every route module now, so no first request pays for an import
    engine = Engine(ws)
    from workspacectl.server.memory_timer import resolve_interval, start_memory_timer
    from workspacectl.server.webhook_worker import start_webhook_worker

    timer = start_memory_timer(ws, resolve_interval(memory_interval))
    webhooks = start_webhook_worker(ws)

    def on_shutdown() -> None:
        webhooks.stop()
        timer.stop()

    # uvicorn re-raises SIGTERM once it has shut down (the process then ends by the signal), so
    # the timer is stopped and its lease handed on in the app's shutdown, not after run().
    app = create_app(engine, public_url, worker, on_shutdown=on_shutdown, on_ready=on_ready,
                     access_write=access_write)
    if worker is None:
        announce(ws.shown, sock)
    from workspacectl.server.http_protocol import ContractH11Protocol

    config = uvicorn.Config(app, http=ContractH11Protocol, access_log=False, log_level="warning",
                            server_header=False, timeout_graceful_shutdown=GRACEFUL_SECONDS)
    uvicorn.Server(config).run(sockets=[sock])
