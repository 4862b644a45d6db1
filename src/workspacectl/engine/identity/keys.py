"""Personal and platform API keys: made by a session, shown once, stored as SHA-256."""
from __future__ import annotations

from typing import TYPE_CHECKING

from workspacectl import clock
from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.events.record import record_event
from workspacectl.engine.identity.render import secret_json
from workspacectl.engine.pagination import name_filter, page, page_args
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.schema_blocks import NAMED_PAGE, STR, TIME, array, nullable, obj, page_of, ref, text
from workspacectl.engine.scopes import KIND_SCOPES, SESSION
from workspacectl.engine.store import identity as store
from workspacectl.errors import ApiError
from workspacectl.secret import new_secret, sha256_hex

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

MAX_CREDENTIALS = 100   # the credentials one key may be limited to (engine/vault/key_limits.py)


KEY_CREDENTIALS = nullable(array(STR, description="The credential ids the key is limited to; null: not limited."))
_KEY_LIMIT = {"credentials": nullable(array(text(1, 100), minItems=1, maxItems=100, description=(
    "Platform keys only: the credential ids (cred_…) the key is limited to, each one its creator can use; "
    "any other credential is 404 to it. Absent or null: every credential its creator can use.")))}
_KEY_BODY = {"oneOf": [
    obj({"kind": {"const": kind}, "scopes": array(text(enum=list(scopes)), minItems=1, maxItems=20),
         "name": text(0, 200), "expiresAt": text(1, 64, format="date-time", description="In the future."),
         **(_KEY_LIMIT if kind == "platform" else {})},
        required=["kind", "scopes"])
    for kind, scopes in KIND_SCOPES.items()]}


@route("GET", "/v1/keys", scope=SESSION,
       query=NAMED_PAGE,
       responses={200: page_of("keys", ref("ApiKey"))},
       summary="List API keys: one's own, or all of them for an owner or admin.")
def list_keys(ctx: Ctx) -> dict:
    limit, after = page_args(ctx)
    owner = None if ctx.caller.is_admin else ctx.caller.member_id
    rows = store.list_keys(ctx.db, owner, after, limit + 1, name_filter(ctx))
    return page("keys", rows, limit, lambda r: r["id"], secret_json)


@route("POST", "/v1/keys", scope=SESSION,
       body=_KEY_BODY,
       responses={201: obj({
           "id": STR, "secret": text(description="Shown only here."), "kind": text(enum=list(KIND_SCOPES)),
           "scopes": array(STR), "name": STR, "memberId": STR, "createdAt": TIME, "expiresAt": nullable(TIME),
           "credentials": KEY_CREDENTIALS}, required="all")},
       summary="Create a platform or personal API key; the secret is shown once.")
def create_key(ctx: Ctx) -> Response:
    body = v.body_dict(ctx)
    kind = v.choice(body, "kind", tuple(KIND_SCOPES))
    scopes = v.string_list(body, "scopes", max_items=20)
    if not scopes:
        raise v.bad(f"A {kind} key needs at least one scope: {', '.join(KIND_SCOPES[kind])}.")
    check_kind_scopes(kind, scopes)
    name = v.string(body, "name", required=False, min_len=0, max_len=200, default="")
    expires_at = v.string(body, "expiresAt", required=False, max_len=64)
    if expires_at is not None:
        try:
            when = clock.parse_iso(expires_at)
            expires_at = clock.iso(when)  # may overflow: 9999-12-31T23:59:59-01:00 is past year 9999 in UTC
        except (ValueError, OverflowError):
            raise v.bad("'expiresAt' must be an ISO 8601 timestamp such as 2027-01-31T00:00:00Z.") from None
        if when <= clock.now():
            raise v.bad("'expiresAt' must be in the future.")
    limit = _credential_limit(body, kind)
    secret = new_secret(f"ws_{kind}_")
    with transaction(ctx.db):
        if limit is not None:
            _check_usable(ctx.db, ctx.caller.member_id, limit)
        row = store.insert_secret(ctx.db, kind, ctx.caller.member_id, sha256_hex(secret), name, scopes, expires_at,
                                  credential_ids=limit)
        record_event(ctx.db, "key.created", subject_id=row["id"], actor_id=ctx.caller.member_id,
                     data={"kind": kind, "name": name, "scopes": scopes})
    out = secret_json(row)
    return Response(201, {"id": out["id"], "secret": secret, "kind": kind, "scopes": out["scopes"], "name": name,
                          "memberId": out["memberId"], "createdAt": out["createdAt"], "expiresAt": expires_at,
                          "credentials": out["credentials"]})


def _credential_limit(body: dict, kind: str) -> list[str] | None:
    """`credentials`: the ids a platform key is limited to (engine/vault/key_limits.py); absent or
    null for a key that reaches every credential its creator can use."""
    value = body.get("credentials")
    if value is None:
        return None
    if kind != "platform":
        raise v.bad("'credentials' limits a platform key to named credentials; a personal key reaches no "
                    "credential, so it takes none. Leave 'credentials' out, or make a platform key.")
    if not isinstance(value, list) or not value or len(value) > MAX_CREDENTIALS or not all(
            isinstance(c, str) and 0 < len(c) <= 100 for c in value):
        raise v.bad(f"'credentials' must be a list of 1 to {MAX_CREDENTIALS} credential ids (cred_…); leave it out "
                    "for a key that reaches every credential you can use.")
    return list(dict.fromkeys(value))


def _check_usable(conn: Conn, member_id: str, cred_ids: list[str]) -> None:
    """Each credential a key is limited to is one its creator can use (owner or `user` share): 404
    otherwise, as an unknown id is."""
    from workspacectl.engine.store import vault as vault_store

    for cred_id in cred_ids:
        row = vault_store.get_credential_for(conn, cred_id, member_id)
        if (row is None or row["access"] is None) and not cred_id.startswith("cred_"):
            raise ApiError("not_found", f"No credential with id '{cred_id[:100]}': 'credentials' takes credentials' "
                           "ids (cred_…), not their names. `wsctl vault list` shows the ids; `wsctl keys create "
                           "--credential NAME` turns names into ids for you.")
        if row is None or row["access"] is None:
            raise ApiError("not_found", f"No credential {cred_id} that you can see. Run `wsctl vault list`.")
        if row["access"] == "viewer":
            raise ApiError("not_found", f"No credential {cred_id} that you can use: it is shared with you as viewer "
                           "only, so a key limited to it could not use it either. Ask its owner for user access.")


def check_kind_scopes(kind: str, scopes: list[str]) -> None:
    """400 for a scope the kind cannot hold, saying which kind of key it belongs to."""
    takes = f"{kind} keys take: {', '.join(KIND_SCOPES[kind])}."
    for scope in scopes:
        if scope in KIND_SCOPES[kind]:
            continue
        owner = next((k for k, held in KIND_SCOPES.items() if scope in held), None)
        if owner is None:
            raise v.bad(f"{scope[:80]!r} is not a scope; {takes}")
        raise v.bad(f"{scope} belongs to {owner} keys, not {kind} ones: make a {owner} key for it "
                    f"(`wsctl keys create --kind {owner} --scope {scope}`); {takes}")


@route("DELETE", "/v1/keys/{id}", scope=SESSION,
       responses={204: None},
       summary="Revoke an API key.")
def revoke_key(ctx: Ctx) -> Response:
    row = store.get_secret(ctx.db, ctx.params["id"])
    visible = row is not None and row["kind"] in KIND_SCOPES and (
        ctx.caller.is_admin or row["member_id"] == ctx.caller.member_id)
    if not visible or row["revoked_at"]:
        raise ApiError("not_found", f"No key '{ctx.params['id']}'. Run `wsctl keys list`.")
    with transaction(ctx.db):
        if store.revoke_secret(ctx.db, row["id"]):
            record_event(ctx.db, "key.revoked", subject_id=row["id"], actor_id=ctx.caller.member_id,
                         data={"kind": row["kind"], "name": row["name"]})
    return Response(204)
