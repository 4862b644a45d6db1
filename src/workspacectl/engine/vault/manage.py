"""Manage routes (owner only): editable view, replace a hand-entered key, sync, delete."""
from __future__ import annotations

import json
import sqlite3

from workspacectl import clock
from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.events.record import record_event
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.schema_blocks import BOOL, NOT_BLANK, STR, array, nullable, obj, query, ref, text
from workspacectl.engine.store import vault as store
from workspacectl.engine.vault import oauth, token_refresh
from workspacectl.engine.vault import probe as vault_probe
from workspacectl.engine.vault.credentials import (
    MAX_FIELD_CHARS,
    MAX_SECRET_CHARS,
    detail_of,
    open_secrets,
    owned_credential,
    precise_now,
    reveal_all,
    seal_secrets,
    secret_field_names,
)
from workspacectl.errors import ApiError


def _declared_fields(integration: sqlite3.Row | None) -> list[str]:
    if integration is None:
        return []
    try:
        names = json.loads(integration["fields_json"] or "[]")
    except ValueError:
        return []
    return [n for n in names if isinstance(n, str)]


def _stored_fields(row: sqlite3.Row) -> dict:
    try:
        value = json.loads(row["fields_json"] or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


_SECRET_VALUE = text(1, MAX_SECRET_CHARS, NOT_BLANK)
_DATA_BODY = {
    "type": "object", "minProperties": 1,
    "description": "The credential's secret fields by name (at least one; see editable-fields secretFields; "
                   f"1-{MAX_SECRET_CHARS} characters, not blank) and its declared non-secret fields "
                   f"(at most {MAX_FIELD_CHARS} characters). Any other key is refused.",
    "properties": {"apiKey": _SECRET_VALUE},
    "additionalProperties": text(0, MAX_SECRET_CHARS),
}


@route("GET", "/v1/vault/credentials/{id}/editable-fields", scope="vault:manage",
       responses={200: obj({
           "fields": {"type": "object", "additionalProperties": nullable(STR)},
           "secretFields": array(obj({"name": STR, "set": BOOL}, required="all"))}, required="all")},
       summary="The non-secret fields and which secret fields are set (owner only).")
def editable_fields(ctx: Ctx) -> dict:
    row = owned_credential(ctx.db, ctx.params["id"], ctx.caller.member_id)
    integration = store.get_integration(ctx.db, row["service"])
    fields = {name: None for name in _declared_fields(integration)}
    fields.update(_stored_fields(row))
    try:
        have = set(json.loads(row["secret_names_json"] or "[]"))
    except ValueError:
        have = set()
    names = secret_field_names(integration) or sorted(have)
    return {"fields": fields, "secretFields": [{"name": n, "set": n in have} for n in names]}


@route("PUT", "/v1/vault/credentials/{id}/data", scope="vault:manage",
       body=_DATA_BODY,
       responses={200: ref("CredentialDetail")},
       summary="Replace a hand-entered key; same credential id (owner only).")
def replace_data(ctx: Ctx) -> dict:
    body = v.body_dict(ctx, allow_empty=False)
    conn = ctx.db
    row = owned_credential(conn, ctx.params["id"], ctx.caller.member_id)
    if row["credential_type"] != "apiKey":
        raise ApiError("invalid_request", "Only a hand-entered API key can be replaced; reconnect this credential "
                       f"with `wsctl vault connect {row['service']}`.")
    integration = store.get_integration(conn, row["service"])
    secret_names = secret_field_names(integration) or ["apiKey"]
    declared = _declared_fields(integration)
    new_secrets, new_fields = {}, {}
    for name, value in body.items():
        if name in secret_names:
            if not isinstance(value, str) or not value.strip() or len(value) > MAX_SECRET_CHARS:
                raise v.bad(f"'{name}' must be a non-empty string of at most {MAX_SECRET_CHARS} characters.")
            new_secrets[name] = value
        elif name in declared:
            if not isinstance(value, str) or len(value) > MAX_FIELD_CHARS:
                raise v.bad(f"'{name}' must be a string of at most {MAX_FIELD_CHARS} characters.")
            new_fields[name] = value
        else:
            raise v.bad(f"Unknown field '{name[:64]}'. Secret fields: {', '.join(secret_names)}"
                        + (f"; other fields: {', '.join(declared)}." if declared else "."))
    if not new_secrets:
        raise v.bad(f"Send the new value of at least one secret field: {', '.join(secret_names)}.")
    with transaction(conn):
        sealed = store.get_credential_sealed(conn, row["id"])
        if sealed is None:
            raise ApiError("not_found", f"No credential {row['id']}. Run `wsctl vault list`.")
        merged = {**reveal_all(open_secrets(ctx.ws, sealed)), **new_secrets}
        fields = {**_stored_fields(sealed), **new_fields}
        store.update_secrets(conn, row["id"], secret_blob=seal_secrets(ctx.ws, row["id"], merged),
                             secret_names=sorted(merged), now=clock.now_iso(), refreshed_at=precise_now(),
                             expires_at=sealed["expires_at"], fields=fields)
        record_event(conn, "credential.updated", subject_id=row["id"], actor_id=ctx.caller.member_id,
                     data={"service": row["service"], "name": row["name"],
                           "changed": sorted({*new_secrets, *new_fields})})
        return detail_of(conn, row["id"], ctx.caller.member_id)


@route("POST", "/v1/vault/credentials/{id}/sync", scope="vault:manage",
       responses={200: ref("CredentialDetail")})
def sync_credential(ctx: Ctx) -> dict:
    """Refresh an OAuth token, run the integration's probe, record syncedAt and the status found."""
    conn = ctx.db
    row = owned_credential(conn, ctx.params["id"], ctx.caller.member_id)
    status = None
    if row["credential_type"] == "oauth2":
        try:
            token_refresh.ensure_fresh(ctx.ws, row["id"], force=row["status"] != "needs_reconnect")
        except ApiError:
            current = store.get_credential(conn, row["id"])
            if current is None or current["status"] != "needs_reconnect":
                raise
            status = "needs_reconnect"  # the provider refused the grant: that is the finding
    elif row["status"] == "needs_reconnect":
        status = "needs_reconnect"  # its secrets were erased (catalog/history.py): nothing to probe with
    if status is None:
        integration = store.get_integration(conn, row["service"])
        sealed = store.get_credential_sealed(conn, row["id"])
        if sealed is None:
            raise ApiError("not_found", f"No credential {row['id']}. Run `wsctl vault list`.")
        found = vault_probe.run_probe(conn, integration, open_secrets(ctx.ws, sealed), _stored_fields(sealed),
                                      row["credential_type"]) if integration is not None else None
        # An inconclusive probe keeps what we knew; a refresh that just worked proves the grant.
        status = found or ("ok" if row["credential_type"] == "oauth2" else sealed["status"])
    with transaction(conn):
        current = store.get_credential(conn, row["id"])
        if current is None:
            raise ApiError("not_found", f"No credential {row['id']}. Run `wsctl vault list`.")
        store.set_synced(conn, row["id"], clock.now_iso(), status)
        if status in ("needs_reconnect", "invalid") and current["status"] != status:
            record_event(conn, "credential.broken", subject_id=row["id"], actor_id=ctx.caller.member_id,
                         data={"service": row["service"], "name": row["name"], "status": status,
                               "reason": "probe_refused"})
        return detail_of(conn, row["id"], ctx.caller.member_id)


@route("PATCH", "/v1/vault/credentials/{id}", scope="vault:manage",
       body=obj({"name": text(1, 64, r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="The new name: unique in "
                              "the workspace regardless of case, not starting with cred_.")}, required=["name"]),
       responses={200: ref("CredentialDetail")},
       summary="Rename a credential; names are unique in the workspace (owner only).")
def rename_credential(ctx: Ctx) -> dict:
    """Rename a credential (owner only): `{name}`, unique in the workspace (409 on a clash)."""
    from workspacectl.engine.vault.credential_names import check_name, require_free

    body = v.body_dict(ctx, allow_empty=False)
    unknown = sorted(set(body) - {"name"})
    if unknown:
        raise v.bad(f"Only 'name' can be changed here, not {', '.join(repr(k) for k in unknown)[:200]}.")
    if "name" not in body:
        raise v.bad("'name' is required.")
    name = check_name(body["name"])
    conn = ctx.db
    with transaction(conn):
        row = owned_credential(conn, ctx.params["id"], ctx.caller.member_id)
        require_free(conn, name, except_id=row["id"])
        if name != row["name"]:
            store.rename_credential(conn, row["id"], name, clock.now_iso())
            record_event(conn, "credential.renamed", subject_id=row["id"], actor_id=ctx.caller.member_id,
                         data={"service": row["service"], "name": name})
        return detail_of(conn, row["id"], ctx.caller.member_id)


@route("DELETE", "/v1/vault/credentials/{id}", scope="vault:manage",
       query=[query("force", text(enum=["true", "false", "1", "0", "yes", "no"]),
                    "Delete even when revoking at the provider fails.")],
       responses={204: None})
def delete_credential(ctx: Ctx) -> Response:
    """Revoke at the provider where the integration has a revoke URL, then delete. 204."""
    conn = ctx.db
    row = owned_credential(conn, ctx.params["id"], ctx.caller.member_id)
    force = str(ctx.query.get("force", "")).lower() in ("1", "true", "yes")
    if row["credential_type"] == "oauth2":
        sealed = store.get_credential_sealed(conn, row["id"])
        held = open_secrets(ctx.ws, sealed) if sealed is not None else {}
        try:
            for name, hint in (("refreshToken", "refresh_token"), ("accessToken", "access_token")):
                if name in held and not oauth.revoke(ctx.ws, conn, row["service"], held[name], hint):
                    break  # no revoke URL: nothing to revoke at the provider
        except ApiError as e:
            if e.code != "upstream_failed":
                pass  # the catalog no longer describes how to revoke: nothing to call
            elif not force:
                raise ApiError("upstream_failed", f"{e.message} The credential was kept; try again, or delete it "
                               "here only with `wsctl vault delete --force` (?force=true).") from None
    with transaction(conn):
        if store.delete_credential(conn, row["id"]):
            record_event(conn, "credential.deleted", subject_id=row["id"], actor_id=ctx.caller.member_id,
                         data={"service": row["service"], "name": row["name"]})
    return Response(204)
