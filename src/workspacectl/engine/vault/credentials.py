"""Credentials: making one (the connections area calls this), their views, their sealed secrets.

Secrets are one JSON object sealed with engine/crypto under the credential id as AAD:
``{"accessToken": …, "refreshToken": …}`` for oauth2, ``{"apiKey": …}`` (or the integration's
secret field names, e.g. ``accountSid``/``authToken``) for apiKey. They are opened only to issue a
token, to refresh, to probe or to revoke, and are wrapped in ``Secret`` while held.
"""
from __future__ import annotations

import functools
import json
import sqlite3
from datetime import datetime
from typing import TYPE_CHECKING, Any

from workspacectl import clock
from workspacectl.engine import crypto
from workspacectl.engine.db import transaction
from workspacectl.engine.events.record import record_event
from workspacectl.engine.ids import new_id
from workspacectl.engine.store import vault as store
from workspacectl.engine.vault import credential_names
from workspacectl.errors import ApiError
from workspacectl.secret import Secret

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn
    from workspacectl.engine.workspaces.folder import Workspace

CREDENTIAL_TYPES = ("oauth2", "apiKey", "platform", "noAuth")
# Secret names that are never part of a token response.
NEVER_ISSUED = frozenset({"refreshToken", "idToken", "clientSecret"})
MAX_SECRET_CHARS = 16_384
MAX_FIELD_CHARS = 2_000
# Why a credential needs a reconnect (credentials.last_error), as its detail and errors say it.
REASONS = {
    "invalid_grant": "the provider refused its grant",
    "refresh_interrupted": "the refresh was interrupted (the process refreshing its token stopped before saving the "
                           "provider's answer, and the provider had already replaced the refresh token)",
    "catalog_redirected": "its integration was re-imported with new addresses and its secrets erased",
}


def _json(text: str | None, default: Any) -> Any:
    try:
        value = json.loads(text) if text else default
    except (TypeError, ValueError):
        return default
    return value if isinstance(value, type(default)) else default


def integration_setup(row: sqlite3.Row | None) -> dict:
    return _json(row["setup_json"], {}) if row is not None else {}


def secret_field_names(integration: sqlite3.Row | None) -> list[str]:
    """The secret fields a credential of this integration carries (apiKey default ["apiKey"])."""
    if integration is None:
        return []
    ctype = integration["credential_type"]
    if ctype == "oauth2":
        return ["accessToken", "refreshToken"]
    if ctype == "apiKey":
        names = [n for n in _json(integration["secret_fields_json"], []) if isinstance(n, str) and n]
        return names or ["apiKey"]
    return []


@functools.lru_cache(maxsize=256)   # an integration's env vars as stored (JSON text): parsed once per text
def _env_var_items(text: str | None) -> tuple[tuple[str, str], ...]:
    return tuple((k, v) for k, v in _json(text, {}).items() if isinstance(k, str) and isinstance(v, str))


def env_vars(integration: sqlite3.Row | None) -> dict[str, str]:
    return dict(_env_var_items(integration["env_vars_json"])) if integration is not None else {}


# --- sealing --------------------------------------------------------------------------------

def seal_secrets(ws: Workspace, cred_id: str, secrets: dict[str, str]) -> bytes:
    return crypto.seal(ws, cred_id, json.dumps(secrets, separators=(",", ":")).encode())


def open_secrets(ws: Workspace, row: sqlite3.Row) -> dict[str, Secret]:
    """The credential's secrets, each wrapped in Secret (row must carry secret_blob)."""
    if row["secret_blob"] is None:
        return {}
    data = json.loads(crypto.unseal(ws, row["id"], row["secret_blob"]))
    return {k: Secret(v) for k, v in data.items() if isinstance(v, str)}


def reveal_all(secrets: dict[str, Secret]) -> dict[str, str]:
    return {k: v.reveal() for k, v in secrets.items()}


def precise_now() -> str:
    """Now with microseconds, fixed width, so refresh times compare as strings."""
    return clock.now().isoformat(timespec="microseconds")[:-6] + "Z"   # now() ends "+00:00"; strftime is slower


def precise_iso(moment: datetime) -> str:
    """A UTC datetime (clock.now()) as precise_now writes one."""
    return clock.iso(moment)[:-1] + f".{moment.microsecond:06d}Z"


# --- creation -------------------------------------------------------------------------------

def _check_strings(label: str, values: object, max_chars: int) -> dict[str, str]:
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ApiError("invalid_request", f"{label} must be an object of strings.")
    out = {}
    for k, v in values.items():
        if not isinstance(k, str) or not k or len(k) > 64:
            raise ApiError("invalid_request", f"{label} names must be 1 to 64 characters.")
        if not isinstance(v, str) or len(v) > max_chars:
            raise ApiError("invalid_request", f"'{k}' must be a string of at most {max_chars} characters.")
        out[k] = v
    return out


def _expiry(expires_at: Any) -> str | None:
    """The access token's expiry, normalised to the stored form; 400 (never a 500) for a value that
    is not an ISO time, or one that leaves years 1-9999 once moved to UTC."""
    if expires_at is None:
        return None
    try:
        return clock.iso(clock.parse_iso(expires_at))
    except (TypeError, ValueError, AttributeError, OverflowError):
        raise ApiError("invalid_request", "expiresAt must be an ISO 8601 time between the years 1 and 9999.") from None


NAMES_LOCK = "credential-names"   # the resource a new credential locks (db.transaction's locks)


def credential_lock(cred_id: str) -> str:
    """The resource a change of one credential's row locks (its refresh lease and tokens, a
    reconnect: db.transaction's locks)."""
    return f"credential:{cred_id}"


def create_credential(ws: Workspace, conn: Conn, *, owner_member_id: str, service: str, name: str | None = None,
                      secrets: dict[str, str], fields: dict[str, str], scopes: list[str] | None = None,
                      expires_at: str | None = None, token_type: str | None = None,
                      name_taken_ok: bool = False) -> dict:
    """Store a new credential for `service` owned by `owner_member_id`; answers its detail.

    ``name``: its handle (engine/vault/credential_names.py); None names it after the service. A
    name another credential has is 409, or with ``name_taken_ok`` made unique (`name-2`): a
    connection finishing after someone took the name it was started with still completes.

    Runs inside the caller's transaction when there is one (``conn`` must be ``ws.conn()``).
    oauth2 secrets: accessToken (required), refreshToken (optional). apiKey secrets: the
    integration's secret fields, each non-empty. ``expires_at``: ISO time the access token ends.
    """
    integration = store.get_integration(conn, service)
    if integration is None:
        raise ApiError("not_found", f"No integration '{service}'. Run `wsctl catalog integrations` to see them.")
    ctype = integration["credential_type"]
    secrets = _check_strings("Secrets", secrets, MAX_SECRET_CHARS)
    fields = _check_strings("Fields", fields, MAX_FIELD_CHARS)
    allowed = secret_field_names(integration)
    unknown = [k for k in secrets if k not in allowed]
    if unknown:
        raise ApiError("invalid_request", f"Unknown secret field(s) for {service}: {', '.join(sorted(unknown))}. "
                       f"Expected: {', '.join(allowed) or 'none'}.")
    if ctype == "oauth2" and not secrets.get("accessToken"):
        raise ApiError("invalid_request", "An OAuth credential needs an access token; connect the service again.")
    if ctype == "apiKey":
        missing = [k for k in allowed if not secrets.get(k, "").strip()]
        if missing:
            raise ApiError("invalid_request", f"Enter a value for: {', '.join(missing)}.")
    clash = [k for k in fields if k in allowed or k in NEVER_ISSUED]
    if clash:
        raise ApiError("invalid_request", f"{', '.join(clash)} is a secret field; send it as a secret.")
    if scopes is not None and (not isinstance(scopes, list) or not all(isinstance(s, str) for s in scopes)):
        raise ApiError("invalid_request", "Scopes must be a list of strings.")
    expires_at = _expiry(expires_at)
    if name is not None:
        name = credential_names.check_name(name)
    cred_id = new_id("cred")
    now = clock.now_iso()
    with transaction(conn, locks=[NAMES_LOCK]):   # new credentials' names one at a time, beside other writers
        if not store.member_exists(conn, owner_member_id):
            raise ApiError("not_found", "The member who would own this credential no longer exists.")
        if name is None:
            name = credential_names.unique_name(conn, credential_names.name_base(service))
        elif name_taken_ok:
            name = credential_names.unique_name(conn, name)
        else:
            credential_names.require_free(conn, name)
        blob = seal_secrets(ws, cred_id, secrets) if secrets else None
        store.insert_credential(conn, cred_id=cred_id, service=service, name=name, credential_type=ctype,
                                owner_member_id=owner_member_id, fields=fields, scopes=list(scopes or []),
                                secret_names=sorted(secrets), secret_blob=blob,
                                token_type=(token_type or ("Bearer" if ctype == "oauth2" else None)),
                                expires_at=expires_at, now=now, refreshed_at=precise_now())
        record_event(conn, "credential.connected", subject_id=cred_id, actor_id=owner_member_id,
                     data={"service": service, "name": name})
        return detail_of(conn, cred_id, owner_member_id)


def reconnect_credential(ws: Workspace, conn: Conn, cred_id: str, *, secrets: dict[str, str], fields: dict[str, str] | None = None,
                         scopes: list[str] | None = None, expires_at: str | None = None,
                         token_type: str | None = None) -> dict:
    """Put fresh secrets into an existing credential (a reconnect): status back to ok, same id."""
    secrets = _check_strings("Secrets", secrets, MAX_SECRET_CHARS)
    expires_at = _expiry(expires_at)
    with transaction(conn, locks=[credential_lock(cred_id)]):
        row = store.get_credential(conn, cred_id)
        if row is None:
            raise ApiError("not_found", f"No credential {cred_id}. Run `wsctl vault list`.")
        merged_fields = {**_json(row["fields_json"], {}), **_check_strings("Fields", fields, MAX_FIELD_CHARS)}
        store.update_secrets(conn, cred_id, secret_blob=seal_secrets(ws, cred_id, secrets),
                             secret_names=sorted(secrets), now=clock.now_iso(), refreshed_at=precise_now(),
                             expires_at=expires_at,
                             token_type=token_type, scopes=scopes, fields=merged_fields)
        record_event(conn, "credential.reconnected", subject_id=cred_id, actor_id=row["owner_member_id"],
                     data={"service": row["service"], "name": row["name"]})
        return detail_of(conn, cred_id, row["owner_member_id"])


# --- views ----------------------------------------------------------------------------------

def list_entry(conn: Conn, row: sqlite3.Row, integration_cache: dict | None = None) -> dict:
    """CONTRACT §4 list entry; `row` comes from a *_for query (it carries `access`)."""
    cache = integration_cache if integration_cache is not None else {}
    if row["service"] not in cache:
        cache[row["service"]] = store.get_integration(conn, row["service"])
    return {
        "id": row["id"],
        "service": row["service"],
        "name": row["name"],
        "credentialType": row["credential_type"],
        "envVars": env_vars(cache[row["service"]]),
        "ownerMembershipId": row["owner_member_id"],
        "access": row["access"],
        "status": row["status"],
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def sharing(conn: Conn, cred_id: str) -> list[dict]:
    out = []
    for g in store.list_grants(conn, cred_id):
        if g["grantee"] == "workspace":
            out.append({"membershipId": "workspace", "workspace": True, "role": g["role"]})
        else:
            out.append({"membershipId": g["grantee"], "role": g["role"]})
    return out


def status_reason(row: sqlite3.Row) -> str | None:
    """Why a credential is not ok, in words (token_refresh.REASONS), or None."""
    if row["status"] != "needs_reconnect":
        return None
    return REASONS.get(row["last_error"] or "", REASONS["invalid_grant"]).split(" (")[0]


def credential_detail(conn: Conn, row: sqlite3.Row) -> dict:
    """The list entry plus fields, scopes, sharing, expiresAt and syncedAt."""
    d = list_entry(conn, row)
    d.update({
        "fields": _json(row["fields_json"], {}),
        "scopes": _json(row["scopes_json"], []),
        "sharing": sharing(conn, row["id"]),
        "expiresAt": row["expires_at"],
        "syncedAt": row["synced_at"],
        "statusReason": status_reason(row),
    })
    return d


def detail_of(conn: Conn, cred_id: str, member_id: str) -> dict:
    """credential_detail of a credential just written in the caller's open transaction (so it is there)."""
    row = store.get_credential_for(conn, cred_id, member_id)
    assert row is not None
    return credential_detail(conn, row)


def visible_credential(conn: Conn, cred_id: str, member_id: str) -> sqlite3.Row:
    """The credential with the member's access, or 404 when the member cannot see it at all."""
    row = store.get_credential_for(conn, cred_id, member_id) if isinstance(cred_id, str) else None
    if row is None or row["access"] is None:
        raise ApiError("not_found", f"No credential {cred_id} that you can see. Run `wsctl vault list`.")
    return row


def owned_credential(conn: Conn, cred_id: str, member_id: str) -> sqlite3.Row:
    """The credential if the member owns it; 404 if invisible, 403 if visible but not owned."""
    row = visible_credential(conn, cred_id, member_id)
    if row["access"] != "owner":
        raise ApiError("forbidden", "Only the credential's owner may do this; ask them to change it.")
    return row
