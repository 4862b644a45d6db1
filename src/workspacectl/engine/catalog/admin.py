"""Changing the catalog (owner or admin sessions; CONTRACT §5).

POST /v1/admin/catalog imports a service definition (TOML) or an OpenAPI 2/3 document. Body:

    {"format": "toml" | "openapi" (optional: guessed from filename, then content),
     "content": "<the file's text>", "service": "<name override, optional>",
     "filename": "<shown in error messages, optional>"}

A raw (non-JSON) body is taken as the content. Re-importing a service replaces it in one
transaction; a bad document is 400 and changes nothing. An OAuth client secret, from the file
or from PUT .../oauth-client, is sealed with engine.crypto and never stored in plaintext.
"""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from workspacectl.engine import validate as v
from workspacectl.engine.catalog import services
from workspacectl.engine.catalog.definition_values import MAX_SERVICE, SERVICE_RE
from workspacectl.engine.catalog.render import integration_detail
from workspacectl.engine.catalog.routes import require_integration
from workspacectl.engine.db import transaction
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.schema_blocks import (
    ANY,
    BOOL,
    INT,
    PAGE,
    STR,
    TIME,
    array,
    nullable,
    obj,
    page_of,
    query,
    ref,
    text,
)
from workspacectl.engine.scopes import SESSION
from workspacectl.engine.store import catalog as store
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.catalog.importer import Report
    from workspacectl.engine.db.conn import Conn

log = logging.getLogger("wsctl.catalog")


def require_catalog_admin(ctx: Ctx) -> None:
    if not ctx.caller.is_admin:
        raise ApiError("forbidden", "Only a workspace owner or admin may change the catalog. "
                                    "Ask one of them (`wsctl members list` shows who) to do it, or to make you an admin.")


def _import_args(ctx: Ctx) -> tuple[str | bytes, str | None, str | None, str | None]:
    """(content, format, service, filename) of an import request."""
    body = ctx.body
    if isinstance(body, (bytes, bytearray)):
        return bytes(body), None, ctx.query.get("service") or None, ctx.query.get("filename") or None
    body = v.body_dict(ctx, allow_empty=False)
    content = body.get("content")
    if not isinstance(content, str):
        raise v.bad("'content' is required: the text of a service definition or OpenAPI document.")
    fmt = v.choice(body, "format", ("toml", "openapi"), required=False)
    service = v.string(body, "service", required=False, max_len=64)
    filename = v.string(body, "filename", required=False, max_len=500)
    for name, value in (("content", content), ("service", service), ("filename", filename)):
        if value is not None and not _is_text(value):
            raise v.bad(f"'{name}' is not valid Unicode text (it holds a lone surrogate escape such as \\ud800).")
    return content, fmt, service, filename


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_import(content: str | bytes, fmt: str | None, service: str | None, filename: str | None,
                 report: Report | None = None) -> dict:
    from workspacectl.engine.catalog.importer import parse_document

    try:
        return parse_document(content, fmt, service, filename, report)
    except ApiError:
        raise
    except Exception as e:  # an odd document must never become a 500
        log.warning("catalog import of %s failed: %s", filename or "a document", type(e).__name__)
        raise ApiError("invalid_request", f"{filename or 'the document'}: could not be read "
                                          f"({type(e).__name__}); check that it is a valid definition.") from None


def _force(ctx: Ctx) -> bool:
    body = ctx.body if isinstance(ctx.body, dict) else {}
    if "force" in body:
        value = body["force"]
    else:  # a raw body: ?force=true
        value = {"true": True, "false": False, "": False}.get(str(ctx.query.get("force", "")).lower())
    if not isinstance(value, bool):
        raise v.bad("'force' must be true or false.")
    return value


def _check_redirect(ctx: Ctx, service: str, moved: list[str], force: bool) -> bool:
    """Refuse a re-import that moves where secrets go while credentials or pending connections of
    the service exist (catalog/history.py), unless the owner forces it. True: reset them."""
    credentials, pending = store.service_usage(ctx.db, service)
    if not moved or not (credentials or pending):
        return False
    counts = " and ".join(f"{n} {noun}{'' if n == 1 else 's'}" for n, noun in
                          ((credentials, "credential"), (pending, "pending connection")) if n)
    if not force:
        raise ApiError("conflict", f"This import changes where '{service}' sends secrets ({', '.join(moved)}) "
                       f"while {counts} use it; nothing changed. The workspace owner may force it with "
                       "`wsctl catalog import FILE --force`, which sends every credential of the service back to "
                       "needs_reconnect with its secrets erased.",
                       {"credentials": credentials, "pendingConnections": pending, "changed": moved})
    if ctx.caller.role != "owner":
        raise ApiError("forbidden", f"Only the workspace owner may force an import that changes where '{service}' "
                       f"sends secrets ({', '.join(moved)}) while {counts} use it; nothing changed.")
    return True


_IMPORT_BODY = obj({
    "content": text(description="The text of a service definition (TOML) or an OpenAPI 2/3 document."),
    "format": text(enum=["toml", "openapi"], description="Guessed from filename, then content, when absent."),
    "service": text(1, MAX_SERVICE, SERVICE_RE.pattern, description="Overrides the document's service name."),
    "filename": text(1, 500, description="Shown in error messages; its extension hints the format."),
    "force": {"type": "boolean", "description": "Owner only: replace a service even when the import changes "
              "where secrets go while credentials use it; they become needs_reconnect, secrets erased."},
}, required=["content"])
_CATALOG_CHANGE = obj({
    "id": INT, "at": TIME, "membershipId": nullable(STR), "service": STR,
    "action": text(enum=["create", "replace", "delete", "oauth-client"]), "forced": BOOL, "credentialsReset": INT,
    "changes": array(obj({"field": STR, "from": ANY, "to": ANY}, required="all"))}, required="all")


@route("POST", "/v1/admin/catalog", scope=SESSION,
       query=[query("service", STR, "Raw (non-JSON) body only: the service name override."),
              query("force", text(enum=["true", "false"]), "Raw (non-JSON) body only: see the body's force."),
              query("filename", STR, "Raw (non-JSON) body only: the file name, which hints the format.")],
       body=_IMPORT_BODY,
       raw_body=True,
       responses={n: obj({"service": STR, "created": BOOL, "operationCount": INT, "triggerCount": INT,
                          "integration": ref("IntegrationDetail")}, required="all") for n in (200, 201)})
def import_service(ctx: Ctx) -> Response:
    """Import a service definition (TOML) or an OpenAPI document; replaces a service of that name."""
    from workspacectl.engine.catalog import history as catalog_history

    require_catalog_admin(ctx)
    record = parse_import(*_import_args(ctx), report=ctx.report)
    force = _force(ctx)
    issuer = record.pop("oauthMetadataIssuer", None)
    if issuer:   # outside the transaction: a network call
        from workspacectl.engine.catalog.oauth_metadata import client_auth_from_metadata

        method = client_auth_from_metadata(issuer)
        if method == "none" and record.get("oauthClientSecret"):
            method = None   # a definition bringing a secret is no public client
        if method:
            record["setup"]["clientAuth"] = method
    secret = record.pop("oauthClientSecret", None)
    service = record["service"]
    conn = ctx.db
    ctx.report("index", None, len(record["operations"]))
    with transaction(conn):
        existing = store.get_integration(conn, service)
        changes, moved = catalog_history.compare(existing, record, client_secret_given=bool(secret))
        reset = _check_redirect(ctx, service, moved, force)
        sealed = None
        if secret:
            from workspacectl.engine import crypto

            sealed = crypto.seal(ctx.ws, services.oauth_aad(service), secret.encode())
        keep_secret = not catalog_history.client_secret_moves(moved)
        if not keep_secret and not secret and existing is not None and existing["oauth_client_secret"] is not None:
            changes.append({"field": "oauthClientSecret", "from": "set", "to": None})
        created = services.replace_service(conn, record, source="import", sealed_client_secret=sealed,
                                        keep_client_secret=keep_secret)
        reset_count = catalog_history.reset_credentials(ctx.ws, conn, service) if reset else 0
        catalog_history.record(conn, ctx, service, "create" if created else "replace", changes,
                               forced=reset, credentials_reset=reset_count)
        detail = _detail(conn, service)
    body = {"service": service, "created": created, "operationCount": len(record["operations"]),
            "triggerCount": len(record["triggers"]), "integration": detail}
    return Response(201 if created else 200, body)


@route("DELETE", "/v1/admin/catalog/{service}", scope=SESSION,
       responses={204: None})
def delete_service(ctx: Ctx) -> Response:
    """Remove a service with its operations and trigger providers."""
    from workspacectl.engine.catalog import history as catalog_history

    require_catalog_admin(ctx)
    conn = ctx.db
    with transaction(conn):
        if not services.delete_service(conn, ctx.params["service"]):
            require_integration(conn, ctx.params["service"])
        catalog_history.record(conn, ctx, ctx.params["service"], "delete", [])
    return Response(204)


@route("GET", "/v1/admin/catalog/history", scope=SESSION,
       query=[query("service", text(1, MAX_SERVICE), "Only this service's changes."), *PAGE],
       responses={200: page_of("changes", _CATALOG_CHANGE)})
def catalog_history_list(ctx: Ctx) -> dict:
    """Every catalog change, newest first: who, when, what changed (owner or admin session)."""
    from workspacectl.engine.catalog import history as catalog_history
    from workspacectl.engine.pagination import page, page_args

    require_catalog_admin(ctx)
    service = ctx.query.get("service") or None
    if service is not None and len(service) > 64:
        raise v.bad("'service' is at most 64 characters.")
    limit, before = page_args(ctx, int)
    rows = catalog_history.list_changes(ctx.db, service, before, limit + 1)
    return page("changes", rows, limit, lambda r: r["id"], catalog_history.change_json)


@route("PUT", "/v1/admin/catalog/{service}/oauth-client", scope=SESSION,
       body=obj({"clientId": text(1, 1000), "clientSecret": text(
        1, 4000, description="Required, except for a public client (clientAuth none), which has none.")},
        required=["clientId"]),
       responses={200: ref("IntegrationDetail")})
def set_oauth_client(ctx: Ctx) -> dict:
    """Set an oauth2 integration's client id and secret (the secret is sealed)."""
    require_catalog_admin(ctx)
    row = require_integration(ctx.db, ctx.params["service"])
    if row["credential_type"] != "oauth2":
        raise v.bad(f"'{row['service']}' is not an oauth2 integration; it has no OAuth client.")
    body = v.body_dict(ctx, allow_empty=False)
    client_id = v.string(body, "clientId", max_len=1000)
    public = json.loads(row["setup_json"] or "{}").get("clientAuth") == "none"
    client_secret = v.string(body, "clientSecret", max_len=4000, required=not public)
    if public and client_secret is not None:
        raise v.bad(f"'{row['service']}' is a public client (clientAuth = \"none\", PKCE): it has no client secret; "
                    "send only clientId.")
    from workspacectl.engine.catalog import history as catalog_history

    with transaction(ctx.db):
        services.set_oauth_client(ctx.ws, row["service"], client_id, client_secret)
        catalog_history.record(ctx.db, ctx, row["service"], "oauth-client",
                               [{"field": "oauthClientId", "from": row["oauth_client_id"], "to": client_id},
                                {"field": "oauthClientSecret", "from": None, "to": "set" if client_secret else None}])
        return _detail(ctx.db, row["service"])


def _detail(conn: Conn, service: str) -> dict:
    """integration_detail of an integration just written in the caller's open transaction (so it is there)."""
    row = store.get_integration(conn, service)
    assert row is not None
    return integration_detail(row)
