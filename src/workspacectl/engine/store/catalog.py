"""SQL for the integration catalog: integrations, operations, trigger providers (m002_catalog).

Statements only: rendering rows is engine/catalog/render.py, sealing the OAuth client secret
engine/catalog/services.py (which also keeps the search index in step), loading the built-in
catalog engine/catalog/builtins.py. Only this module writes these tables. A service is replaced whole in one transaction; the integration row is
updated in place (never deleted and re-made) so rows of other areas that point at it survive.
"""
from __future__ import annotations

import json

from workspacectl import clock
from workspacectl.engine.db import transaction
from workspacectl.engine.db.conn import Conn, Cursor, Row
from workspacectl.errors import ApiError

# --- reads -----------------------------------------------------------------------------------

_WITH_COUNT = ("SELECT i.*, (SELECT count(*) FROM operations o WHERE o.service = i.service) AS operation_count "
               "FROM integrations i")


def get_integration(conn: Conn, service: str) -> Row | None:
    return conn.execute(_WITH_COUNT + " WHERE i.service = ?", (service,)).fetchone()


def list_integrations(conn: Conn, after: object, limit: int) -> list:
    return conn.execute(_WITH_COUNT + " WHERE i.service > ? ORDER BY i.service LIMIT ?",
                        (after if isinstance(after, str) else "", limit)).fetchall()


def list_operations(conn: Conn, service: str, after: object, limit: int) -> list:
    position = after if isinstance(after, int) and not isinstance(after, bool) else -1
    return conn.execute("SELECT * FROM operations WHERE service = ? AND position > ? ORDER BY position LIMIT ?",
                        (service, position, limit)).fetchall()


def get_operation(conn: Conn, op_id: str) -> Row | None:
    return conn.execute("SELECT * FROM operations WHERE op_id = ?", (op_id,)).fetchone()


def iter_triggers(conn: Conn, after: object) -> Cursor:
    """Every trigger provider in list order, after the sort key `after` (any other shape starts
    from the top): generic providers first, then by service and position. The caller filters
    (engine/catalog/triggers.py matches q with Python's casefold(), the same on both stores)."""
    sql = "SELECT *, coalesce(service, '') AS sort_service FROM trigger_providers"
    args: list = []
    if isinstance(after, list) and len(after) == 3:
        sql += " WHERE (coalesce(service, ''), position, id) > (?, ?, ?)"
        args += [str(after[0]), int(after[1]) if isinstance(after[1], int) else 0, str(after[2])]
    return conn.execute(sql + " ORDER BY sort_service, position, id", args)


def trigger_sort_key(row: Row) -> list:
    return [row["service"] or "", row["position"], row["id"]]


def get_trigger(conn: Conn, trigger_id: str) -> Row | None:
    return conn.execute("SELECT * FROM trigger_providers WHERE id = ?", (trigger_id,)).fetchone()


# --- writes ----------------------------------------------------------------------------------

def put_service(conn: Conn, record: dict, source: str = "import", sealed_client_secret: bytes | None = None,
                    keep_client_secret: bool = True) -> bool:
    """Put a service (integration, operations, triggers) in place of any previous one, in one
    transaction. Answers True when the service is new. A previous OAuth client is kept unless the
    record brings one (its secret also goes when keep_client_secret is False: the token URL moved)."""
    service = record["service"]
    now = clock.now_iso()
    with transaction(conn):
        clash = _trigger_clash(conn, service, [t["id"] for t in record["triggers"]])
        if clash:
            raise ApiError("invalid_request", f"Trigger id '{clash}' is already used by another service; "
                                              "give the trigger another event name.")
        existing = conn.execute("SELECT credential_type, oauth_client_id, oauth_client_secret FROM integrations "
                                "WHERE service = ?", (service,)).fetchone()
        if existing and existing["credential_type"] != record["credentialType"]:
            credentials, _ = service_usage(conn, service)
            if credentials:
                raise ApiError("conflict", f"'{service}' is a {existing['credential_type']} service used by "
                               f"{_count(credentials, 'credential')}, which a {record['credentialType']} definition "
                               f"would strand; keep credentialType = \"{existing['credential_type']}\", or have their "
                               "owners delete them with `wsctl vault delete ID` first.",
                               {"credentials": credentials})
        client_id = record.get("oauthClientId") or (existing["oauth_client_id"] if existing else None)
        secret = sealed_client_secret if sealed_client_secret is not None else (
            existing["oauth_client_secret"] if existing and keep_client_secret else None)
        values = (record["name"], record["description"], record["credentialType"],
                  json.dumps(record["envVars"]), json.dumps(record["fields"]), json.dumps(record["secretFields"]),
                  json.dumps(record["setup"]), client_id, secret, source, now, service)
        if existing:
            conn.execute("UPDATE integrations SET name = ?, description = ?, credential_type = ?, env_vars_json = ?, "
                         "fields_json = ?, secret_fields_json = ?, setup_json = ?, oauth_client_id = ?, "
                         "oauth_client_secret = ?, source = ?, updated_at = ? WHERE service = ?", values)
        else:
            conn.execute("INSERT INTO integrations (name, description, credential_type, env_vars_json, fields_json, "
                         "secret_fields_json, setup_json, oauth_client_id, oauth_client_secret, source, updated_at, "
                         "service) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
        conn.execute("DELETE FROM operations WHERE service = ?", (service,))
        conn.executemany(
            "INSERT INTO operations (op_id, service, name, summary, description, method, path, tags, params_json, "
            "response_json, example_json, markdown, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(op["opId"], service, op["name"], op["summary"], op["description"], op["method"], op["path"],
              json.dumps(op["tags"]), json.dumps(op["params"]), json.dumps(op["response"]),
              json.dumps(op["example"]), op["markdown"], i) for i, op in enumerate(record["operations"])])
        conn.execute("DELETE FROM trigger_providers WHERE service = ?", (service,))
        _insert_triggers(conn, record["triggers"], service)
    return existing is None


def _trigger_clash(conn: Conn, service: str | None, ids: list[str]) -> str | None:
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        row = conn.execute(f"SELECT id FROM trigger_providers WHERE id IN ({marks}) AND "
                           "coalesce(service, '') != ?", (*chunk, service or "")).fetchone()
        if row:
            return row["id"]
    return None


def _insert_triggers(conn: Conn, triggers: list[dict], service: str | None) -> None:
    conn.executemany(
        "INSERT INTO trigger_providers (id, type, service, event, name, description, cadence_seconds, "
        "requires_credential, config_json, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(t["id"], t["type"], service, t["event"], t["name"], t["description"], t["cadenceSeconds"],
          int(t["requiresCredential"]), json.dumps(t["config"]), i) for i, t in enumerate(triggers)])


def replace_generic_triggers(conn: Conn, triggers: list[dict]) -> None:
    with transaction(conn):
        clash = _trigger_clash(conn, None, [t["id"] for t in triggers])
        if clash:
            raise ApiError("invalid_request", f"Generic trigger id '{clash}' is already used by a service.")
        conn.execute("DELETE FROM trigger_providers WHERE service IS NULL")
        _insert_triggers(conn, triggers, None)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def service_usage(conn: Conn, service: str) -> tuple[int, int]:
    """(credentials, pending unexpired connections) of a service: what removing it would strand.

    Checked explicitly: the vault tables (m004, m005) name the service without a foreign key."""
    credentials = conn.execute("SELECT count(*) FROM credentials WHERE service = ?", (service,)).fetchone()[0]
    pending = conn.execute("SELECT count(*) FROM connections WHERE service = ? AND status = 'pending' "
                           "AND expires_at > ?", (service, clock.now_iso())).fetchone()[0]
    return credentials, pending


def drop_service(conn: Conn, service: str) -> bool:
    """Remove a service with its operations and triggers. False when there was none; 409 while
    credentials or pending connections use it (checked in the same transaction as the delete)."""
    with transaction(conn):
        if conn.execute("SELECT 1 FROM integrations WHERE service = ?", (service,)).fetchone() is None:
            return False
        credentials, pending = service_usage(conn, service)
        if credentials or pending:
            users = " and ".join(_count(n, noun) for n, noun in ((credentials, "credential"),
                                                                 (pending, "pending connection")) if n)
            steps = []
            if credentials:
                steps.append("their owners delete the credentials with `wsctl vault delete ID` "
                             f"(`wsctl vault list --service {service}` lists yours)")
            if pending:
                steps.append("pending connections lapse within an hour")
            raise ApiError("conflict", f"'{service}' is still used by {users}; {' and '.join(steps)}, "
                           "then delete the service again.", {"credentials": credentials, "pendingConnections": pending})
        conn.execute("DELETE FROM integrations WHERE service = ?", (service,))
    return True


def service_names(conn: Conn, source: str | None = None, with_oauth_client: bool = False) -> set[str]:
    """Services, all or those of one source ('builtin', 'import'), or those with an OAuth client id."""
    sql, args = "SELECT service FROM integrations WHERE 1 = 1", []
    if source is not None:
        sql += " AND source = ?"
        args.append(source)
    if with_oauth_client:
        sql += " AND oauth_client_id IS NOT NULL"
    return {r[0] for r in conn.execute(sql, args)}


def get_oauth_client_row(conn: Conn, service: str) -> Row | None:
    return conn.execute("SELECT oauth_client_id, oauth_client_secret FROM integrations WHERE service = ?",
                        (service,)).fetchone()


def update_oauth_client(conn: Conn, service: str, client_id: str, sealed_secret: bytes | None) -> None:
    """Set the client id, and the sealed secret unless it is None (then the stored one stays)."""
    if sealed_secret is None:
        conn.execute("UPDATE integrations SET oauth_client_id = ?, updated_at = ? WHERE service = ?",
                     (client_id, clock.now_iso(), service))
    else:
        conn.execute("UPDATE integrations SET oauth_client_id = ?, oauth_client_secret = ?, updated_at = ? "
                     "WHERE service = ?", (client_id, sealed_secret, clock.now_iso(), service))
