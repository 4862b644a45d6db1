"""Connections: a hosted link that turns into a credential (CONTRACT §4).

    POST /v1/connections {service, credentialId?}
                                    -> 201 {id, service, status: "pending", connectUrl, expiresAt, createdAt}
    GET  /v1/connections/{id}       -> the same, status pending | connected (+credentialId) |
                                       expired (one hour after creation) | failed (+error)

With `credentialId` (a credential of that service the caller owns, typically one marked
`needs_reconnect`) the connection is a *reconnect*: completing it puts the new secrets into that
credential (same id, shares and access log; status back to ok) instead of making a new one.

Only the member who created a connection reads it or completes it; for anyone else it does not
exist (404 on the API, a refusal page on the link). The link token and the OAuth `state` are
stored as SHA-256 hashes; the link URL and the PKCE verifier are sealed (engine/crypto).

The hosted pages (server/connect_pages.py) call the functions below the routes:
`open_link` (who may use which link), `csrf_token`/`check_csrf`, `complete_api_key`,
`authorize_url` (start OAuth with state + PKCE S256) and `finish_oauth` (the callback). Each
change is one transaction that re-checks the connection is still pending, so a link completes
once. The provider call of the code exchange happens outside any transaction.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import re
import secrets as _secrets
import sqlite3
import urllib.parse
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from workspacectl import clock
from workspacectl.engine import crypto
from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.ids import new_id
from workspacectl.engine.registry import Caller, Ctx, Response, route
from workspacectl.engine.schema_blocks import nullable, obj, ref, text
from workspacectl.engine.store import connections as store
from workspacectl.engine.vault import key_limits
from workspacectl.errors import ApiError
from workspacectl.secret import sha256_hex

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn
    from workspacectl.engine.workspaces.folder import Workspace

CONNECTION_SECONDS = 3600
CALLBACK_PATH = "/connect/callback"
MAX_VALUE_CHARS = 16_384
_ERROR_WORD = re.compile(r"^[a-z0-9_.\-]{1,60}$")
_CONNECTABLE = ("apiKey", "oauth2")


def _link_aad(conn_id: str) -> str:
    return f"connection-link:{conn_id}"


def _pkce_aad(conn_id: str) -> str:
    return f"connection-pkce:{conn_id}"


def _integration(conn: Conn, service: str) -> sqlite3.Row | None:
    from workspacectl.engine.store import vault as vault_store

    return vault_store.get_integration(conn, service)


def _json_list(text: str | None) -> list[str]:
    try:
        value = json.loads(text) if text else []
    except (TypeError, ValueError):
        return []
    return [x for x in value if isinstance(x, str) and x] if isinstance(value, list) else []


def _setup(integration: sqlite3.Row) -> dict:
    try:
        value = json.loads(integration["setup_json"] or "{}")
    except (TypeError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


# --- status and the API view ------------------------------------------------------------------

def is_expired(row: sqlite3.Row, now: datetime | None = None) -> bool:
    return (now or clock.now()) >= clock.parse_iso(row["expires_at"])


def status_of(row: sqlite3.Row, now: datetime | None = None) -> str:
    if row["status"] == "pending" and is_expired(row, now):
        return "expired"
    return row["status"]


def _open_link_url(ws: Workspace, row: sqlite3.Row) -> str | None:
    if row["link_sealed"] is None:
        return None
    try:
        return crypto.unseal(ws, _link_aad(row["id"]), row["link_sealed"]).decode()
    except ApiError:
        return None  # sealed under a key that was since retired: the link itself still works


def connection_view(ws: Workspace, row: sqlite3.Row) -> dict:
    out = {
        "id": row["id"],
        "service": row["service"],
        "status": status_of(row),
        "connectUrl": _open_link_url(ws, row),
        "expiresAt": row["expires_at"],
        "createdAt": row["created_at"],
    }
    if row["status"] == "connected":
        out["credentialId"] = row["credential_id"]
    if row["status"] == "failed":
        out["error"] = row["error"]
    return out


def _expiry_from(now: datetime) -> str:
    # Rounded up to the whole second, so the stored time is never earlier than creation + 1 h.
    whole = datetime.fromtimestamp(math.ceil(now.timestamp()), tz=UTC)
    return clock.iso(whole + timedelta(seconds=CONNECTION_SECONDS))


@route("POST", "/v1/connections", scope="vault:connect",
       body=obj({"service": text(1, 100, description="An oauth2 or apiKey integration."),
                 "credentialId": nullable(text(1, 100, description="Reconnect: refill this credential.")),
                 "name": nullable(text(1, 64, r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="The new "
                                       "credential's name (default: the service's, made unique)."))},
                required=["service"]),
       responses={201: ref("Connection")})
def create_connection(ctx: Ctx) -> Response:
    """Start connecting a service; answers the hosted connectUrl."""
    body = v.body_dict(ctx)
    service = v.string(body, "service", max_len=100)
    reconnect_id = v.string(body, "credentialId", required=False, max_len=100)
    name = body.get("name")
    key_limits.check_connect(ctx.caller, reconnect_id)
    conn = ctx.db
    integration = _integration(conn, service)
    if integration is None:
        raise ApiError("not_found", f"No integration '{service}'. Run `wsctl catalog integrations` to see them.")
    ctype = integration["credential_type"]
    if ctype not in _CONNECTABLE:
        raise v.bad(f"{service} is a {ctype} service: there is nothing to connect; use it directly.")
    if ctype == "oauth2":
        from workspacectl.engine.vault import oauth

        oauth.check_client(conn, service)  # no client: the provider's page would only refuse the user
    if reconnect_id:
        reconnect_target(conn, reconnect_id, ctx.caller.member_id, service)
    check_new_name(conn, name, reconnect_id)
    if not ctx.base_url:
        raise v.bad("A hosted link needs a server: run `wsctl vault connect SERVICE` (it starts one on "
                    "loopback) or use a workspace served by `wsctl serve`.")
    token = _secrets.token_urlsafe(32)
    link = f"{ctx.base_url.rstrip('/')}/connect/{token}"
    conn_id = new_id("conn")
    now = clock.now()
    sealed_link = crypto.seal(ctx.ws, _link_aad(conn_id), link.encode())
    with transaction(conn, locks=[connection_lock(conn_id)]):
        store.insert_connection(conn, conn_id=conn_id, service=service, member_id=ctx.caller.member_id,
                                link_hash=sha256_hex(token), link_sealed=sealed_link,
                                created_at=clock.iso(now), expires_at=_expiry_from(now),
                                reconnect_id=reconnect_id or None, name=name)
        row = store.get_connection(conn, conn_id)
        assert row is not None   # just inserted
    return Response(201, connection_view(ctx.ws, row))


def check_new_name(conn: Conn, name: object, reconnect_id: str | None) -> None:
    """The name a connection's new credential will get: valid and free now (400, 409); it is made
    unique when the connection completes if someone took it meanwhile."""
    if name is None:
        return
    if reconnect_id:
        raise v.bad("A reconnect keeps the credential's name; rename it with `wsctl vault rename`.")
    from workspacectl.engine.vault.credential_names import check_name, require_free

    require_free(conn, check_name(name))


def reconnect_target(conn: Conn, cred_id: str, member_id: str, service: str) -> sqlite3.Row:
    """The credential a reconnect will refill: the member's own (404 unseen, 403 not owned), same service."""
    from workspacectl.engine.vault.credentials import owned_credential

    row = owned_credential(conn, cred_id, member_id)
    if row["service"] != service:
        raise v.bad(f"Credential {cred_id} is a {row['service']} credential; reconnect it with "
                    f"`wsctl vault connect {row['service']} --reconnect {cred_id}`.")
    return row


def connection_lock(conn_id: str) -> str:
    """The resource a change of one pending connection locks (db.transaction's locks)."""
    return f"connection:{conn_id}"


def _store_result(ws: Workspace, conn: Conn, row: sqlite3.Row, **values: Any) -> dict:
    """Inside the completing transaction: a new credential, or fresh secrets in the reconnected one."""
    from workspacectl.engine.vault.credentials import create_credential, reconnect_credential

    if row["credential_id"]:  # a pending connection's credential_id is its reconnect target
        reconnect_target(conn, row["credential_id"], row["member_id"], row["service"])
        return reconnect_credential(ws, conn, row["credential_id"], secrets=values["secrets"],
                                    fields=values.get("fields"), scopes=values.get("scopes"),
                                    expires_at=values.get("expires_at"), token_type=values.get("token_type"))
    return create_credential(ws, conn, owner_member_id=row["member_id"], service=row["service"],
                             name=row["name"], name_taken_ok=True, **values)


def _own_connection(conn: Conn, conn_id: object, member_id: str) -> sqlite3.Row:
    row = store.get_connection(conn, conn_id) if isinstance(conn_id, str) else None
    if row is None or row["member_id"] != member_id:
        raise ApiError("not_found", f"No connection {conn_id} of yours. Start one with `wsctl vault connect SERVICE`.")
    return row


@route("GET", "/v1/connections/{id}", scope="vault:connect",
       responses={200: ref("Connection")})
def get_connection(ctx: Ctx) -> dict:
    """Poll a connection until it is connected (then credentialId is present). A limited key sees
    only the connections of its own credentials (a reconnect of one; none that makes a new one)."""
    row = _own_connection(ctx.db, ctx.params["id"], ctx.caller.member_id)
    if not key_limits.reaches(ctx.caller, row["credential_id"]):
        raise ApiError("not_found", f"No connection {ctx.params['id']} of yours. Start one with `wsctl vault connect SERVICE`.")
    return connection_view(ctx.ws, row)


# --- the hosted link ----------------------------------------------------------------------------

@dataclass
class LinkForm:
    """What the apiKey page asks for: secret inputs and plain ones, by their field names."""

    service: str
    service_name: str
    secret_fields: list[str]
    fields: list[str]
    description: str = ""
    docs_url: str | None = None   # the catalog's help link: where the provider shows the key


def _check_usable(row: sqlite3.Row) -> None:
    if row["status"] == "connected":
        raise ApiError("expired", "This link was already used: the account is connected. "
                       "Start a new connection with `wsctl vault connect` to add another.")
    if row["status"] == "failed":
        raise ApiError("expired", "This connection failed and its link can no longer be used. "
                       "Start again with `wsctl vault connect`.")
    if is_expired(row):
        raise ApiError("expired", "This link has expired (links last one hour). "
                       "Start again with `wsctl vault connect`.")


def _check_member(row: sqlite3.Row, caller: Caller | None) -> None:
    if caller is None:
        raise ApiError("unauthenticated", "Sign in first: this page opens through the single-use sign-in link that "
                       "`wsctl vault connect` prints or opens, which signs you in as the member who started the "
                       "connection. If that link was already used in another browser, run `wsctl vault connect "
                       "SERVICE` again for a new one.")
    if caller.member_id != row["member_id"]:
        raise ApiError("forbidden", "This link belongs to another member. Only the member who started the "
                       "connection can complete it; nothing was changed.")


def credential_name(conn: Conn, cred_id: str | None, member_id: str | None) -> str | None:
    """The name of a credential the member can see (the connected page says how to use it by name)."""
    from workspacectl.engine.vault.credentials import visible_credential

    if not cred_id or not member_id:
        return None
    try:
        return visible_credential(conn, cred_id, member_id)["name"]
    except ApiError:
        return None


def open_link(conn: Conn, token: str, caller: Caller | None) -> sqlite3.Row:
    """The connection behind a link for its creator: 404 unknown, 401 no web session,
    403 another member, 410 expired or already used. Changes nothing."""
    row = store.find_by_link(conn, sha256_hex(token)) if token else None
    if row is None:
        raise ApiError("not_found", "This connect link is not valid. Start again with `wsctl vault connect`.")
    _check_member(row, caller)
    _check_usable(row)
    return row


def service_form(conn: Conn, service: str) -> LinkForm:
    """The secret and plain fields a connection of `service` asks for."""
    from workspacectl.engine.vault.credentials import secret_field_names

    integration = _integration(conn, service)
    if integration is None:
        raise ApiError("not_found", f"No integration '{service}'. Run `wsctl catalog integrations` to see them.")
    secret_fields = secret_field_names(integration)
    fields = [f for f in _json_list(integration["fields_json"]) if f not in secret_fields]
    docs = _setup(integration).get("docsUrl")
    docs = docs if isinstance(docs, str) and docs.startswith(("https://", "http://")) else None
    return LinkForm(service, integration["name"] or service, secret_fields, fields,
                    integration["description"] or "", docs)


def check_key(ws: Workspace, conn: Conn, service: str, secrets: dict, fields: dict) -> None:
    """An apiKey service whose definition names a probe: call it with the entered key before
    anything is stored. A key the provider refuses is 400 with what to do; nothing is stored.
    A probe that proves nothing (or a provider out of reach) does not block the connection."""
    from workspacectl.engine.vault import probe
    from workspacectl.secret import Secret

    integration = _integration(conn, service)
    if integration is None:
        return
    try:
        found = probe.run_probe(conn, integration, {k: Secret(val) for k, val in secrets.items()}, fields, "apiKey")
    except ApiError as e:
        if e.code in ("upstream_failed", "conflict"):
            return
        raise
    if found == "invalid":
        name = integration["name"] or service
        raise v.bad(f"{name} refused this key: it is wrong, revoked or lacks access. Check it and try again; "
                    "nothing was stored.")


def link_form(conn: Conn, row: sqlite3.Row) -> LinkForm:
    return service_form(conn, row["service"])


def credential_type(conn: Conn, service: str) -> str:
    """The credential type of `service`'s integration (404 once it left the catalog)."""
    integration = _integration(conn, service)
    if integration is None:
        raise ApiError("not_found", f"The integration '{service}' was removed from the catalog.")
    return integration["credential_type"]


def csrf_token(web_cookie: str, conn_id: str) -> str:
    """Bound to the browser's web session (its cookie, never seen by another site) and the connection."""
    mac = hmac.new(web_cookie.encode(), f"wsctl-connect-csrf:{conn_id}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def check_csrf(web_cookie: str | None, conn_id: str, presented: object) -> None:
    if not web_cookie or not isinstance(presented, str) or not presented:
        raise ApiError("forbidden", "The form was missing its security token; reload the link and submit again. "
                       "Nothing was changed.")
    if not hmac.compare_digest(csrf_token(web_cookie, conn_id), presented):
        raise ApiError("forbidden", "The form's security token does not match this sign-in; reload the link and "
                       "submit again. Nothing was changed.")


def complete_api_key(ws: Workspace, conn_id: str, member_id: str, values: dict) -> dict:
    """Store the entered secrets and fields as a credential; the connection becomes connected and
    its link used, in the same transaction. Invalid values change nothing (400)."""
    conn = ws.conn()
    row = _own_connection(conn, conn_id, member_id)
    _check_usable(row)
    form = link_form(conn, row)
    if credential_type(conn, row["service"]) != "apiKey":
        raise v.bad(f"{form.service_name} is connected through its provider's sign-in, not with a key.")
    secrets: dict = {}
    fields: dict = {}
    missing: list = []
    for name in form.secret_fields + form.fields:
        raw = values.get(name)
        value = raw.strip() if isinstance(raw, str) else ""
        if not value:
            missing.append(name)
        elif len(value) > MAX_VALUE_CHARS:
            raise v.bad(f"'{name}' is too long (at most {MAX_VALUE_CHARS} characters).")
        (secrets if name in form.secret_fields else fields)[name] = value
    if missing:
        raise v.bad(f"Enter a value for: {', '.join(missing)}.")
    check_key(ws, conn, row["service"], secrets, fields)   # outside the transaction: a network call
    with transaction(conn, locks=[connection_lock(conn_id)]):
        row = _own_connection(conn, conn_id, member_id)
        _check_usable(row)
        cred = _store_result(ws, conn, row, secrets=secrets, fields=fields)
        if not store.mark_connected(conn, conn_id, cred["id"], clock.now_iso()):
            raise ApiError("conflict", "This connection was completed by another request.")
        done = store.get_connection(conn, conn_id)
        assert done is not None   # just marked connected
    return connection_view(ws, done)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def authorize_url(ws: Workspace, conn_id: str, member_id: str, base_url: str) -> str:
    """Start (or restart) the OAuth dance: a fresh single-use `state` and PKCE S256 verifier,
    stored hashed and sealed; answers the provider's authorize URL to redirect to."""
    from workspacectl.engine.vault import oauth

    conn = ws.conn()
    row = _own_connection(conn, conn_id, member_id)
    _check_usable(row)
    integration = _integration(conn, row["service"])
    if integration is None or integration["credential_type"] != "oauth2":
        raise v.bad("This service is not connected through OAuth.")
    cfg = oauth.provider_config(ws, conn, row["service"])
    if not cfg.authorize_url:
        raise v.bad(f"{integration['name']} has no authorize URL in the catalog; an admin must add it.")
    if not cfg.client_id:
        raise oauth.missing_client(row["service"])
    from workspacectl.engine.catalog.urls import resolve_checked

    resolve_checked(cfg.authorize_url, f"{row['service']}'s authorize URL", required=False)  # the browser goes next
    setup = _setup(integration)
    use_pkce = setup.get("pkce", True) is not False
    state = _secrets.token_urlsafe(32)
    verifier = _secrets.token_urlsafe(48)  # 64 characters of [A-Za-z0-9_-] (RFC 7636: 43..128)
    redirect_uri = base_url.rstrip("/") + CALLBACK_PATH
    params = {"response_type": "code", "client_id": cfg.client_id, "redirect_uri": redirect_uri}
    if cfg.scopes:
        params["scope"] = cfg.scope_separator.join(cfg.scopes)
    params["state"] = state
    if use_pkce:
        params["code_challenge"] = _b64url(hashlib.sha256(verifier.encode()).digest())
        params["code_challenge_method"] = "S256"
    extra = setup.get("extraAuthorizeParams")
    if isinstance(extra, dict):
        for k, val in extra.items():
            if isinstance(k, str) and isinstance(val, (str, int, float, bool)) and k not in params:
                params[k] = str(val).lower() if isinstance(val, bool) else str(val)
    sealed = crypto.seal(ws, _pkce_aad(conn_id), verifier.encode()) if use_pkce else None
    with transaction(conn, locks=[connection_lock(conn_id)]):
        if not store.start_oauth(conn, conn_id, state_hash=sha256_hex(state), pkce_sealed=sealed,
                                 redirect_uri=redirect_uri):
            raise ApiError("expired", "This connection is no longer waiting; start again with `wsctl vault connect`.")
    sep = "&" if "?" in cfg.authorize_url else "?"
    return cfg.authorize_url + sep + urllib.parse.urlencode(params)


def _fail(conn: Conn, conn_id: str, message: str) -> None:
    with transaction(conn, locks=[connection_lock(conn_id)]):
        store.mark_failed(conn, conn_id, message[:300], clock.now_iso())


def _provider_word(value: object) -> str:
    return value if isinstance(value, str) and _ERROR_WORD.match(value) else "error"


def finish_oauth(ws: Workspace, *, state: object, code: object, error: object, caller: Caller | None) -> dict:
    """The provider's redirect back: check `state` (known, single use, unexpired, this member's),
    exchange the code with the PKCE verifier, store the tokens as a credential.

    A bad or reused state, another member or an expired connection change nothing. A provider
    `error=` or a refused exchange mark the connection failed (with the reason)."""
    from workspacectl.engine.vault import oauth

    conn = ws.conn()
    if not isinstance(state, str) or not state or len(state) > 512:
        raise v.bad("This sign-in response carries no state, so it cannot be matched to a connection. "
                    "Start again with `wsctl vault connect`.")
    state_hash = sha256_hex(state)
    row = store.find_by_state(conn, state_hash)
    if row is None:
        raise v.bad("This sign-in response does not match any connection in progress (unknown or replaced "
                    "state). Nothing was changed; start again with `wsctl vault connect`.")
    _check_member(row, caller)
    if row["state_used_at"]:
        raise ApiError("expired", "This sign-in response was already used. Nothing was changed.")
    _check_usable(row)
    if error is not None:
        word = _provider_word(error)
        with transaction(conn, locks=[connection_lock(row["id"])]):
            if store.use_state(conn, state_hash, clock.now_iso()):
                store.mark_failed(conn, row["id"], f"The provider refused the connection ({word}).", clock.now_iso())
        raise ApiError("forbidden", f"The provider did not grant access ({word}). Start again with "
                       "`wsctl vault connect` to retry.")
    if not isinstance(code, str) or not code or len(code) > 4096:
        raise v.bad("The provider sent no authorization code. Start again with `wsctl vault connect`.")
    with transaction(conn, locks=[connection_lock(row["id"])]):
        if not store.use_state(conn, state_hash, clock.now_iso()):
            raise ApiError("expired", "This sign-in response was already used. Nothing was changed.")
    verifier = None
    sealed = store.get_pkce_sealed(conn, row["id"])
    try:
        if sealed is not None:
            verifier = crypto.unseal(ws, _pkce_aad(row["id"]), sealed).decode()
        tokens = oauth.exchange_code(ws, conn, row["service"], code=code, redirect_uri=row["redirect_uri"],
                                     code_verifier=verifier)
    except ApiError as e:
        _fail(conn, row["id"], e.message)
        raise
    try:
        with transaction(conn, locks=[connection_lock(row["id"])]):
            current = store.get_connection(conn, row["id"])
            if current is None or current["status"] != "pending":
                raise ApiError("expired", "This connection is no longer waiting; start again with "
                               "`wsctl vault connect`.")
            cred = _store_result(ws, conn, current, secrets=tokens.secrets(), fields=tokens.fields,
                                 scopes=tokens.scopes, expires_at=tokens.expires_at, token_type=tokens.token_type)
            store.mark_connected(conn, row["id"], cred["id"], clock.now_iso())
            done = store.get_connection(conn, row["id"])
            assert done is not None   # just marked connected
    except ApiError as e:
        _fail(conn, row["id"], e.message)
        raise
    return connection_view(ws, done)


def connect_in_place(ws: Workspace, caller: Caller, service: str, values: dict, reconnect_id: str | None = None,
                     name: str | None = None) -> dict:
    """`wsctl vault connect` of an apiKey service on the local backend, with the key read from a
    hidden prompt or stdin: the same connection record, made and completed in one transaction,
    with no link (nothing to open, no server needed). Answers the connection view."""
    from workspacectl.engine.scopes import check_scope

    check_scope(caller, "vault:connect")
    key_limits.check_connect(caller, reconnect_id)
    conn = ws.conn()
    integration = _integration(conn, service)
    if integration is None:
        raise ApiError("not_found", f"No integration '{service}'. Run `wsctl catalog integrations` to see them.")
    if integration["credential_type"] != "apiKey":
        raise v.bad(f"{service} is a {integration['credential_type']} service; only API-key services take a "
                    "key at a prompt.")
    if reconnect_id:
        reconnect_target(conn, reconnect_id, caller.member_id, service)
    check_new_name(conn, name, reconnect_id)
    conn_id = new_id("conn")
    now = clock.now()
    with transaction(conn, locks=[connection_lock(conn_id)]):
        store.insert_connection(conn, conn_id=conn_id, service=service, member_id=caller.member_id,
                                link_hash=sha256_hex(_secrets.token_urlsafe(32)), link_sealed=None,
                                created_at=clock.iso(now), expires_at=_expiry_from(now),
                                reconnect_id=reconnect_id or None, name=name)
        return complete_api_key(ws, conn_id, caller.member_id, values)
