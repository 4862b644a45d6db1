"""Members of the workspace and the login codes that sign them in."""
from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.events.record import record_event
from workspacectl.engine.identity.auth import make_login_code
from workspacectl.engine.identity.render import member_json
from workspacectl.engine.pagination import name_filter, page, page_args
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.schema_blocks import NAMED_PAGE, TIME, obj, page_of, ref, text
from workspacectl.engine.scopes import SESSION
from workspacectl.engine.store import identity as store
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

ROLES = ("owner", "admin", "member", "guest")


def require_admin(ctx: Ctx) -> None:
    if not ctx.caller.is_admin:
        raise ApiError("forbidden", f"Only a workspace owner or admin may do this (you are {ctx.caller.role}). "
                                    "Ask one of them (`wsctl members list` shows who) to do it, or to make you an admin.")


def resolve_member(conn: Conn, ref: str) -> sqlite3.Row:
    row = store.find_member(conn, ref)
    if row is None:
        raise ApiError("not_found", f"No member '{ref}'. Run `wsctl members list`.")
    return row


_CREATED_CODE = obj({"code": text(description="XXXX-XXXX-XXXX"), "expiresAt": TIME}, required="all")


@route("GET", "/v1/members", scope=SESSION,
       query=NAMED_PAGE,
       responses={200: page_of("members", ref("Member"))},
       summary="List the workspace's members.")
def list_members(ctx: Ctx) -> dict:
    limit, after = page_args(ctx)
    rows = store.list_members(ctx.db, after, limit + 1, name_filter(ctx))
    return page("members", rows, limit, lambda r: r["id"], member_json)


@route("POST", "/v1/members", scope=SESSION,
       body=obj({"email": text(3, 320, v.EMAIL.pattern), "name": text(1, 200, description="Blank: the email."),
                 "role": text(enum=list(ROLES), description="Default member.")}, required=["email", "name"]),
       responses={201: ref("Member")},
       summary="Add a member with a role (owner or admin session).")
def add_member(ctx: Ctx) -> Response:
    require_admin(ctx)
    body = v.body_dict(ctx)
    email = v.email_address(v.string(body, "email", max_len=320), "'email'")
    name = v.string(body, "name", max_len=200).strip() or email
    role = v.choice(body, "role", ROLES, required=False, default="member")
    if role == "owner" and ctx.caller.role != "owner":
        raise ApiError("forbidden", "Only an owner may add another owner; add them as admin, or ask an "
                                    "owner (`wsctl members list` shows who).")
    with transaction(ctx.db):
        member = store.insert_member(ctx.db, name, email, role)
        if member is not None:
            record_event(ctx.db, "member.added", subject_id=member["id"], actor_id=ctx.caller.member_id,
                         data={"email": email, "role": role})
    if member is None:
        raise ApiError("conflict", f"A member with email {email} already exists (`wsctl members list`); to let "
                                   f"them sign in, give them a code from `wsctl members login-code {email}`.")
    return Response(201, member_json(member))


@route("POST", "/v1/members/{id}/login-codes", scope=SESSION,
       responses={201: _CREATED_CODE},
       summary="Make a one-time login code (15 minutes) for a member to sign in with.")
def create_login_code(ctx: Ctx) -> Response:
    require_admin(ctx)
    member = resolve_member(ctx.db, ctx.params["id"])
    if member["role"] == "owner" and ctx.caller.role != "owner":
        raise ApiError("forbidden", "Only an owner may make a login code for an owner.")
    with transaction(ctx.db):
        code = make_login_code(ctx.db, member["id"], ctx.caller.member_id)
    return Response(201, code)
