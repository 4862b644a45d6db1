"""The integration catalog, read-only (seed: Integration catalog; CONTRACT §5).

Every route answers under `docs:read` on platform keys (engine/scopes.py); personal keys 403.
`GET /v1/operations?q=` (ranked search) lives in catalog/search_routes.py.
"""
from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from workspacectl.engine.catalog.render import (
    integration_detail,
    integration_summary,
    operation_detail,
    operation_summary,
)
from workspacectl.engine.pagination import page, page_args
from workspacectl.engine.registry import Ctx, route
from workspacectl.engine.schema_blocks import PAGE, page_of, ref
from workspacectl.engine.store import catalog as store
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn


def require_integration(conn: Conn, service: str) -> sqlite3.Row:
    row = store.get_integration(conn, service)
    if row is None:
        raise ApiError("not_found", f"No integration '{service[:100]}'. Run `wsctl catalog integrations` to list them.")
    return row


def require_operation(conn: Conn, op_id: str, service: str | None = None) -> sqlite3.Row:
    """An operation by opId; under a service also by its bare name ('chat-post-message')."""
    row = store.get_operation(conn, op_id)
    if row is None and service is not None and not op_id.startswith(service + "."):
        row = store.get_operation(conn, f"{service}.{op_id}")
    if row is None or (service is not None and row["service"] != service):
        where = f"`wsctl catalog operations {service}`" if service else "`wsctl catalog search PHRASE`"
        raise ApiError("not_found", f"No operation '{op_id[:160]}'. Run {where} to find one.")
    return row


@route("GET", "/v1/integrations", scope="docs:read",
       query=PAGE,
       responses={200: page_of("integrations", ref("Integration"))})
def list_integrations(ctx: Ctx) -> dict:
    """Every integration the workspace can use."""
    limit, after = page_args(ctx)
    rows = store.list_integrations(ctx.db, after, limit + 1)
    return page("integrations", rows, limit, lambda r: r["service"], integration_summary)


@route("GET", "/v1/integrations/{service}", scope="docs:read",
       responses={200: ref("IntegrationDetail")})
def get_integration(ctx: Ctx) -> dict:
    """One integration's setup metadata."""
    return integration_detail(require_integration(ctx.db, ctx.params["service"]))


@route("GET", "/v1/integrations/{service}/operations", scope="docs:read",
       query=PAGE,
       responses={200: page_of("operations", ref("Operation"))})
def list_operations(ctx: Ctx) -> dict:
    """One service's operations."""
    service = require_integration(ctx.db, ctx.params["service"])["service"]
    limit, after = page_args(ctx, int)
    rows = store.list_operations(ctx.db, service, after, limit + 1)
    return page("operations", rows, limit, lambda r: r["position"], operation_summary)


@route("GET", "/v1/integrations/{service}/operations/{opId}", scope="docs:read",
       responses={200: ref("OperationDetail")})
def get_service_operation(ctx: Ctx) -> dict:
    """One operation's full reference, markdown included."""
    integration = require_integration(ctx.db, ctx.params["service"])
    row = require_operation(ctx.db, ctx.params["opId"], integration["service"])
    return operation_detail(row, integration)


@route("GET", "/v1/operations/{opId}", scope="docs:read",
       responses={200: ref("OperationDetail")})
def get_operation(ctx: Ctx) -> dict:
    """One operation by bare id (<service>.<name>)."""
    row = require_operation(ctx.db, ctx.params["opId"])
    return operation_detail(row, require_integration(ctx.db, row["service"]))
