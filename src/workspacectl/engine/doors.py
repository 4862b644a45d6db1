"""The engine's one face to its doors: all that `backend/` and `server/` import from the engine.

A door (the local backend in-process, the HTTP server, the loopback pages, the server's timer
threads) opens a workspace, turns a secret or a web cookie into a caller, and hands requests to
the `Engine`; besides that it may call the few operations below that are not routes (the connect
pages, presigned transfers, web sign-in, the timer jobs). An import-linter contract in
pyproject.toml forbids every other engine import from backend/ and server/, so a wing's modules
can move without a door noticing.

What a local command imports stays what it was: the names at the top (the dispatcher, the
request and answer types, the workspace types) are loaded by every command anyway; every
operation below imports its wing when it is called, and a few names used only by the server are
loaded on first use (`__getattr__`).
"""
from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workspacectl.engine.db import refusals_answered
from workspacectl.engine.dispatch import Engine, load_routes, parse_json_body, split_path
from workspacectl.engine.registry import Caller, RawRequest, Response, allowed_methods
from workspacectl.engine.workspaces import open_workspace, workspace_type
from workspacectl.engine.workspaces.folder import Workspace
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.db.quick import QuickWriter
    from workspacectl.engine.events.delivery import BATCH as DELIVERY_BATCH
    from workspacectl.engine.vault.connections import CALLBACK_PATH, LinkForm

__all__ = [
    # dispatch: a request as a caller
    "Engine", "Caller", "RawRequest", "Response", "load_routes", "parse_json_body", "split_path",
    "allowed_methods", "refusals_answered", "QuickWriter",
    # workspaces
    "Workspace", "open_workspace", "workspace_type", "workspace_exists", "create_workspace", "copy_workspace",
    # callers
    "caller_for_secret", "caller_for_member", "authenticate_web", "signed_in_member", "consume_web_link",
    # connecting a credential in this process, and the hosted connect pages
    "connect_form", "check_reconnect", "check_credential_name", "connect_key",
    "CALLBACK_PATH", "LinkForm", "finish_oauth_page", "open_connect_link", "submit_connect_link",
    # presigned skill transfers
    "verify_transfer", "receive_upload", "serve_download",
    # timer jobs
    "housekeeping", "fold_all_pending", "new_holder", "acquire_lease", "release_lease", "deliver_due",
    "DELIVERY_BATCH", "quiet_library_loggers",
]

_LAZY = {
    "QuickWriter": "workspacectl.engine.db.quick",
    "CALLBACK_PATH": "workspacectl.engine.vault.connections",
    "LinkForm": "workspacectl.engine.vault.connections",
    "DELIVERY_BATCH": "workspacectl.engine.events.delivery:BATCH",
}


def __getattr__(name: str) -> Any:
    """Names only the server uses, loaded when first asked for (a local command never is)."""
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = where.partition(":")
    return getattr(importlib.import_module(module), attr or name)


# --- workspaces ---------------------------------------------------------------------------------

def workspace_exists(location: Path | str) -> bool:
    """A workspace folder, or a postgresql:// URL (a str) of a database holding one."""
    with refusals_answered():   # a store that refuses the read: 503, as for any command
        return workspace_type(location).exists_at(location)


def create_workspace(location: Path | str, name: str, owner_name: str, owner_email: str,
                     email_flag: str | None = None) -> dict[str, Any]:
    """Make the folder (or the schema in an empty PostgreSQL database), its database and the
    first owner: {workspace (what a profile keeps: a URL without its password), shown, name,
    owner}. A conflict when one is there already. With `email_flag` the email is checked (and
    lowercased) first, a malformed one refused naming that flag."""
    if email_flag:
        from workspacectl.engine.validate import email_address

        owner_email = email_address(owner_email, email_flag)
    from workspacectl.engine.identity.render import member_json  # here: other commands load no identity module

    ws, owner = workspace_type(location).create(location, name=name, owner_name=owner_name, owner_email=owner_email)
    with ws:
        return {"workspace": ws.location, "shown": ws.shown, "name": ws.setting("name"),
                "owner": member_json(owner) if owner is not None else None}


def copy_workspace(source: str, target: str,
                   progress: Callable[[str, int | None, int | None], None] | None = None) -> dict[str, Any]:
    """Copy every row and blob of one workspace into an empty one (engine/workspaces/copy.py)."""
    from workspacectl.engine.workspaces.copy import copy_between

    return copy_between(source, target, progress)


# --- callers ------------------------------------------------------------------------------------

def caller_for_secret(ws: Workspace, secret: str) -> Caller:
    """The caller a session token or API key stands for, with its scopes (401 when it is not valid)."""
    from workspacectl.engine.identity.auth import authenticate_secret

    return authenticate_secret(ws.conn(), secret)


def caller_for_member(ws: Workspace, member: str | None, exact: bool = False) -> Caller:
    """A command-line session acting as `member` (an id). When it is gone the first owner acts (a
    profile outliving its member). exact=True: `member` may be an id or an email and must exist."""
    from workspacectl.engine.store import identity as store

    if exact and member:
        from workspacectl.engine.identity.members import resolve_member

        row: sqlite3.Row | None = resolve_member(ws.conn(), member)
    else:
        row = store.get_member(ws.conn(), member) if member else None
        row = row or store.first_owner(ws.conn())
    if row is None:
        raise ApiError("not_found", f"The workspace at {ws.shown} has no members. Run `wsctl init`.")
    return Caller(row["id"], row["role"], "session", "local")


def authenticate_web(ws: Workspace, cookie: str | None) -> Caller | None:
    """The member a `wsctl_web` cookie signs in (None: no cookie or not valid)."""
    from workspacectl.engine.identity import auth

    return auth.authenticate_web(ws.conn(), cookie)


def signed_in_member(ws: Workspace, caller: Caller | None) -> dict[str, Any] | None:
    """The member row shown in a page's header (None: nobody signed in)."""
    from workspacectl.engine.identity import auth

    return auth.signed_in_member(ws.conn(), caller)


def consume_web_link(ws: Workspace, token: str) -> tuple[str, str]:
    """Use a single-use web sign-in link: (the cookie to set, where to go next)."""
    from workspacectl.engine.identity import auth

    return auth.consume_web_link(ws.conn(), token)


# --- connecting a credential in this process (the local backend) ----------------------------------

def connect_form(ws: Workspace, service: str) -> dict[str, Any]:
    """What connecting `service` asks for (404 for an unknown service):
    {service, name, credentialType ("apiKey", "oauth2", ...), secretFields, fields}."""
    from workspacectl.engine.vault import connections

    conn = ws.conn()
    form = connections.service_form(conn, service)
    return {"service": service, "name": form.service_name,
            "credentialType": connections.credential_type(conn, service),
            "secretFields": list(form.secret_fields), "fields": list(form.fields)}


def check_reconnect(ws: Workspace, caller: Caller, service: str, credential_id: str) -> None:
    """Refuse a reconnect of a credential the caller may not refill, before a key is asked for."""
    from workspacectl.engine.scopes import check_scope
    from workspacectl.engine.vault import connections, key_limits

    check_scope(caller, "vault:connect")
    key_limits.check_connect(caller, credential_id)
    connections.reconnect_target(ws.conn(), credential_id, caller.member_id, service)


def check_credential_name(ws: Workspace, name: str | None, reconnect: str | None = None) -> None:
    """Refuse a malformed or taken name for the new credential before a key is asked for."""
    from workspacectl.engine.vault import connections

    connections.check_new_name(ws.conn(), name, reconnect)


def connect_key(ws: Workspace, caller: Caller, service: str, values: dict[str, str], reconnect: str | None = None,
                name: str | None = None) -> dict[str, Any]:
    """An apiKey connection made and completed in one step with the values read in this process
    (no link, no server): the final connection body."""
    from workspacectl.engine.vault import connections

    return connections.connect_in_place(ws, caller, service, values, reconnect, name)


# --- the hosted connect pages (server/connect_pages.py renders what these answer) -----------------

def finish_oauth_page(ws: Workspace, caller: Caller | None, state: str | None, code: str | None,
                      error: str | None) -> tuple[dict[str, Any], str, str | None]:
    """The provider's redirect back: (the connection's view, the service's name, the new
    credential's name when the caller may see it)."""
    from workspacectl.engine.vault import connections

    view = connections.finish_oauth(ws, state=state, code=code, error=error, caller=caller)
    name = connections.service_form(ws.conn(), view["service"]).service_name
    cred = connections.credential_name(ws.conn(), view.get("credentialId"), caller.member_id if caller else None)
    return view, name, cred


def open_connect_link(ws: Workspace, token: str, caller: Caller | None, cookie: str | None,
                      base_url: str) -> tuple[str, Any]:
    """GET /connect/{token}: ("redirect", the provider's authorize URL) for OAuth, else
    ("form", (LinkForm, csrf token)) for a key form."""
    from workspacectl.engine.vault import connections

    row = connections.open_link(ws.conn(), token, caller)
    if connections.credential_type(ws.conn(), row["service"]) == "oauth2":
        assert caller is not None   # open_link refuses a link without its member signed in
        return "redirect", connections.authorize_url(ws, row["id"], caller.member_id, base_url)
    return "form", (connections.link_form(ws.conn(), row), connections.csrf_token(cookie or "", row["id"]))


def submit_connect_link(ws: Workspace, token: str, caller: Caller | None, cookie: str | None,
                        values: dict[str, str], csrf: str | None) -> tuple[str, Any]:
    """POST /connect/{token}: ("done", (view, service name, credential name)), or ("retry",
    (LinkForm, a fresh csrf token, the ApiError)) when the values were refused as invalid input."""
    from workspacectl.engine.vault import connections

    row = connections.open_link(ws.conn(), token, caller)
    connections.check_csrf(cookie, row["id"], csrf)
    form = connections.link_form(ws.conn(), row)
    assert caller is not None   # open_link refuses a link without its member signed in
    try:
        view = connections.complete_api_key(ws, row["id"], caller.member_id, values)
    except ApiError as e:
        if e.code != "invalid_request":
            raise
        return "retry", (form, connections.csrf_token(cookie or "", row["id"]), e)
    return "done", (view, form.service_name, connections.credential_name(ws.conn(), view.get("credentialId"),
                                                                        caller.member_id))


# --- presigned skill transfers (engine/skills/transfers.py holds the rules) -----------------------

def verify_transfer(ws: Workspace, token: str, method: str) -> tuple[str, str]:
    from workspacectl.engine.skills import transfers

    return transfers.verify(ws, token, method)


def receive_upload(ws: Workspace, token: str, body: Any) -> dict[str, Any]:
    from workspacectl.engine.skills import transfers

    return transfers.receive_upload(ws, token, body)


def serve_download(ws: Workspace, token: str) -> Any:
    from workspacectl.engine.skills import transfers

    return transfers.serve_download(ws, token)


# --- timer jobs (the server's threads; housekeeping also after a local command) -------------------

def housekeeping(ws: Workspace) -> dict[str, Any] | None:
    """At most once an hour per workspace: expired rows and orphaned blobs swept (engine/housekeeping.py)."""
    from workspacectl.engine.housekeeping import maybe_sweep

    return maybe_sweep(ws)


def fold_all_pending(ws: Workspace) -> list[dict[str, Any]]:
    """The memory agent: fold every owner's pending notes, one result per fold."""
    from workspacectl.engine.memory.agent import fold_all_pending as fold

    return fold(ws.conn())


def new_holder() -> str:
    from workspacectl.engine import leases

    return leases.new_holder()


def acquire_lease(ws: Workspace, lease: str, holder: str, ttl: float) -> bool:
    from workspacectl.engine import leases

    return leases.acquire(ws.conn(), lease, holder, ttl)


def release_lease(ws: Workspace, lease: str, holder: str) -> bool:
    from workspacectl.engine import leases

    return leases.release(ws.conn(), lease, holder)


def deliver_due(ws: Workspace, holder: str) -> int:
    """One batch of due webhook deliveries; answers how many were sent (DELIVERY_BATCH: maybe more)."""
    from workspacectl.engine.events.delivery import deliver_due as deliver

    return deliver(ws, holder)


def quiet_library_loggers() -> None:
    """The HTTP library logs whole URLs (a key may be in the query) at INFO: keep it quiet."""
    from workspacectl.engine.vault.outbound import quiet_library_loggers as quiet

    quiet()
