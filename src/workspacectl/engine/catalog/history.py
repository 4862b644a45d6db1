"""What a catalog change changes, whether it moves where secrets go, and the history of changes.

A definition says where the server sends secrets: refresh tokens and the client secret to
`tokenUrl` and `revokeUrl`, keys to `baseUrl` when `sync` runs the `probe`, presented as `auth`
says; members' browsers carry codes from `authorizeUrl`. An admin who re-points one of those
while credentials exist would receive every member's secrets at the next refresh. So:

- while credentials (or pending connections) of the service exist, such a re-import is 409 with
  the counts, unless the workspace owner forces it (an admin may not);
- forced, every credential of the service becomes `needs_reconnect` with its secrets erased in
  the same transaction, and pending connections fail: nothing held before reaches the new address;
- the stored OAuth client secret never follows a moved token or revoke URL: it is dropped unless
  the document brings one.

Every change (import, delete, OAuth client) is a row of `catalog_changes`, listed newest first
by GET /v1/admin/catalog/history (`wsctl catalog history`).
"""
from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

from workspacectl import clock
from workspacectl.engine.registry import Ctx
from workspacectl.engine.store import catalog_history as history

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn
    from workspacectl.engine.workspaces.folder import Workspace

# Setup keys that decide where a secret is sent or how it is presented.
DESTINATIONS = ("tokenUrl", "revokeUrl", "authorizeUrl", "baseUrl", "auth", "probe")
CLIENT_SECRET_DESTINATIONS = ("tokenUrl", "revokeUrl")
MAX_SHOWN = 300


def _shown(value: Any) -> Any:
    """A value as the history shows it: short, never a secret (secrets never reach here)."""
    if isinstance(value, str):
        return value if len(value) <= MAX_SHOWN else value[:MAX_SHOWN - 1] + "…"
    text = json.dumps(value)
    return value if len(text) <= MAX_SHOWN else "(changed)"


def _loads(text: str | None, default: Any) -> Any:
    try:
        value = json.loads(text or "")
    except ValueError:
        return default
    return value if isinstance(value, type(default)) else default


def compare(existing: sqlite3.Row | None, record: dict, *, client_secret_given: bool) -> tuple[list[dict], list[str]]:
    """([{field, from, to}] of everything that changes, [the DESTINATIONS among them]).
    A new service (existing None) lists what it sets."""
    old = {} if existing is None else {
        "name": existing["name"], "description": existing["description"],
        "credentialType": existing["credential_type"], "envVars": _loads(existing["env_vars_json"], {}),
        "fields": _loads(existing["fields_json"], []), "secretFields": _loads(existing["secret_fields_json"], []),
        **_loads(existing["setup_json"], {}),
        "operations": existing["operation_count"] if "operation_count" in existing.keys() else None,
        "oauthClientId": existing["oauth_client_id"]}
    new = {"name": record["name"], "description": record["description"],
           "credentialType": record["credentialType"], "envVars": record["envVars"], "fields": record["fields"],
           "secretFields": record["secretFields"], **record["setup"], "operations": len(record["operations"])}
    if record.get("oauthClientId"):
        new["oauthClientId"] = record["oauthClientId"]
    elif "oauthClientId" in old:
        new["oauthClientId"] = old["oauthClientId"]  # kept unless the document brings one
    changes = [{"field": k, "from": _shown(old.get(k)), "to": _shown(new.get(k))}
               for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)]
    if client_secret_given:
        had = existing is not None and existing["oauth_client_secret"] is not None
        changes.append({"field": "oauthClientSecret", "from": "set" if had else None, "to": "set"})
    moved = [c["field"] for c in changes if c["field"] in DESTINATIONS] if existing is not None else []
    return changes, moved


def client_secret_moves(moved: list[str]) -> bool:
    return any(f in CLIENT_SECRET_DESTINATIONS for f in moved)


def reset_credentials(ws: Workspace, conn: Conn, service: str) -> int:
    """Erase the secrets of every credential of the service and mark it needs_reconnect; fail its
    pending connections. Inside the caller's transaction. Answers how many credentials."""
    from workspacectl.engine.events.record import record_event
    from workspacectl.engine.store import vault as vault_store
    from workspacectl.engine.vault.credentials import precise_now, seal_secrets

    now = clock.now_iso()
    ids = history.credential_ids(conn, service)
    for cred_id in ids:
        vault_store.update_secrets(conn, cred_id, secret_blob=seal_secrets(ws, cred_id, {}), secret_names=[],
                                   now=now, refreshed_at=precise_now(), expires_at=None, reset_status=False)
        vault_store.set_status(conn, cred_id, "needs_reconnect", now, "catalog_redirected")
        record_event(conn, "credential.broken", subject_id=cred_id,
                     data={"service": service, "status": "needs_reconnect", "reason": "catalog_redirected"})
    history.fail_pending_connections(conn, service, "The service's provider address changed; start again.", now)
    return len(ids)


def record(conn: Conn, ctx: Ctx, service: str, action: str, changes: list[dict], *, forced: bool = False,
           credentials_reset: int = 0) -> None:
    history.record_change(conn, at=clock.now_iso(), member_id=ctx.caller.member_id, service=service,
                          action=action, changes=changes, forced=forced, credentials_reset=credentials_reset)


def list_changes(conn: Conn, service: str | None, before: int | None, limit: int) -> list:
    return history.list_changes(conn, service, before, limit)


def change_json(row: sqlite3.Row) -> dict:
    return {"id": row["id"], "at": row["at"], "membershipId": row["member_id"], "service": row["service"],
            "action": row["action"], "forced": bool(row["forced"]), "credentialsReset": row["credentials_reset"],
            "changes": _loads(row["changes_json"], [])}
