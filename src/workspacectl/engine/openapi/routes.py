"""GET /v1/openapi.json: every route of the scope table, described from the table itself.

Scopes and paths come from engine/scopes.py; request bodies, answers and query parameters
from engine/openapi/schemas.py ROUTE_DOCS. A route in the table without a handler yet gets a
minimal entry (its path parameters and the error answer).
"""
from __future__ import annotations

import re

from workspacectl import __version__
from workspacectl.engine.registry import HANDLERS, PublicCtx, load_all, route
from workspacectl.engine.scopes import AUTHENTICATED, PUBLIC, ROUTE_SCOPES, SESSION

_REASONS = {200: "OK", 201: "Created", 202: "Accepted", 204: "No content"}
_ERROR = {"description": "Error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _responses(doc: dict | None) -> dict:
    out: dict = {}
    for status, schema in sorted((doc or {}).get("responses", {200: None}).items()):
        answer: dict = {"description": _REASONS.get(status, "OK")}
        if schema is not None:
            answer["content"] = {"application/json": {"schema": schema}}
        out[str(status)] = answer
    out["default"] = _ERROR
    return out


def _operation(method: str, path: str, scope: str) -> dict:
    from workspacectl.engine.openapi.schemas import ROUTE_DOCS  # only this route needs the schemas
    from workspacectl.engine.openapi.summaries import SUMMARIES, tag_of

    doc = ROUTE_DOCS.get((method, path)) if (method, path) in HANDLERS else None
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
              for n in re.findall(r"\{(\w+)\}", path)] + list((doc or {}).get("query", []))
    handler = HANDLERS.get((method, path))
    summary = (handler.__doc__ or "").strip().splitlines()[0] if handler and handler.__doc__ else ""
    summary = SUMMARIES.get((method, path)) or summary
    op: dict = {
        "operationId": f"{method.lower()}_{re.sub(r'[^a-z0-9]+', '_', path.lower()).strip('_')}",
        "summary": summary or f"{method} {path}",
        "tags": [tag_of(path) or "meta"],
        "parameters": params,
        "responses": _responses(doc),
        "x-wsctl-scope": scope,
    }
    if doc and "body" in doc:
        content = {"application/json": {"schema": doc["body"]}}
        if doc.get("raw_body"):
            content["text/plain"] = {"schema": {"type": "string", "description": "The document itself."}}
        op["requestBody"] = {"required": doc.get("body_required", True), "content": content}
    if handler is None:
        op["description"] = "Not available in this version yet: answers 404 after the scope check."
    if scope != PUBLIC:
        op["security"] = [{"bearer": []}]
    if scope not in (PUBLIC, AUTHENTICATED, SESSION):
        op["description"] = " ".join(filter(None, [f"Requires scope `{scope}` on an API key (a session passes).",
                                                   op.get("description")]))
    elif scope == SESSION:
        op["description"] = " ".join(filter(None, ["Command-line sessions only.", op.get("description")]))
    return op


def build_openapi() -> dict:
    from workspacectl.engine.openapi.schemas import COMPONENTS
    from workspacectl.engine.openapi.summaries import TAGS

    load_all()   # a request imports only its own route module; the listing describes them all
    paths: dict = {}
    for (method, path), scope in sorted(ROUTE_SCOPES.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        paths.setdefault(path, {})[method.lower()] = _operation(method, path, scope)
    return {
        "openapi": "3.1.0",
        "info": {"title": "workspacectl API", "version": __version__},
        "tags": TAGS,
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
                       "schemas": COMPONENTS},
        "paths": paths,
    }


@route("GET", "/v1/openapi.json")
def openapi(ctx: PublicCtx) -> dict:
    """This description of the API (OpenAPI 3.1)."""
    return build_openapi()
