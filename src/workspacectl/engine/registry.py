"""Routes: @route declares an API operation once, beside its handler; match() finds the route of a request.

One declaration holds a route's method, path, scope, request body, query parameters, answers,
summary and handler. What must be known before a handler's module is imported (the scope, checked
before anything is looked up, and the module to import) is in engine/route_index.py, generated from
the declarations by `python -m workspacectl.engine.route_gen`; tests/core/test_route_index.py fails
when it is stale, and a declaration the index does not match is an error at import.
/v1/openapi.json is built from the declarations themselves (engine/openapi/routes.py).
"""
from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from workspacectl import clock
from workspacectl.engine.route_index import ROUTE_INDEX

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn
    from workspacectl.engine.workspaces.folder import Workspace


@dataclass(frozen=True)
class Caller:
    """Who a request acts as. kind: session | platform | personal; key_id: the secret's id."""

    member_id: str
    role: str
    kind: str
    key_id: str
    scopes: tuple[str, ...] = ()
    # The credential ids a limited platform key reaches (engine/vault/key_limits.py); None: no limit.
    credentials: frozenset[str] | None = None
    # What authentication read beside the secret (store.identity._FIND_SECRET): the member as the
    # API shows one and the workspace's name, so whoami reads nothing more. None where not read.
    whoami: dict | None = field(default=None, compare=False, repr=False)

    @property
    def is_session(self) -> bool:
        return self.kind == "session"

    @property
    def is_admin(self) -> bool:
        return self.role in ("owner", "admin")


@dataclass
class Response:
    status: int = 200
    body: Any = None
    stream: Iterable[bytes] | None = None
    content_type: str = "application/json"
    headers: dict = field(default_factory=dict)
    # Sent as they are, in order, repeats kept, instead of content_type and headers (the proxy's
    # upstream answer); `stream` then may have close(), which the door calls when it is done.
    header_list: list[tuple[str, str]] | None = None


@dataclass
class RawRequest:
    """A request the engine forwards as it came (the credential proxy, engine/vault/proxy.py),
    built by each door: its headers (names lower-cased, values as the bytes decoded by latin-1,
    as an ASGI server hands them), its query string as sent, and its body as a stream whose
    read(n) answers at most n bytes and b"" at the end (None: no body). `length`: the body's
    declared size, when known."""

    headers: list[tuple[str, str]]
    query_string: str = ""
    body: Any = None
    length: int | None = None

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k == name), None)


@dataclass(kw_only=True)
class PublicCtx:
    """What a handler of a public route gets (no key needed: the caller may be None)."""

    ws: Workspace
    caller: Caller | None
    params: dict[str, str]
    query: dict[str, Any]   # text from every door, though an in-process caller's dict is not checked for it
    body: Any
    base_url: str | None = None
    progress: Callable[[str, int | None, int | None], None] | None = None   # (phase, done, total), for long work
    # When the request arrived at the door (a server: before it read the body or queued the work for
    # an engine thread); None in-process, where the call itself is the arrival.
    received_at: datetime | None = None

    @property
    def db(self) -> Conn:
        return self.ws.conn()

    def report(self, phase: str, done: int | None = None, total: int | None = None) -> None:
        """Tell the door how long work goes (catalog import: read, resolve, index). The door
        decides whether and how to show it; the engine never prints."""
        if self.progress is not None:
            self.progress(phase, done, total)

    def now(self) -> datetime:
        return clock.now()


@dataclass(kw_only=True)
class Ctx(PublicCtx):
    """What a handler of every other route gets: the scope check has passed, so there is a caller."""

    caller: Caller


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    scope: str
    segments: int           # a request path matches only templates with as many segments
                            # (a tail template, ending in /{path}, those with as many or more)

    @property
    def tail(self) -> bool:
        """The last parameter takes the rest of the path, slashes and all (the proxy's {path})."""
        return self.path.endswith(TAIL)

    @property
    def regex(self) -> re.Pattern:
        return _compile(self.path)


_PARAM = re.compile(r"\{(\w+)\}")
TAIL = "/{path}"   # a template ending so matches any rest of the path (left percent-encoded)


@functools.cache
def _compile(path: str) -> re.Pattern:
    """Compiled on first use: a command matches a handful of templates, not all of them."""
    parts = [f"(?P<{m.group(1)}>[^/]+)" if (m := _PARAM.fullmatch(seg)) else re.escape(seg)
             for seg in path.split("/")]
    if path.endswith(TAIL):
        parts[-1] = "(?P<path>.*)"
    return re.compile("^" + "/".join(parts) + "$")


def _specificity(path: str) -> tuple[int, tuple[bool, ...]]:
    """Sort key: more literal segments first; between as many, the one whose first parameter comes
    later ('/v1/skills/platform/{name}' before '/v1/skills/{id}/files')."""
    params = tuple(bool(_PARAM.fullmatch(seg)) for seg in path.split("/"))
    return -params.count(False), params


ROUTES: list[Route] = sorted(
    (Route(m, p, scope, p.count("/"))
     for (m, p), (scope, _module) in ROUTE_INDEX.items()),
    key=lambda r: (_specificity(r.path), r.path, r.method),
)
Handler = TypeVar("Handler", bound=Callable[..., Any])


@dataclass(frozen=True, kw_only=True)
class Declaration:
    """One route as declared by @route: everything the doors and /v1/openapi.json know of it."""

    method: str
    path: str
    scope: str
    handler: Callable[..., Any]
    quick: bool = False
    summary: str | None = None   # one sentence for the API reference; default: the handler's docstring
    body: dict | None = None     # the JSON request body's schema; None: the route takes no body
    body_required: bool = True
    raw_body: bool = False       # also takes the document itself as text/plain (catalog import)
    query: tuple[dict, ...] = ()  # query parameters, as OpenAPI parameter objects
    responses: dict[int, dict | None] = field(default_factory=lambda: {200: None})  # status -> schema (None: no body)

    @property
    def module(self) -> str:
        return self.handler.__module__


DECLARED: dict[tuple[str, str], Declaration] = {}
HANDLERS: dict[tuple[str, str], Callable[..., Any]] = {}
QUICK: set[tuple[str, str]] = set()
# engine/route_gen.py turns this off while it collects the declarations the index is made from.
CHECK_INDEX = True
REGENERATE = "python -m workspacectl.engine.route_gen"


def route(method: str, path: str, *, scope: str, quick: bool = False, summary: str | None = None,
          body: dict | None = None, body_required: bool = True, raw_body: bool = False,
          query: Iterable[dict] = (), responses: dict[int, dict | None] | None = None
          ) -> Callable[[Handler], Handler]:
    """Declare the route METHOD path, answered by the decorated handler.

    scope: scopes.PUBLIC | AUTHENTICATED | SESSION or a key scope ("vault:read"); checked by the door
    before the handler runs. body / query / responses: what /v1/openapi.json says it takes and
    answers (engine/schema_blocks.py builds them). quick: the handler does a few indexed reads and at
    most one short transaction, and calls db.must_not_wait() before anything that may wait (a
    provider, the keyring): a server answers it on its event loop, without handing it to an engine
    thread (dispatch.Engine.handle_quick)."""
    key = (method.upper(), path)

    def deco(fn: Handler) -> Handler:
        if CHECK_INDEX:
            indexed = ROUTE_INDEX.get(key)
            if indexed != (scope, fn.__module__):
                raise RuntimeError(f"{key[0]} {path} (scope {scope}, in {fn.__module__}) does not match "
                                   f"engine/route_index.py ({indexed}); regenerate it: {REGENERATE}")
        DECLARED[key] = Declaration(method=key[0], path=path, scope=scope, handler=fn, quick=quick, summary=summary,
                                    body=body, body_required=body_required, raw_body=raw_body, query=tuple(query),
                                    responses=dict(responses) if responses is not None else {200: None})
        HANDLERS[key] = fn
        if quick:
            QUICK.add(key)
        return fn

    return deco


def handler_for(route: Route) -> Callable[[Any], Any]:
    """The route's handler (taking a Ctx, or a PublicCtx for a public route), importing the one module that registers it on first use."""
    key = (route.method, route.path)
    fn = HANDLERS.get(key)
    if fn is None:
        module = ROUTE_INDEX[key][1]
        importlib.import_module(module)
        fn = HANDLERS.get(key)
        if fn is None:
            raise RuntimeError(f"{module} does not declare {route.method} {route.path} (engine/route_index.py); "
                               f"regenerate the index: {REGENERATE}")
    return fn


def is_quick(route: Route) -> bool:
    handler_for(route)   # its module registers it
    return (route.method, route.path) in QUICK


def load_all() -> None:
    """Import every route module: for the server (no first-request import) and the API listing."""
    for module in sorted({module for _scope, module in ROUTE_INDEX.values()}):
        importlib.import_module(module)


def _area(path: str) -> str:
    """The segment after /v1/ ('credentials' of '/v1/credentials/x/token'): every route's is literal."""
    return path.split("/", 3)[2] if path.count("/") >= 2 else ""


@functools.lru_cache(maxsize=512)   # keys come from clients' paths: bounded
def _candidates(segments: int, area: str) -> tuple[Route, ...]:
    """The routes that could match a path of this many slashes in this area, in ROUTES order (a
    route of another area or length can never match it)."""
    return tuple(r for r in ROUTES if (r.segments == segments or (r.tail and r.segments <= segments))
                 and _area(r.path) == area)


def allowed_methods(path: str) -> list[str]:
    """The methods of every route whose template matches path (the `Allow` of a 405), sorted."""
    return sorted({r.method for r in _candidates(path.count("/"), _area(path)) if r.regex.match(path)})


def match(method: str, path: str) -> tuple[Route | None, dict, bool]:
    """(route, path params, path_known). path_known is True when another method has the path."""
    known = False
    for r in _candidates(path.count("/"), _area(path)):
        m = r.regex.match(path)
        if m:
            if r.method == method:
                return r, m.groupdict(), True
            known = True
    return None, {}, known
