"""Engine.call: the one path every request takes, on every door.

authenticate -> find route -> scope check (before any lookup) -> a limited key's credential gate
(engine/vault/key_limits.py) -> handler -> Response.
"""
from __future__ import annotations

import functools
import json
import re
import sqlite3
import urllib.parse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from workspacectl.engine import registry
from workspacectl.engine.db import (
    OPERATIONAL_ERRORS,
    WouldBlock,
    is_busy,
    on_quick_thread,
    quick_calls,
    refusals_answered,
    refused_write,
    storage_failure,
)
from workspacectl.engine.registry import Caller, Ctx, PublicCtx, Response
from workspacectl.engine.scopes import check_scope
from workspacectl.engine.validate import text_problem
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from datetime import datetime

    from workspacectl.engine.workspaces.folder import Workspace

# Every route module, for the server and the API listing; one request imports only its own.
load_routes = registry.load_all


def check_text(*values: dict) -> None:
    """Path and query values are Unicode text. Over HTTP they always are; in-process a command
    line argument that is not UTF-8 arrives with lone surrogates, which SQLite cannot bind."""
    for d in values:
        for v in d.values():
            try:
                str(v).encode("utf-8")
            except UnicodeEncodeError:
                raise ApiError("invalid_request", "A path or query value is not valid UTF-8 text; "
                                                  "check the arguments for stray bytes.") from None


def check_names(path: str, params: dict) -> None:
    """A path segment names something (an id, a name); none holds a NUL character, so nothing is
    found: 404 on both stores (PostgreSQL cannot even bind one, SQLite would look and miss)."""
    if any("\x00" in v for v in params.values()):
        raise ApiError("not_found", f"Nothing is at {path[:200]}: no id or name holds a NUL character (%00).")


def check_body(body: Any) -> None:
    """A body the server could not parse is reported here, after authentication and the scope
    check (a personal key on a vault route is 403 whatever it sends). JSON may spell lone
    surrogates ("\\ud800") or NUL ("\\u0000"): 400, not a server error, on both stores."""
    if isinstance(body, ApiError):
        raise body
    why = text_problem(body)
    if why == "surrogate":
        raise ApiError("invalid_request", "The request body holds text that is not valid Unicode "
                                          "(a lone surrogate escape); send UTF-8 text.")
    if why == "nul":
        raise ApiError("invalid_request", "The request body holds a NUL character (\\u0000), which stored "
                                          "text may not contain; remove it and retry.")


_UNSAFE_IN_PATH = re.compile(r"[\x00-\x20\x7f]")


def split_path(path: str) -> tuple[str, dict]:
    """'/v1/x?a=1' -> ('/v1/x', {'a': '1'}) (the last value of a repeated key wins).

    Control characters and spaces are percent-encoded first, as an HTTP client would send them:
    urlsplit silently drops tabs and newlines, which made '/v1/trig\\ngers' reach /v1/triggers
    on the local backend while a server answers 404."""
    path = _UNSAFE_IN_PATH.sub(lambda m: f"%{ord(m.group()):02X}", path)
    parsed = urllib.parse.urlsplit(path)
    return parsed.path, dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))


@functools.lru_cache(maxsize=256)   # keys come from clients' paths: bounded
def resolve(method: str, path: str) -> tuple[str, dict, registry.Route | None, dict, bool]:
    """(path, inline query, route or None, path params, path known) of METHOD path: split_path and
    registry.match once per request, though a quick request asks three times (the server's
    quick_route, handle_quick, call); the dicts answered are shared: read them, never change them."""
    path, inline_query = split_path(path)
    return (path, inline_query, *registry.match(method, path))


def _route_for(method: str, path: str) -> tuple[str, dict, registry.Route, dict]:
    """(path, inline query, route, path params) of METHOD path (resolve), or the 404/405."""
    path, inline_query, route, params, known = resolve(method, path)
    if route is None:
        if known:
            allowed = ", ".join(registry.allowed_methods(path))
            raise ApiError("method_not_allowed", f"{method} is not supported on {path}; it takes {allowed}.",
                           headers={"Allow": allowed})
        raise ApiError("not_found", f"No route {method} {path}. See /v1/openapi.json for the routes.")
    return path, inline_query, route, params


Progress = Callable[[str, "int | None", "int | None"], None]   # Ctx.progress: (phase, done, total)


class Engine:
    def __init__(self, ws: Workspace) -> None:
        self.ws = ws

    def authenticate(self, secret: str | None) -> Caller | None:
        """The caller a presented secret names (401 if none), None without one. A store that
        refuses the read (a full or failing disk, a database out of resources) is 503, as a
        handler's refused write is (call); a busy error stays one (the quick path reruns it)."""
        if not secret:
            return None
        from workspacectl.engine.identity.auth import authenticate_secret

        with refusals_answered(storage_failure):
            return authenticate_secret(self.ws.conn(), secret)

    def call(self, caller: Caller | None, method: str, path: str, query: dict | None = None,
             body: Any = None, base_url: str | None = None, progress: Progress | None = None,
             received_at: datetime | None = None) -> Response:
        """progress(phase, done, total), when given, hears how long work goes (Ctx.report)."""
        method = method.upper()
        path, inline_query, route, params = _route_for(method, path)
        query = {**inline_query, **(query or {})}
        check_scope(caller, route.scope)
        handler = registry.handler_for(route)
        # a tail ({path}: the proxy's) stays as sent, percent-encoded: it is forwarded, not looked up
        params = {k: v if k == "path" and route.tail else urllib.parse.unquote(v) for k, v in params.items()}
        if caller is not None and caller.credentials is not None:   # a key limited to named credentials
            from workspacectl.engine.vault import key_limits

            key_limits.gate(caller, route.path, params)
        check_text(params, query)
        check_names(path, params)
        check_body(body)
        ctx: PublicCtx   # check_scope lets no caller through but to a public route
        if caller is not None:
            ctx = Ctx(ws=self.ws, caller=caller, params=params, query=query, body=body, base_url=base_url,
                      progress=progress, received_at=received_at)
        else:
            ctx = PublicCtx(ws=self.ws, caller=None, params=params, query=query, body=body, base_url=base_url,
                            progress=progress, received_at=received_at)
        try:
            result = handler(ctx)
        except OPERATIONAL_ERRORS as e:
            if is_busy(e) and on_quick_thread():   # the quick connection does not wait: an engine thread will
                raise WouldBlock("a busy workspace") from None
            # The write lock held past the busy timeout (409), a disk that refused the write (503).
            if (refused := refused_write(e)) is not None:
                raise refused from None
            raise
        return result if isinstance(result, Response) else Response(200, result)

    @staticmethod
    def quick_route(method: str, path: str) -> str | None:
        """"METHOD /path/{param}" of the quick route (registry.route quick=True) a request is for, or
        None: what the server runs on its event loop (handle_quick), and the label it counts by."""
        route = resolve(method.upper(), path)[2]
        if route is None or not registry.is_quick(route):
            return None
        return f"{route.method} {route.path}"

    def handle_quick(self, conn: sqlite3.Connection, method: str, path: str, query: dict | None, body: Any,
                     secret: str | None, base_url: str | None = None, received_at: datetime | None = None) -> Response:
        """handle() on this thread, which must not wait (the server's event loop), with `conn`
        (Workspace.quick_conn) as the workspace's connection: for a quick route only (registry.route),
        whose work is a few indexed reads and at most one short transaction. Raises WouldBlock,
        with nothing written, for any other route or when the work would wait (the write lock
        held, another process writing, a token refresh): the caller then calls handle() on a
        thread that may wait. Saves the hand-off to an engine thread and back per request."""
        route = resolve(method.upper(), path)[2]
        if route is None or not registry.is_quick(route):
            raise WouldBlock("not a quick route")
        written = conn.total_changes
        before = self.ws.lend_conn(conn)
        try:
            with quick_calls():
                try:
                    return self.handle(method, path, query, body, secret, base_url, received_at=received_at)
                except OPERATIONAL_ERRORS as e:   # a read outside the handler (authentication)
                    if not is_busy(e):
                        raise
                    raise WouldBlock("a busy workspace") from None
        except WouldBlock:
            if conn.total_changes != written:   # never so for the quick routes: never run twice
                busy = ApiError("conflict", "The workspace is busy; retry in a moment.")
                return Response(busy.status, busy.body())
            raise
        finally:
            self.ws.lend_conn(before)

    def precheck(self, method: str, path: str, secret: str | None) -> None:
        """Authentication, route and scope only: what a server checks before it reads a large
        body, so an unauthenticated upload is refused without spooling it."""
        route = _route_for(method.upper(), path)[2]
        check_scope(self.authenticate(secret), route.scope)

    def handle(self, method: str, path: str, query: dict | None, body: Any, secret: str | None,
               base_url: str | None = None, progress: Progress | None = None,
               received_at: datetime | None = None) -> Response:
        """Authenticate a presented secret, then call; every ApiError becomes its error body.
        received_at (a datetime from clock.now()): when the request reached the door (Ctx.received_at)."""
        try:
            return self.call(self.authenticate(secret), method, path, query, body, base_url, progress, received_at)
        except ApiError as e:
            return Response(e.status, e.body(), headers=e.headers)


MAX_BODY_VALUES = 2_000_000


def parse_json_body(raw: bytes) -> Any:
    """JSON bytes -> value; raises ApiError('invalid_request') for bytes that are not JSON
    (including nesting too deep to parse)."""
    if not raw or not raw.strip():
        return None
    # Memory: a body of tiny values ('[{},{},…]') costs ~20 times its size once parsed, so the
    # values are counted (brackets and commas, an upper bound) before the parser builds them.
    if raw.count(b"{") + raw.count(b"[") + raw.count(b",") > MAX_BODY_VALUES:
        raise ApiError("payload_too_large", f"The request body holds more than {MAX_BODY_VALUES:,} JSON values.")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise ApiError("invalid_request", "The request body is not valid JSON.") from None
