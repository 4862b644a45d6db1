"""Authentication: secrets to callers, login codes to sessions, web sign-in links to cookies."""
from __future__ import annotations

import functools
import json
import secrets as _secrets
import sqlite3
from typing import TYPE_CHECKING

from workspacectl import clock
from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.identity.render import member_json
from workspacectl.engine.registry import Caller, Ctx, PublicCtx, Response, route
from workspacectl.engine.schema_blocks import STR, TIME, array, nullable, obj, ref, text
from workspacectl.engine.scopes import AUTHENTICATED, PUBLIC, SESSION
from workspacectl.engine.store import identity as store
from workspacectl.errors import ApiError
from workspacectl.secret import new_secret, sha256_hex

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

SECRET_PREFIXES = {"ws_session_": "session", "ws_platform_": "platform", "ws_personal_": "personal"}
LOGIN_CODE_SECONDS = 15 * 60
WEB_LINK_SECONDS = 5 * 60
WEB_SESSION_SECONDS = 12 * 3600
_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


@functools.lru_cache(maxsize=256)   # a key's scopes as stored (JSON text): parsed once per text
def _scopes(text: str) -> tuple:
    return tuple(json.loads(text))


@functools.lru_cache(maxsize=256)   # a limited key's credential ids as stored (JSON text)
def _limit(text: str | None) -> frozenset[str] | None:
    return frozenset(json.loads(text)) if text is not None else None


def _usable(row: sqlite3.Row) -> bool:
    if row is None or row["revoked_at"]:
        return False
    return not (row["expires_at"] and clock.parse_iso(row["expires_at"]) <= clock.now())


# What a 401 says, by the kind of secret presented: what it was, and what to do.
UNKNOWN_SECRET = {
    "session": "This session is unknown, revoked or expired. Sign in again with `wsctl auth login`.",
    "platform": "This API key is unknown, revoked or expired. Use another key (`wsctl keys create` makes one), or "
                "sign in with `wsctl auth login`.",
    "personal": "This API key is unknown, revoked or expired. Use another key (`wsctl keys create` makes one), or "
                "sign in with `wsctl auth login`.",
    None: "The key or session is unknown, revoked or expired. Sign in again with `wsctl auth login`, or use "
          "another API key (`wsctl keys create` makes one).",
}


def authenticate_secret(conn: Conn, secret: str) -> Caller:
    """A Bearer secret -> Caller, or 401. Web-session cookies are not accepted here."""
    # Real secrets are ASCII; anything else (an env var of stray bytes) is simply unknown.
    kind = next((k for p, k in SECRET_PREFIXES.items() if secret.startswith(p)), None) if secret.isascii() else None
    row = store.find_secret_by_hash(conn, sha256_hex(secret)) if kind else None
    if kind is None or row is None or row["kind"] != kind or not _usable(row):
        raise ApiError("unauthenticated", UNKNOWN_SECRET.get(kind, UNKNOWN_SECRET[None]))
    member = {"id": row["member_id"], "name": row["member_name"], "email": row["member_email"],
              "role": row["member_role"], "createdAt": row["member_created_at"]}
    return Caller(row["member_id"], row["member_role"], kind, row["id"], _scopes(row["scopes"]),
                  _limit(row["credential_ids"]), whoami={"member": member, "workspace": row["workspace_name"]})


def authenticate_web(conn: Conn, cookie: str | None) -> Caller | None:
    if not cookie:
        return None
    row = store.find_secret_by_hash(conn, sha256_hex(cookie))
    if row is None or row["kind"] != "web" or not _usable(row):
        return None
    return Caller(row["member_id"], row["member_role"], "web", row["id"], ())


def signed_in_member(conn: Conn, caller: Caller | None) -> dict | None:
    """The member `caller` is signed in as, as the API shows one; None when signed out or the member is gone."""
    row = store.get_member(conn, caller.member_id) if caller else None
    return member_json(row) if row else None


def normalize_code(code: str) -> str:
    return "".join(ch for ch in code.upper() if ch.isalnum())


def make_login_code(conn: Conn, member_id: str, created_by: str | None) -> dict:
    raw = "".join(_secrets.choice(_CODE_ALPHABET) for _ in range(12))
    expires = clock.later(LOGIN_CODE_SECONDS)
    store.insert_login_code(conn, sha256_hex(raw), member_id, created_by, expires)
    return {"code": f"{raw[:4]}-{raw[4:8]}-{raw[8:]}", "expiresAt": expires}


def new_session(conn: Conn, member_id: str, name: str = "wsctl") -> tuple[str, str]:
    token = new_secret("ws_session_")
    row = store.insert_secret(conn, "session", member_id, sha256_hex(token), name=name)
    return token, row["id"]


@route("POST", "/v1/auth/session", scope=PUBLIC,
       body=obj({"code": text(1, 64, description="A login code; case, spaces and dashes are ignored."),
                 "name": text(1, 200, description="Labels the session (default wsctl).")}, required=["code"]),
       responses={201: obj({"token": STR, "member": ref("Member")}, required="all")},
       summary="Trade a one-time login code for a command-line session token.")
def create_session(ctx: PublicCtx) -> Response:
    body = v.body_dict(ctx)
    code = v.string(body, "code", max_len=64)
    name = v.string(body, "name", required=False, max_len=200, default="wsctl")
    code_hash = sha256_hex(normalize_code(code))
    conn = ctx.db
    with transaction(conn):
        row = store.get_login_code(conn, code_hash)
        if row is None or row["used_at"]:
            raise ApiError("unauthenticated", "That login code is not valid here or was already used: a code is used once, "
                           "on the server of the workspace that made it. Ask an admin of that workspace for a new one "
                           "(`wsctl members login-code EMAIL`).")
        if clock.parse_iso(row["expires_at"]) <= clock.now():
            raise ApiError("expired", "That login code has expired. Ask an admin for a new one.")
        if not store.use_login_code(conn, code_hash):
            raise ApiError("unauthenticated", "That login code was already used. Ask an admin for a new one.")
        token, _ = new_session(conn, row["member_id"], name)
        member_row = store.get_member(conn, row["member_id"])
        assert member_row is not None   # the login code's member: a member's codes go with it
        member = member_json(member_row)
    return Response(201, {"token": token, "member": member})


@route("DELETE", "/v1/auth/session", scope=SESSION,
       responses={204: None},
       summary="Sign out: revoke the session presented.")
def delete_session(ctx: Ctx) -> Response:
    if ctx.caller.kind == "session" and ctx.caller.key_id != "local":
        store.revoke_secret(ctx.db, ctx.caller.key_id)
    return Response(204)


@route("GET", "/v1/auth/whoami", scope=AUTHENTICATED, quick=True,
       responses={200: obj({
           "member": ref("Member"), "kind": text(enum=["session", "platform", "personal"]), "keyId": STR,
           "scopes": array(STR), "workspace": nullable(STR),
           "credentials": nullable(array(STR, description="A key limited to named credentials: their ids."))},
           required="all")},
       summary="The member and key the request acts as.")
def whoami(ctx: Ctx) -> dict:
    c = ctx.caller
    limit = sorted(c.credentials) if c.credentials is not None else None
    if c.whoami is not None:   # read with the secret, in the same statement (authenticate_secret)
        return {"member": dict(c.whoami["member"]), "kind": c.kind, "keyId": c.key_id, "scopes": list(c.scopes),
                "workspace": c.whoami["workspace"], "credentials": limit}
    member = store.get_member_and_workspace_name(ctx.db, c.member_id)
    if member is None:   # removed since this request was authenticated
        raise ApiError("unauthenticated", UNKNOWN_SECRET.get(c.kind, UNKNOWN_SECRET[None]))
    return {"member": member_json(member), "kind": c.kind, "keyId": c.key_id, "scopes": list(c.scopes),
            "workspace": member["workspace_name"], "credentials": limit}


def safe_next(path: str) -> str:
    """Only a path on this server: '/x', never '//host', a scheme, or a backslash."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path or any(ord(c) < 32 for c in path):
        raise v.bad("'next' must be a path on this server, starting with a single '/'.")
    return path


_WEB_NEXT = r"^(/|/[^/\\\x00-\x1f][^\\\x00-\x1f]*)$"  # a path on this server: never '//host' or '\'


@route("POST", "/v1/auth/web-link", scope=SESSION,
       body=obj({"next": text(1, 2000, _WEB_NEXT, description="A path on this server (default /).")}),
       body_required=False,
       responses={201: obj({"url": STR, "expiresAt": TIME}, required="all")},
       summary="Make a single-use web sign-in link (5 minutes) that opens a path on this server.")
def create_web_link(ctx: Ctx) -> Response:
    body = v.body_dict(ctx)
    next_path = safe_next(v.string(body, "next", required=False, default="/", max_len=2000))
    if not ctx.base_url:
        raise v.bad("Web sign-in links need a server: run `wsctl serve` and sign in to it.")
    token = _secrets.token_urlsafe(32)
    expires = clock.later(WEB_LINK_SECONDS)
    store.insert_web_link(ctx.db, sha256_hex(token), ctx.caller.member_id, next_path, expires)
    return Response(201, {"url": f"{ctx.base_url}/signin/{token}", "expiresAt": expires})


def consume_web_link(conn: Conn, token: str) -> tuple[str, str]:
    """A sign-in link -> (new web-session cookie value, next path). Single use, 5 minutes."""
    h = sha256_hex(token)
    with transaction(conn):
        row = store.get_web_link(conn, h)
        if row is None or row["used_at"]:
            raise ApiError("unauthenticated", "This sign-in link is not valid or was already used: each one signs in once, "
                           "within 5 minutes. If you are signed in in this browser already, go back to the page it "
                           "opened; else run the command that printed it again (e.g. `wsctl vault connect SERVICE`) "
                           "for a new link.")
        if clock.parse_iso(row["expires_at"]) <= clock.now():
            raise ApiError("expired", "This sign-in link has expired (links last 5 minutes). Run the command that "
                           "printed it again (e.g. `wsctl vault connect SERVICE`) for a new one.")
        store.use_web_link(conn, h)
        cookie = _secrets.token_urlsafe(32)
        store.insert_secret(conn, "web", row["member_id"], sha256_hex(cookie), name="web",
                            expires_at=clock.later(WEB_SESSION_SECONDS))
    return cookie, row["next_path"]
