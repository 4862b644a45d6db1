"""SQL of the vault: credentials, sharing grants, the access log, refresh state, sealed values.

Rows carrying `secret_blob` are only read where a secret is about to be used; lists and
details select the other columns.
"""
from __future__ import annotations

import json

from workspacectl.engine.db import Prepared
from workspacectl.engine.db.conn import Conn, Row
from workspacectl.engine.store import fetch_named, name_clause

_PUBLIC_COLS = ("c.id, c.service, c.name, c.credential_type, c.owner_member_id, c.fields_json, c.scopes_json, "
                "c.secret_names_json, c.status, c.token_type, c.expires_at, c.synced_at, c.refreshed_at, "
                "c.refresh_retry_at, c.refresh_lease_owner, c.refresh_lease_until, c.last_error, "
                "c.created_at, c.updated_at")

# The caller's access: owner, else its own grant, else the workspace grant (nearest grant wins).
_ACCESS = ("CASE WHEN c.owner_member_id = :member THEN 'owner' ELSE COALESCE(gm.role, gw.role) END AS access")
_GRANT_JOINS = ("LEFT JOIN credential_grants gm ON gm.credential_id = c.id AND gm.grantee = :member "
                "LEFT JOIN credential_grants gw ON gw.credential_id = c.id AND gw.grantee = 'workspace'")


# --- credentials ---------------------------------------------------------------------------

def insert_credential(conn: Conn, *, cred_id: str, service: str, name: str, credential_type: str, owner_member_id: str,
                      fields: dict, scopes: list, secret_names: list, secret_blob: bytes | None,
                      token_type: str | None, expires_at: str | None, now: str, refreshed_at: str) -> None:
    conn.execute(
        "INSERT INTO credentials (id, service, name, credential_type, owner_member_id, fields_json, scopes_json, "
        "secret_names_json, secret_blob, token_type, expires_at, refreshed_at, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (cred_id, service, name, credential_type, owner_member_id, json.dumps(fields), json.dumps(scopes),
         json.dumps(secret_names), secret_blob, token_type, expires_at, refreshed_at, now, now))


def credential_names_like(conn: Conn, base: str) -> set[str]:
    """Lower-cased names equal to `base` or starting with `base-` (the default-name candidates)."""
    pattern = base.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "-%"
    rows = conn.execute("SELECT lower(name) FROM credentials WHERE lower(name) = ? OR lower(name) LIKE ? ESCAPE '\\'",
                        (base.lower(), pattern)).fetchall()
    return {r[0] for r in rows}


def credential_id_named(conn: Conn, name: str) -> str | None:
    """The id of the credential with this name, compared without regard to case (names are unique)."""
    row = conn.execute("SELECT id FROM credentials WHERE lower(name) = ?", (name.lower(),)).fetchone()
    return None if row is None else row[0]


def rename_credential(conn: Conn, cred_id: str, name: str, now: str) -> None:
    conn.execute("UPDATE credentials SET name = ?, updated_at = ? WHERE id = ?", (name, now, cred_id))


def get_credential(conn: Conn, cred_id: str) -> Row | None:
    """A credential's public columns (no secret blob)."""
    return conn.execute(f"SELECT {_PUBLIC_COLS} FROM credentials c WHERE c.id = ?", (cred_id,)).fetchone()


def get_credential_sealed(conn: Conn, cred_id: str) -> Row | None:
    """A credential with its sealed secret blob: only where a secret is about to be used."""
    return conn.execute(f"SELECT {_PUBLIC_COLS}, c.secret_blob FROM credentials c WHERE c.id = ?",
                        (cred_id,)).fetchone()


def get_credential_for(conn: Conn, cred_id: str, member_id: str) -> Row | None:
    """A credential with the member's `access` (None when it has none)."""
    return conn.execute(f"SELECT {_PUBLIC_COLS}, {_ACCESS} FROM credentials c {_GRANT_JOINS} WHERE c.id = :cred",
                        {"member": member_id, "cred": cred_id}).fetchone()


_TO_ISSUE = Prepared(f"SELECT {_PUBLIC_COLS}, c.secret_blob, {_ACCESS}, i.env_vars_json FROM credentials c "
                     f"{_GRANT_JOINS} LEFT JOIN integrations i ON i.service = c.service WHERE c.id = :cred")


def get_credential_to_issue(conn: Conn, cred_id: str, member_id: str) -> Row | None:
    """Everything a token issue reads, in one statement: the credential with its sealed blob, the
    member's `access` and the integration's `env_vars_json` (NULL when the service is gone)."""
    return conn.execute(_TO_ISSUE, {"member": member_id, "cred": cred_id}).fetchone()


_ISSUE_AT_ONCE = Prepared("SELECT * FROM wsctl_issue_token(:cred, :member, :key, :kind, :reason, :at, :now)")


def issue_token_at_once(conn: Conn, *, cred_id: str, member_id: str, key_id: str | None, caller_kind: str, reason: str,
                        at: str, now: str) -> Row | None:
    """PostgreSQL only (m029_token_issue): get_credential_to_issue's row and, when the function could
    decide, the audit row appended, in one statement (one round trip, its own transaction). The row
    carries `outcome` ('issued', 'refused', or None: nothing written, the engine decides) and
    `logged_fields` (the JSON list the audit row names); None when the member cannot see the
    credential."""
    return conn.execute(_ISSUE_AT_ONCE, {"cred": cred_id, "member": member_id, "key": key_id, "kind": caller_kind,
                                         "reason": reason, "at": at, "now": now}).fetchone()


def list_credentials_for(conn: Conn, member_id: str, after: str | None, limit: int,
                         service: str | None = None, named: tuple[str, str] | None = None,
                         only: frozenset[str] | None = None) -> list[Row]:
    """Credentials the member owns or was granted, in id order, after the cursor; with `only`
    (a limited key's credentials, engine/vault/key_limits.py) just those among them."""
    clause, args = name_clause("c.name", named)
    if only is not None:
        ids = sorted(only)
        args.update({f"only{i}": cred_id for i, cred_id in enumerate(ids)})
        clause += f" AND c.id IN ({', '.join(f':only{i}' for i in range(len(ids)))})" if ids else " AND 1 = 0"
    sql = (f"SELECT {_PUBLIC_COLS}, {_ACCESS} FROM credentials c {_GRANT_JOINS} "
           "WHERE c.id > :after AND (c.owner_member_id = :member OR gm.role IS NOT NULL OR gw.role IS NOT NULL)"
           f"{clause} ")
    args.update({"member": member_id, "after": after or "", "limit": limit})
    if service:
        sql += "AND c.service = :service "
        args["service"] = service
    return fetch_named(conn, sql + "ORDER BY c.id LIMIT :limit", args, named)


def update_secrets(conn: Conn, cred_id: str, *, secret_blob: bytes, secret_names: list, now: str, refreshed_at: str,
                   expires_at: str | None = None, token_type: str | None = None, scopes: list | None = None,
                   fields: dict | None = None, reset_status: bool = True) -> None:
    """Replace the sealed secrets (and what came with them) in one statement."""
    sets = ["secret_blob = :blob", "secret_names_json = :names", "updated_at = :now", "expires_at = :exp",
            "refreshed_at = :refreshed", "refresh_retry_at = NULL", "refresh_failures = 0", "last_error = NULL"]
    args = {"id": cred_id, "blob": secret_blob, "names": json.dumps(secret_names), "now": now, "exp": expires_at,
            "refreshed": refreshed_at}
    if token_type is not None:
        sets.append("token_type = :tt")
        args["tt"] = token_type
    if scopes is not None:
        sets.append("scopes_json = :scopes")
        args["scopes"] = json.dumps(scopes)
    if fields is not None:
        sets.append("fields_json = :fields")
        args["fields"] = json.dumps(fields)
    if reset_status:
        sets.append("status = 'ok'")
    conn.execute(f"UPDATE credentials SET {', '.join(sets)} WHERE id = :id", args)


def set_status(conn: Conn, cred_id: str, status: str, now: str, last_error: str | None = None) -> None:
    conn.execute("UPDATE credentials SET status = ?, last_error = ?, updated_at = ? WHERE id = ?",
                 (status, last_error, now, cred_id))


def set_synced(conn: Conn, cred_id: str, now: str, status: str | None = None) -> None:
    if status is None:
        conn.execute("UPDATE credentials SET synced_at = ? WHERE id = ?", (now, cred_id))
    else:
        conn.execute("UPDATE credentials SET synced_at = ?, status = ?, updated_at = ? WHERE id = ?",
                     (now, status, now, cred_id))


def delete_credential(conn: Conn, cred_id: str) -> bool:
    return conn.execute("DELETE FROM credentials WHERE id = ?", (cred_id,)).rowcount > 0


# --- refresh lease and back-off ------------------------------------------------------------

def claim_refresh_lease(conn: Conn, cred_id: str, owner: str, until: str, now: str) -> bool:
    """Take the lease if it is free or expired (call inside a write transaction)."""
    cur = conn.execute("UPDATE credentials SET refresh_lease_owner = ?, refresh_lease_until = ? "
                       "WHERE id = ? AND (refresh_lease_until IS NULL OR refresh_lease_until <= ?)",
                       (owner, until, cred_id, now))
    return cur.rowcount > 0


def take_over_refresh_lease(conn: Conn, cred_id: str, gone: str, owner: str, until: str) -> bool:
    """Take the lease from a holder known to be gone, if it still holds it (inside a write transaction)."""
    cur = conn.execute("UPDATE credentials SET refresh_lease_owner = ?, refresh_lease_until = ? "
                       "WHERE id = ? AND refresh_lease_owner = ?", (owner, until, cred_id, gone))
    return cur.rowcount > 0


def release_refresh_lease(conn: Conn, cred_id: str, owner: str) -> None:
    conn.execute("UPDATE credentials SET refresh_lease_owner = NULL, refresh_lease_until = NULL "
                 "WHERE id = ? AND refresh_lease_owner = ?", (cred_id, owner))


def record_refresh_failure(conn: Conn, cred_id: str, retry_at: str, error: str, now: str) -> None:
    conn.execute("UPDATE credentials SET refresh_retry_at = ?, refresh_failures = refresh_failures + 1, "
                 "last_error = ?, updated_at = ? WHERE id = ?", (retry_at, error, now, cred_id))


# --- sharing -------------------------------------------------------------------------------

def list_grants(conn: Conn, cred_id: str) -> list[Row]:
    return conn.execute("SELECT grantee, role, created_at FROM credential_grants WHERE credential_id = ? "
                        "ORDER BY grantee = 'workspace' DESC, created_at, grantee", (cred_id,)).fetchall()


def set_grant(conn: Conn, cred_id: str, grantee: str, role: str, now: str) -> None:
    conn.execute("INSERT INTO credential_grants (credential_id, grantee, role, created_at) VALUES (?, ?, ?, ?) "
                 "ON CONFLICT(credential_id, grantee) DO UPDATE SET role = excluded.role",
                 (cred_id, grantee, role, now))


def delete_grant(conn: Conn, cred_id: str, grantee: str) -> None:
    conn.execute("DELETE FROM credential_grants WHERE credential_id = ? AND grantee = ?", (cred_id, grantee))


def member_exists(conn: Conn, member_id: str) -> bool:
    return conn.execute("SELECT 1 FROM members WHERE id = ?", (member_id,)).fetchone() is not None


# --- access log ----------------------------------------------------------------------------

def insert_access_log(conn: Conn, *, cred_id: str, at: str, member_id: str, key_id: str | None, caller_kind: str,
                      reason: str, fields: list, outcome: str) -> None:
    conn.execute("INSERT INTO credential_access_log (credential_id, at, member_id, key_id, caller_kind, reason, "
                 "fields_json, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                 (cred_id, at, member_id, key_id, caller_kind, reason, json.dumps(fields), outcome))


def insert_proxy_log(conn: Conn, *, cred_id: str, at: str, member_id: str, key_id: str | None, caller_kind: str,
                     reason: str, fields: list, outcome: str, method: str, path: str,
                     upstream_status: int | None = None) -> int:
    """A proxied call's row (m028); answers its id, so the outcome can be set once the service answers."""
    return conn.execute("INSERT INTO credential_access_log (credential_id, at, member_id, key_id, caller_kind, "
                        "reason, fields_json, outcome, method, path, upstream_status) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                        (cred_id, at, member_id, key_id, caller_kind, reason, json.dumps(fields), outcome, method,
                         path, upstream_status)).fetchone()[0]


def set_proxy_outcome(conn: Conn, log_id: int, outcome: str, upstream_status: int | None) -> None:
    conn.execute("UPDATE credential_access_log SET outcome = ?, upstream_status = ? WHERE id = ?",
                 (outcome, upstream_status, log_id))


def list_access_log(conn: Conn, cred_id: str, before: int | None, limit: int) -> list[Row]:
    """Newest first; `before` is the id of the last row of the previous page."""
    return conn.execute("SELECT * FROM credential_access_log WHERE credential_id = ? AND id < ? "
                        "ORDER BY id DESC LIMIT ?", (cred_id, before if before is not None else 2 ** 62,
                                                     limit)).fetchall()


def count_access_log(conn: Conn, cred_id: str, outcome: str | None = None) -> int:
    if outcome is None:
        return conn.execute("SELECT count(*) FROM credential_access_log WHERE credential_id = ?",
                            (cred_id,)).fetchone()[0]
    return conn.execute("SELECT count(*) FROM credential_access_log WHERE credential_id = ? AND outcome = ?",
                        (cred_id, outcome)).fetchone()[0]


# --- the catalog rows the vault reads ------------------------------------------------------

def get_integration(conn: Conn, service: str) -> Row | None:
    """The integration row, as the catalog store reads it."""
    from workspacectl.engine.store import catalog

    return catalog.get_integration(conn, service)


def get_operation(conn: Conn, service: str, name: str) -> Row | None:
    """An operation of a service by its name or its full op id (the probe of vault sync)."""
    return conn.execute("SELECT * FROM operations WHERE service = ? AND (name = ? OR op_id = ?)",
                        (service, name, name)).fetchone()


def get_oauth_client_sealed(conn: Conn, service: str) -> Row | None:
    return conn.execute("SELECT oauth_client_id, oauth_client_secret FROM integrations WHERE service = ?",
                        (service,)).fetchone()


# --- every sealed value (key rotation) -----------------------------------------------------

# (table, key column, blob column): every column in the workspace that holds a crypto.seal blob.
SEALED_COLUMNS = (
    ("credentials", "id", "secret_blob"),
    ("integrations", "service", "oauth_client_secret"),
    ("connections", "id", "link_sealed"),
    ("connections", "id", "pkce_sealed"),
    ("webhooks", "id", "secret_sealed"),
)


def _table_exists(conn: Conn, table: str) -> bool:
    if getattr(conn, "dialect", "sqlite") == "postgres":
        return conn.execute("SELECT to_regclass(?) IS NOT NULL", (table,)).fetchone()[0]
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None


def sealed_values(conn: Conn, table: str, key_col: str, blob_col: str) -> list[tuple[str, bytes]]:
    """(key, blob) of every non-null sealed value of one column listed in SEALED_COLUMNS."""
    if (table, key_col, blob_col) not in SEALED_COLUMNS or not _table_exists(conn, table):
        return []
    rows = conn.execute(f"SELECT {key_col}, {blob_col} FROM {table} WHERE {blob_col} IS NOT NULL "
                        f"ORDER BY {key_col}").fetchall()
    return [(r[0], bytes(r[1])) for r in rows]


def replace_sealed(conn: Conn, table: str, key_col: str, blob_col: str, key: str, blob: bytes) -> None:
    if (table, key_col, blob_col) not in SEALED_COLUMNS:
        raise ValueError(f"{table}.{blob_col} is not a sealed column")
    conn.execute(f"UPDATE {table} SET {blob_col} = ? WHERE {key_col} = ?", (blob, key))
