"""`GET /v1/operations?q=&service=&limit=`: operations ranked by relevance to a capability phrase.

Answers `{"operations": [{opId, service, name, summary, method, path, score}], "nextCursor": null}`,
best first; `score` is in (0, 1], higher is better (see engine/catalog/search.py). A ranking
has one page: `limit` (default 20, at most 500) says how long it is, and `nextCursor` is
always null. Scope docs:read (engine/scopes.py).
"""
from __future__ import annotations

from workspacectl.engine.catalog import search as catalog_search
from workspacectl.engine.registry import Ctx, route
from workspacectl.engine.schema_blocks import NOT_BLANK, STR, array, obj, query, text
from workspacectl.engine.store import catalog_search as store
from workspacectl.engine.validate import bad, query_int
from workspacectl.errors import ApiError

DEFAULT_LIMIT = 20
MAX_LIMIT = 500
MAX_QUERY_CHARS = 500
# An operation as every list answers it (this search; GET /v1/integrations/{service}/operations
# answers the Operation of engine/openapi/components.py, made of the same fields).
OPERATION_FIELDS = {"opId": STR, "service": STR, "name": STR, "summary": STR, "method": STR, "path": STR}


@route("GET", "/v1/operations", scope="docs:read",
       query=[query("q", text(1, MAX_QUERY_CHARS, NOT_BLANK),
                    "A capability phrase such as 'send a text message' (required).", required=True),
              query("service", STR, "Only this service's operations."),
              query("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                    f"How many hits, 1-{MAX_LIMIT} (default {DEFAULT_LIMIT}); a ranking has one page.")],
       responses={200: obj({"operations": array(obj({**OPERATION_FIELDS, "score": {"type": "number"}},
                                                    required="all")),
                            "nextCursor": {"type": "null"}}, required="all")})
def search_operations(ctx: Ctx) -> dict:
    """Cross-service operation search; q is a capability phrase."""
    q = ctx.query.get("q")
    if q is None or not q.strip():
        raise bad("Query parameter 'q' is required: a capability phrase such as 'send a text message'.")
    if len(q) > MAX_QUERY_CHARS:
        raise bad(f"Query parameter 'q' must be at most {MAX_QUERY_CHARS} characters; say what you want to do in a phrase.")
    limit = query_int(ctx, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
    service = ctx.query.get("service") or None
    if service is not None and not store.service_exists(ctx.db, service):
        raise ApiError("not_found", f"No integration '{service[:100]}'. Run `wsctl catalog integrations` to list them.")
    hits = catalog_search.search(ctx.db, q, service=service, limit=limit)
    rows = store.operations_by_ids(ctx.db, [op_id for op_id, _ in hits])
    operations = []
    for op_id, score in hits:
        row = rows.get(op_id)
        if row is None:     # removed since it was indexed; ensure_current catches up next time
            continue
        operations.append({"opId": row["op_id"], "service": row["service"], "name": row["name"],
                           "summary": row["summary"], "method": row["method"], "path": row["path"],
                           "score": score})
    return {"operations": operations, "nextCursor": None}
