"""GET /v1/openapi.json: every route of the scope table, described from the table itself."""
from __future__ import annotations

import re

from workspacectl import __version__
from workspacectl.engine.registry import HANDLERS, Ctx, route
from workspacectl.engine.scopes import AUTHENTICATED, PUBLIC, ROUTE_SCOPES, SESSION

_ERROR = {"type": "object", "properties": {"error": {"type": "object", "properties": {
    "status": {"type": "integer"}, "code": {"type": "string"}, "message": {"type": "string"},
    "detail": {}}, "required": ["status", "code", "message"]}}}


def build_openapi() -> dict:
    paths: dict = {}
    for (method, path), scope in sorted(ROUTE_SCOPES.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
                  for n in re.findall(r"\{(\w+)\}", path)]
        handler = HANDLERS.get((method, path))
        doc = (handler.__doc__ or "").strip().splitlines()[0] if handler and handler.__doc__ else ""
        op = {
            "operationId": f"{method.lower()}_{re.sub(r'[^a-z0-9]+', '_', path.lower()).strip('_')}",
            "summary": doc or f"{method} {path}",
            "parameters": params,
            "responses": {"200": {"description": "OK"},
                          "default": {"description": "Error", "content": {"application/json": {"schema": _ERROR}}}},
            "x-wsctl-scope": scope,
        }
        if scope != PUBLIC:
            op["security"] = [{"bearer": []}]
        if scope not in (PUBLIC, AUTHENTICATED, SESSION):
            op["description"] = f"Requires scope `{scope}` on an API key (a session passes)."
        elif scope == SESSION:
            op["description"] = "Command-line sessions only."
        paths.setdefault(path, {})[method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {"title": "workspacectl API", "version": __version__},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": paths,
    }


@route("GET", "/v1/openapi.json")
def openapi(ctx: Ctx) -> dict:
    return build_openapi()
