"""SQL for the integration catalog: integrations, operations, trigger providers, built-ins.

Other areas read through `get_integration` and `get_oauth_client`; only this module writes the
tables (m002_catalog). A service is replaced whole in one transaction; the integration row is
updated in place (never deleted and re-made) so rows of other areas that point at it survive.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import sqlite3
from pathlib import Path

from workspacectl import clock
from workspacectl.engine.db import transaction
from workspacectl.errors import ApiError

log = logging.getLogger("wsctl.catalog")

BUILTIN_HASH_SETTING = "catalog.builtin_hash"
# Bump when the loader's output changes for the same data files (markdown layout, defaults).
LOADER_VERSION = "2"
SEARCH_MODULE = "workspacectl.engine.catalog.search"


def oauth_aad(service: str) -> str:
    return f"oauth-client:{service}"


def _search():
    """The search engineer's index module, when this version has it."""
    if importlib.util.find_spec(SEARCH_MODULE) is None:
        return None
    return importlib.import_module(SEARCH_MODULE)


# --- rendering -------------------------------------------------------------------------------

def integration_summary(row) -> dict:
    return {
        "service": row["service"],
        "name": row["name"],
        "description": row["description"],
        "credentialType": row["credential_type"],
        "envVars": json.loads(row["env_vars_json"]),
        "operationCount": row["operation_count"] if "operation_count" in row.keys() else 0,
    }


def integration_detail(row) -> dict:
    out = integration_summary(row)
    setup = json.loads(row["setup_json"])
    out["fields"] = json.loads(row["fields_json"])
    if row["credential_type"] == "apiKey":
        out["secretFields"] = json.loads(row["secret_fields_json"])
    if row["credential_type"] == "oauth2":
        for key in ("authorizeUrl", "tokenUrl", "scopes", "revokeUrl", "pkce", "scopeSeparator",
                    "extraAuthorizeParams"):
            if key in setup:
                out[key] = setup[key]
        out["oauthClientConfigured"] = bool(row["oauth_client_id"]) and row["oauth_client_secret"] is not None
    for key in ("baseUrl", "docsUrl", "probe"):
        if setup.get(key) is not None:
            out[key] = setup[key]
    out["source"] = row["source"]
    out["updatedAt"] = row["updated_at"]
    return out


def setup_of(row) -> dict:
    return json.loads(row["setup_json"])


def operation_summary(row) -> dict:
    return {"opId": row["op_id"], "service": row["service"], "name": row["name"], "summary": row["summary"],
            "method": row["method"], "path": row["path"]}


def operation_detail(row, integration_row) -> dict:
    out = operation_summary(row)
    out.update({
        "description": row["description"],
        "tags": json.loads(row["tags"]),
        "params": json.loads(row["params_json"]),
        "response": json.loads(row["response_json"]),
        "example": json.loads(row["example_json"]),
        "credentialType": integration_row["credential_type"],
        "envVars": json.loads(integration_row["env_vars_json"]),
        "markdown": row["markdown"],
    })
    return out


def trigger_json(row, with_config: bool = False) -> dict:
    """The seed's trigger provider fields (cadenceSeconds for poll only); config on the detail."""
    out = {
        "type": row["type"],
        "triggerId": row["id"],
        "name": row["name"],
        "description": row["description"],
        "service": row["service"],
        "requiresCredential": bool(row["requires_credential"]),
    }
    if row["type"] == "poll":
        out["cadenceSeconds"] = row["cadence_seconds"]
    if with_config:
        out["config"] = json.loads(row["config_json"])
    return out


# --- reads -----------------------------------------------------------------------------------

_WITH_COUNT = ("SELECT i.*, (SELECT count(*) FROM operations o WHERE o.service = i.service) AS operation_count "
               "FROM integrations i")


def get_integration(conn, service: str) -> sqlite3.Row | None:
    return conn.execute(_WITH_COUNT + " WHERE i.service = ?", (service,)).fetchone()


def list_integrations(conn, after, limit: int) -> list:
    return conn.execute(_WITH_COUNT + " WHERE i.service > ? ORDER BY i.service LIMIT ?",
                        (after if isinstance(after, str) else "", limit)).fetchall()


def list_operations(conn, service: str, after, limit: int) -> list:
    after = after if isinstance(after, int) and not isinstance(after, bool) else -1
    return conn.execute("SELECT * FROM operations WHERE service = ? AND position > ? ORDER BY position LIMIT ?",
                        (service, after, limit)).fetchall()


def get_operation(conn, op_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM operations WHERE op_id = ?", (op_id,)).fetchone()


def get_operations(conn, op_ids: list[str]) -> dict:
    """opId -> row, for the ids that exist (search results)."""
    out = {}
    for i in range(0, len(op_ids), 500):
        chunk = op_ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for row in conn.execute(f"SELECT * FROM operations WHERE op_id IN ({marks})", chunk):
            out[row["op_id"]] = row
    return out


def _casefold(text) -> str:
    return text.casefold() if isinstance(text, str) else ""


def list_triggers(conn, words: list[str], after, limit: int) -> list:
    """Providers whose name, service or description hold every word, case-insensitively for any
    script (SQLite's LIKE and lower() fold ASCII only, so Python's casefold() does it).

    Order: generic providers first, then by service and position; `after` is the last sort key.
    """
    conn.create_function("wsctl_casefold", 1, _casefold, deterministic=True)
    sql = "SELECT *, coalesce(service, '') AS sort_service FROM trigger_providers WHERE 1 = 1"
    args: list = []
    for w in words:
        sql += (" AND (instr(wsctl_casefold(name), ?) > 0 OR instr(wsctl_casefold(service), ?) > 0"
                " OR instr(wsctl_casefold(description), ?) > 0)")
        args += [w.casefold()] * 3
    if isinstance(after, list) and len(after) == 3:
        sql += " AND (coalesce(service, ''), position, id) > (?, ?, ?)"
        args += [str(after[0]), int(after[1]) if isinstance(after[1], int) else 0, str(after[2])]
    sql += " ORDER BY sort_service, position, id LIMIT ?"
    return conn.execute(sql, (*args, limit)).fetchall()


def trigger_sort_key(row) -> list:
    return [row["service"] or "", row["position"], row["id"]]


def get_trigger(conn, trigger_id: str) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM trigger_providers WHERE id = ?", (trigger_id,)).fetchone()


# --- OAuth client ----------------------------------------------------------------------------

def get_oauth_client(ws, service: str):
    """(client_id or None, Secret or None) of an oauth2 integration; the secret is unsealed here."""
    from workspacectl.secret import Secret

    row = ws.conn().execute("SELECT oauth_client_id, oauth_client_secret FROM integrations WHERE service = ?",
                            (service,)).fetchone()
    if row is None:
        return None, None
    secret = None
    if row["oauth_client_secret"] is not None:
        from workspacectl.engine import crypto

        secret = Secret(crypto.unseal(ws, oauth_aad(service), bytes(row["oauth_client_secret"])).decode())
    return row["oauth_client_id"], secret


def set_oauth_client(ws, service: str, client_id: str, client_secret: str | None) -> None:
    """Store an OAuth client; the secret is sealed inside the same write transaction."""
    from workspacectl.engine import crypto

    conn = ws.conn()
    with transaction(conn):
        sealed = crypto.seal(ws, oauth_aad(service), client_secret.encode()) if client_secret is not None else None
        if sealed is None:
            conn.execute("UPDATE integrations SET oauth_client_id = ?, updated_at = ? WHERE service = ?",
                         (client_id, clock.now_iso(), service))
        else:
            conn.execute("UPDATE integrations SET oauth_client_id = ?, oauth_client_secret = ?, updated_at = ? "
                         "WHERE service = ?", (client_id, sealed, clock.now_iso(), service))


# --- writes ----------------------------------------------------------------------------------

def replace_service(conn, record: dict, source: str = "import", sealed_client_secret: bytes | None = None,
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
        search = _search()
        if search is not None:
            search.reindex_service(conn, service)
    return existing is None


def _trigger_clash(conn, service: str | None, ids: list[str]) -> str | None:
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        marks = ",".join("?" * len(chunk))
        row = conn.execute(f"SELECT id FROM trigger_providers WHERE id IN ({marks}) AND "
                           "coalesce(service, '') != ?", (*chunk, service or "")).fetchone()
        if row:
            return row["id"]
    return None


def _insert_triggers(conn, triggers: list[dict], service: str | None) -> None:
    conn.executemany(
        "INSERT INTO trigger_providers (id, type, service, event, name, description, cadence_seconds, "
        "requires_credential, config_json, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(t["id"], t["type"], service, t["event"], t["name"], t["description"], t["cadenceSeconds"],
          int(t["requiresCredential"]), json.dumps(t["config"]), i) for i, t in enumerate(triggers)])


def replace_generic_triggers(conn, triggers: list[dict]) -> None:
    with transaction(conn):
        clash = _trigger_clash(conn, None, [t["id"] for t in triggers])
        if clash:
            raise ApiError("invalid_request", f"Generic trigger id '{clash}' is already used by a service.")
        conn.execute("DELETE FROM trigger_providers WHERE service IS NULL")
        _insert_triggers(conn, triggers, None)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def service_usage(conn, service: str) -> tuple[int, int]:
    """(credentials, pending unexpired connections) of a service: what removing it would strand.

    Checked explicitly: the vault tables (m004, m005) name the service without a foreign key."""
    credentials = conn.execute("SELECT count(*) FROM credentials WHERE service = ?", (service,)).fetchone()[0]
    pending = conn.execute("SELECT count(*) FROM connections WHERE service = ? AND status = 'pending' "
                           "AND expires_at > ?", (service, clock.now_iso())).fetchone()[0]
    return credentials, pending


def delete_service(conn, service: str) -> bool:
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
        search = _search()
        if search is not None:
            search.remove_service(conn, service)
        conn.execute("DELETE FROM integrations WHERE service = ?", (service,))
    return True


# --- the built-in catalog --------------------------------------------------------------------

def default_data_dir() -> Path:
    return Path(__file__).resolve().parent.parent.parent / "catalog_data"


def builtin_files(data_dir: Path) -> list[Path]:
    return sorted(p for p in Path(data_dir).glob("*.toml") if p.is_file())


def builtin_hash(files: list[Path]) -> str:
    h = hashlib.sha256(f"loader:{LOADER_VERSION}\n".encode())
    for p in files:
        data = p.read_bytes()
        h.update(f"{p.name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def load_builtin_records(data_dir: Path, strict: bool = False) -> tuple[list[dict], list[dict]]:
    """(service records, generic trigger providers) from the data files. Files whose name starts
    with '_' hold generic providers. A bad file is skipped with a log line, or raised if strict."""
    from workspacectl.engine.catalog.importer import parse_generic_toml, parse_toml

    records, generic = [], []
    for p in builtin_files(data_dir):
        try:
            text = p.read_text(encoding="utf-8")
            if p.name.startswith("_"):
                generic.extend(parse_generic_toml(text, p.name))
            else:
                records.append(parse_toml(text, p.name))
        except (ApiError, OSError, UnicodeDecodeError) as e:
            if strict:
                raise
            log.warning("built-in catalog file %s skipped: %s", p.name, getattr(e, "message", e))
    return records, generic


def ensure_builtin_catalog(conn, data_dir: Path | None = None) -> bool:
    """Load the shipped catalog when its files changed since the last load (a hash in settings).

    Cheap when nothing changed: one hash of a few small files and one settings read. Never
    replaces a service an admin imported (source 'import'). Answers True when it loaded.
    """
    data_dir = Path(data_dir) if data_dir is not None else default_data_dir()
    files = builtin_files(data_dir)
    digest = builtin_hash(files)
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (BUILTIN_HASH_SETTING,)).fetchone()
    if row is not None and row[0] == digest:
        return False
    records, generic = load_builtin_records(data_dir)
    with transaction(conn):
        row = conn.execute("SELECT value FROM settings WHERE key = ?", (BUILTIN_HASH_SETTING,)).fetchone()
        if row is not None and row[0] == digest:  # another process loaded it meanwhile
            return False
        imported = {r[0] for r in conn.execute("SELECT service FROM integrations WHERE source = 'import'")}
        with_client = {r[0] for r in conn.execute("SELECT service FROM integrations WHERE oauth_client_id IS NOT NULL")}
        shipped = set()
        for record in records:
            shipped.add(record["service"])
            if record["service"] in imported:
                continue
            # The package never ships client secrets, and an admin's OAuth client outlives reloads.
            record = {**record, "oauthClientSecret": None}
            if record["service"] in with_client:
                record["oauthClientId"] = None
            conn.execute("SAVEPOINT builtin_service")
            try:
                replace_service(conn, record, source="builtin")
            except (ApiError, sqlite3.IntegrityError) as e:
                conn.execute("ROLLBACK TO builtin_service")
                log.warning("built-in service %s skipped: %s", record["service"], getattr(e, "message", e))
            conn.execute("RELEASE builtin_service")
        stale = [r[0] for r in conn.execute("SELECT service FROM integrations WHERE source = 'builtin'")
                 if r[0] not in shipped]
        for service in stale:
            conn.execute("SAVEPOINT builtin_stale")
            try:
                delete_service(conn, service)
            except ApiError:
                conn.execute("ROLLBACK TO builtin_stale")  # credentials still use it: keep it
                log.info("retired built-in service %s kept: credentials or connections still use it", service)
            conn.execute("RELEASE builtin_stale")
        if generic or files:
            try:
                replace_generic_triggers(conn, generic)
            except ApiError as e:
                log.warning("generic trigger providers skipped: %s", e.message)
        conn.execute("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                     "value = excluded.value", (BUILTIN_HASH_SETTING, digest))
    return True
