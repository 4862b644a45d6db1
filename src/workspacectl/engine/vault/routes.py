"""Vault routes: list and read credentials, issue audited tokens, share, read the access log.

Visibility: a credential the caller neither owns nor was granted is 404 (its existence is not
leaked); one it can see but may not change is 403. A platform key acts as its creator.
"""
from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

from workspacectl import clock
from workspacectl.engine import pagination
from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.events.record import record_event
from workspacectl.engine.registry import Ctx, route
from workspacectl.engine.schema_blocks import (
    BOOL,
    INT,
    NAMED_PAGE,
    NOT_BLANK,
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
from workspacectl.engine.store import identity as identity_store
from workspacectl.engine.store import vault as store
from workspacectl.engine.vault import key_limits
from workspacectl.engine.vault.credentials import (
    NEVER_ISSUED,
    credential_detail,
    detail_of,
    env_vars,
    list_entry,
    open_secrets,
    owned_credential,
    precise_iso,
    precise_now,
    visible_credential,
)
from workspacectl.errors import ApiError
from workspacectl.formats import env_text

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

REASON_MAX = 500
TOKEN_ATTEMPTS = 3


_SHARING_BODY = {
    "description": "Exactly one of membershipId (an id or an email) and workspace: true; role null removes "
                   "the share.",
    "oneOf": [
        obj({"membershipId": text(1, 320), "workspace": {"const": False},
             "role": {"enum": ["user", "viewer", None]}}, required=["membershipId", "role"]),
        obj({"workspace": {"const": True}, "role": {"enum": ["user", "viewer", None]}},
            required=["workspace", "role"]),
    ]}


@route("GET", "/v1/credentials", scope="vault:read",
       query=[query("service", STR, "Only credentials of this service."), *NAMED_PAGE],
       responses={200: page_of("credentials", ref("Credential"))},
       summary="List the credentials the caller owns or that are shared with it.")
def list_credentials(ctx: Ctx) -> dict:
    limit, after = pagination.page_args(ctx, str)
    service = ctx.query.get("service") or None
    rows = store.list_credentials_for(ctx.db, ctx.caller.member_id, after, limit + 1, service,
                                      pagination.name_filter(ctx), only=key_limits.only(ctx.caller))
    cache: dict = {}
    return pagination.page("credentials", rows, limit, lambda r: r["id"], lambda r: list_entry(ctx.db, r, cache))


@route("GET", "/v1/credentials/{id}", scope="vault:read",
       responses={200: ref("CredentialDetail")},
       summary="One credential's detail: fields, scopes and sharing, never a secret.")
def get_credential(ctx: Ctx) -> dict:
    return credential_detail(ctx.db, visible_credential(ctx.db, ctx.params["id"], ctx.caller.member_id))


# --- tokens --------------------------------------------------------------------------------

def token_fields(row: sqlite3.Row, secrets: dict, integration_env: dict) -> dict:
    """Only the usable fields: the access token or the integration's secret fields, plus the
    non-secret fields its env vars name (instanceUrl, a Twilio accountSid...). Never a refresh token."""
    out: dict = {}
    if row["credential_type"] == "oauth2":
        if "accessToken" in secrets:
            out["accessToken"] = secrets["accessToken"].reveal()
            out["tokenType"] = row["token_type"] or "Bearer"
    else:
        for name in sorted(secrets):
            if name not in NEVER_ISSUED and name != "accessToken":
                out[name] = secrets[name].reveal()
    try:
        fields = json.loads(row["fields_json"] or "{}")
    except ValueError:
        fields = {}
    usable = set(integration_env) | {"instanceUrl"}
    for name in sorted(usable):
        if name not in out and name not in NEVER_ISSUED and isinstance(fields.get(name), str) and fields[name]:
            out[name] = fields[name]
    if row["expires_at"]:
        out["expiresAt"] = row["expires_at"]
    return out


def _log(conn: Conn, ctx: Ctx, cred_id: str, reason: str, fields: list, outcome: str) -> None:
    c = ctx.caller
    store.insert_access_log(conn, cred_id=cred_id, at=clock.now_iso(), member_id=c.member_id, key_id=c.key_id,
                            caller_kind=c.kind, reason=reason, fields=fields, outcome=outcome)


_VIEWER_ONLY = ("This credential is shared with you as viewer only; ask its owner for user access to "
                "request tokens.")


def issue_token(ctx: Ctx, cred_id: str, reason: str, form: str = "json", dry_run: bool = False) -> dict:
    """Release the token with its audit row in one transaction, refreshing first when needed.

    The transaction reads the credential, the caller's access and the integration's env vars in
    one statement, then writes the row: a token needs no other statement (the server's writes
    queue on one lock, so what happens inside it bounds the token rate). The row is only added,
    never read back under the lock, so the transaction is appends_only: on PostgreSQL token issues
    run beside each other, still never beside a refresh, a share change or a delete. An OAuth token due for
    a refresh leaves the transaction without writing, is refreshed outside it (single flight,
    token_refresh.ensure_fresh: the provider call holds no lock) and the transaction runs again.
    A viewer's request writes its refused row and commits before the 403.

    `form` is how the client will write the fields (env_text.FORMS): a body it cannot write exactly
    is refused here, before the row and the release, so a refused request gets no token. A dry run
    stops there too, answering only the field names."""
    from workspacectl.engine.vault import token_refresh  # OAuth and its refresh: not for listing credentials

    conn = ctx.db
    member = ctx.caller.member_id
    # A refresh completed after the request arrived counts as ours (token_refresh.needs_refresh): a
    # request queued behind a refresh takes its token instead of refreshing again.
    since = precise_iso(ctx.received_at) if ctx.received_at is not None else precise_now()
    if form == "json" and not dry_run and getattr(conn, "dialect", "sqlite") == "postgres" and isinstance(cred_id, str):
        body = _issue_at_once(ctx, cred_id, reason)
        if body is not None:
            return body
    for _ in range(TOKEN_ATTEMPTS):
        refused = False
        with transaction(conn, appends_only=True):
            row = store.get_credential_to_issue(conn, cred_id, member) if isinstance(cred_id, str) else None
            if row is None or row["access"] is None:
                raise ApiError("not_found", f"No credential {cred_id} that you can see. Run `wsctl vault list`.")
            if row["access"] == "viewer":
                _log(conn, ctx, cred_id, reason, [], "refused")
                refused = True
            elif row["status"] == "needs_reconnect":
                raise token_refresh.reconnect_error(row["service"], cred_id, row["last_error"])
            elif not token_refresh.needs_refresh(row, since):
                body = token_fields(row, open_secrets(ctx.ws, row), integration_env := env_vars(row))
                why = env_text.refusal(form, body, integration_env if form in env_text.ENV_FORMS else {})
                if why:
                    raise ApiError("invalid_request", why)
                if dry_run:
                    return {"dryRun": True, "fields": sorted(body)}
                _log(conn, ctx, cred_id, reason, sorted(body), "issued")
                return body
        if refused:
            raise ApiError("forbidden", _VIEWER_ONLY)
        token_refresh.ensure_fresh(ctx.ws, cred_id, since=since)
    raise ApiError("upstream_failed", "The provider keeps issuing tokens that expire at once; try again shortly.")


def _issue_at_once(ctx: Ctx, cred_id: str, reason: str) -> dict | None:
    """PostgreSQL: the issue in one statement (store.issue_token_at_once, m029_token_issue): the read
    and the audit row in one round trip. The answer, or None when the function left the decision to
    the transaction above (nothing written: a reconnect, a refresh that may be due, JSON it does not
    read as we do). Only for the json form without a dry run (the other forms may refuse a body,
    which must leave no row). The fields released are the ones the row names: token_fields
    computes them from the sealed secrets, the function from their names stored beside them
    (written together), so the two agree; a field the row does not name is never released."""
    c = ctx.caller
    row = store.issue_token_at_once(ctx.db, cred_id=cred_id, member_id=c.member_id, key_id=c.key_id,
                                    caller_kind=c.kind, reason=reason, at=clock.now_iso(), now=precise_now())
    if row is None or row["access"] is None:
        raise ApiError("not_found", f"No credential {cred_id} that you can see. Run `wsctl vault list`.")
    if row["outcome"] == "refused":
        raise ApiError("forbidden", _VIEWER_ONLY)
    if row["outcome"] != "issued":
        return None
    body = token_fields(row, open_secrets(ctx.ws, row), env_vars(row))
    logged = json.loads(row["logged_fields"])
    return body if sorted(body) == logged else {k: body[k] for k in logged if k in body}


@route("POST", "/v1/credentials/{id}/token", scope="vault:token", quick=True,
       body=obj({"reason": text(1, REASON_MAX, NOT_BLANK, description="Why; written to the access log."),
                 "format": text(enum=list(env_text.FORMS), description="How the client will write the "
                                "token (default json); one it cannot write exactly is 400 before anything "
                                "is issued or logged."),
                 "dryRun": {**BOOL, "description": "Check only: answer {dryRun, fields} and "
                            "issue and log nothing."}},
                required=["reason"]),
       responses={200: {"type": "object", "additionalProperties": True,
                        "description": "Only the usable fields: accessToken and tokenType (oauth2) or the "
                                       "secret fields by name (apiKey), instanceUrl and the non-secret "
                                       "fields the env vars name, expiresAt. Never a refresh token. "
                                       "A dry run answers {dryRun: true, fields: [names]} instead.",
                        "properties": {"accessToken": STR, "tokenType": STR, "apiKey": STR,
                                       "instanceUrl": STR, "expiresAt": TIME}}},
       summary="Issue the credential's usable token for a stated reason (logged).")
def request_token(ctx: Ctx) -> dict:
    body = ctx.body if ctx.body is not None else {}
    if not isinstance(body, dict):
        raise v.bad('The body must be a JSON object like {"reason": "why you need the token"}.')
    reason = body.get("reason")
    if not isinstance(reason, str) or not reason.strip() or len(reason) > REASON_MAX:
        raise v.bad(f"'reason' is required: say why you need the token, 1 to {REASON_MAX} characters.")
    form = body.get("format", "json")
    if form not in env_text.FORMS:
        raise v.bad(f"'format' must be one of {', '.join(env_text.FORMS)}: how you will write the token.")
    dry_run = v.boolean(body, "dryRun", required=False, default=False)
    return issue_token(ctx, ctx.params["id"], reason, form, bool(dry_run))


# --- sharing -------------------------------------------------------------------------------

@route("PUT", "/v1/credentials/{id}/sharing", scope="vault:manage",
       body=_SHARING_BODY,
       responses={200: ref("CredentialDetail")},
       summary="Share a credential with a member or the workspace, or stop sharing it.")
def put_sharing(ctx: Ctx) -> dict:
    body = v.body_dict(ctx, allow_empty=False)
    conn = ctx.db
    row = owned_credential(conn, ctx.params["id"], ctx.caller.member_id)
    workspace = v.boolean(body, "workspace", required=False, default=False)
    member_ref = v.string(body, "membershipId", required=False, max_len=320)
    if "role" not in body:
        raise v.bad("'role' is required: user, viewer, or null to remove the share.")
    role = body["role"]
    if role is not None and role not in ("user", "viewer"):
        raise v.bad("'role' must be user, viewer, or null to remove the share.")
    if bool(workspace) == bool(member_ref):
        raise v.bad("Give exactly one of 'membershipId' or 'workspace': true.")
    if not member_ref:   # so `workspace` is true
        grantee = "workspace"
    else:
        member = identity_store.find_member(conn, member_ref)
        if member is None:
            raise ApiError("not_found", f"No member {member_ref}. Run `wsctl members list`.")
        grantee = member["id"]
        if grantee == row["owner_member_id"]:
            raise v.bad("The owner always has full access; share with another member or the workspace.")
    with transaction(conn):
        if role is None:
            store.delete_grant(conn, row["id"], grantee)
        else:
            store.set_grant(conn, row["id"], grantee, role, clock.now_iso())
        record_event(conn, "credential.shared", subject_id=row["id"], actor_id=ctx.caller.member_id,
                     data={"service": row["service"], "name": row["name"], "grantee": grantee, "role": role})
        return detail_of(conn, row["id"], ctx.caller.member_id)


# --- access log ----------------------------------------------------------------------------

def _log_entry(r: sqlite3.Row) -> dict:
    try:
        fields = json.loads(r["fields_json"] or "[]")
    except ValueError:
        fields = []
    entry = {"at": r["at"], "membershipId": r["member_id"], "keyId": r["key_id"], "reason": r["reason"],
             "fields": fields, "outcome": r["outcome"]}
    if r["method"] is not None:   # a call through the proxy (m028)
        entry.update({"method": r["method"], "path": r["path"], "upstreamStatus": r["upstream_status"]})
    return entry


@route("GET", "/v1/credentials/{id}/access-log", scope="vault:read",
       query=PAGE,
       responses={200: page_of("entries", obj({
           "at": TIME, "membershipId": STR, "keyId": STR, "reason": STR, "fields": array(STR),
           "outcome": text(enum=["issued", "refused", "proxied", "failed"]),
           "method": text(description="A call through the proxy: its method."),
           "path": text(description="A call through the proxy: the path on the service (no query string)."),
           "upstreamStatus": nullable({**INT, "description": "A call through the proxy: the status the service "
           "answered (null: no answer)."})},
           required=["at", "membershipId", "keyId", "reason", "fields", "outcome"]))},
       summary="Who asked for the credential's token, when and why (owner only).")
def access_log(ctx: Ctx) -> dict:
    row = owned_credential(ctx.db, ctx.params["id"], ctx.caller.member_id)
    limit, before = pagination.page_args(ctx, int)
    rows = store.list_access_log(ctx.db, row["id"], before, limit + 1)
    return pagination.page("entries", rows, limit, lambda r: r["id"], _log_entry)
