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

import logging

from workspacectl.engine import validate as v
from workspacectl.engine.catalog import require_integration
from workspacectl.engine.db import transaction
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.store import catalog as store
from workspacectl.errors import ApiError

log = logging.getLogger("wsctl.catalog")


def require_catalog_admin(ctx: Ctx) -> None:
    if not ctx.caller.is_admin:
        raise ApiError("forbidden", "Only a workspace owner or admin may change the catalog.")


def _import_args(ctx: Ctx) -> tuple:
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


def parse_import(content, fmt, service, filename) -> dict:
    from workspacectl.engine.catalog_import import parse_document

    try:
        return parse_document(content, fmt, service, filename)
    except ApiError:
        raise
    except Exception as e:  # an odd document must never become a 500
        log.warning("catalog import of %s failed: %s", filename or "a document", type(e).__name__)
        raise ApiError("invalid_request", f"{filename or 'the document'}: could not be read "
                                          f"({type(e).__name__}); check that it is a valid definition.") from None


@route("POST", "/v1/admin/catalog")
def import_service(ctx: Ctx) -> Response:
    """Import a service definition (TOML) or an OpenAPI document; replaces a service of that name."""
    require_catalog_admin(ctx)
    record = parse_import(*_import_args(ctx))
    secret = record.pop("oauthClientSecret", None)
    conn = ctx.db
    with transaction(conn):
        sealed = None
        if secret:
            from workspacectl.engine import crypto

            sealed = crypto.seal(ctx.ws, store.oauth_aad(record["service"]), secret.encode())
        created = store.replace_service(conn, record, source="import", sealed_client_secret=sealed)
    detail = store.integration_detail(store.get_integration(conn, record["service"]))
    body = {"service": record["service"], "created": created, "operationCount": len(record["operations"]),
            "triggerCount": len(record["triggers"]), "integration": detail}
    return Response(201 if created else 200, body)


@route("DELETE", "/v1/admin/catalog/{service}")
def delete_service(ctx: Ctx) -> Response:
    """Remove a service with its operations and trigger providers."""
    require_catalog_admin(ctx)
    if not store.delete_service(ctx.db, ctx.params["service"]):
        require_integration(ctx.db, ctx.params["service"])
    return Response(204)


@route("PUT", "/v1/admin/catalog/{service}/oauth-client")
def set_oauth_client(ctx: Ctx) -> dict:
    """Set an oauth2 integration's client id and secret (the secret is sealed)."""
    require_catalog_admin(ctx)
    row = require_integration(ctx.db, ctx.params["service"])
    if row["credential_type"] != "oauth2":
        raise v.bad(f"'{row['service']}' is not an oauth2 integration; it has no OAuth client.")
    body = v.body_dict(ctx, allow_empty=False)
    client_id = v.string(body, "clientId", max_len=1000)
    client_secret = v.string(body, "clientSecret", max_len=4000)
    store.set_oauth_client(ctx.ws, row["service"], client_id, client_secret)
    return store.integration_detail(store.get_integration(ctx.db, row["service"]))
