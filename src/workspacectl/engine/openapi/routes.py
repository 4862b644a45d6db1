"""GET /v1/openapi.json: every route, described from its @route declaration.

Each declaration (registry.Declaration, beside its handler) gives the method, path, scope, request
body, query parameters, answers and summary; the shapes several routes answer are in
engine/openapi/components.py, the areas in engine/openapi/tags.py.
"""
from __future__ import annotations

import re

from workspacectl import __version__
from workspacectl.engine.registry import DECLARED, Declaration, PublicCtx, load_all, route
from workspacectl.engine.scopes import AUTHENTICATED, PUBLIC, SESSION

_REASONS = {200: "OK", 201: "Created", 202: "Accepted", 204: "No content"}
_ERROR = {"description": "Error", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def _responses(declared: Declaration) -> dict:
    out: dict = {}
    for status, schema in sorted(declared.responses.items()):
        answer: dict = {"description": _REASONS.get(status, "OK")}
        if schema is not None:
            answer["content"] = {"application/json": {"schema": schema}}
        out[str(status)] = answer
    out["default"] = _ERROR
    return out


def _operation(declared: Declaration) -> dict:
    from workspacectl.engine.openapi.tags import tag_of

    method, path, scope = declared.method, declared.path, declared.scope
    params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}}
              for n in re.findall(r"\{(\w+)\}", path)] + list(declared.query)
    doc = declared.handler.__doc__
    summary = declared.summary or ((doc or "").strip().splitlines() or [""])[0]
    op: dict = {
        "operationId": f"{method.lower()}_{re.sub(r'[^a-z0-9]+', '_', path.lower()).strip('_')}",
        "summary": summary or f"{method} {path}",
        "tags": [tag_of(path) or "meta"],
        "parameters": params,
        "responses": _responses(declared),
        "x-wsctl-scope": scope,
    }
    if declared.body is not None:
        content = {"application/json": {"schema": declared.body}}
        if declared.raw_body:
            content["text/plain"] = {"schema": {"type": "string", "description": "The document itself."}}
        op["requestBody"] = {"required": declared.body_required, "content": content}
    if scope != PUBLIC:
        op["security"] = [{"bearer": []}]
    if scope not in (PUBLIC, AUTHENTICATED, SESSION):
        op["description"] = f"Requires scope `{scope}` on an API key (a session passes)."
    elif scope == SESSION:
        op["description"] = "Command-line sessions only."
    return op


def build_openapi() -> dict:
    from workspacectl.engine.openapi.components import COMPONENTS
    from workspacectl.engine.openapi.tags import TAGS

    load_all()   # a request imports only its own route module; the listing describes them all
    paths: dict = {}
    for (method, path), declared in sorted(DECLARED.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        paths.setdefault(path, {})[method.lower()] = _operation(declared)
    return {
        "openapi": "3.1.0",
        "info": {"title": "workspacectl API", "version": __version__},
        "tags": TAGS,
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
                       "schemas": COMPONENTS},
        "paths": paths,
    }


@route("GET", "/v1/openapi.json", scope=PUBLIC,
       responses={200: {"type": "object", "required": ["openapi", "info", "paths"]}})
def openapi(ctx: PublicCtx) -> dict:
    """This description of the API (OpenAPI 3.1)."""
    return build_openapi()
