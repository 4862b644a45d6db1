"""Scopes: what a route requires and the check both doors make (dispatch.py) before any handler runs
or anything is looked up.

Each route declares its scope with its handler (`@route(..., scope=...)`); ROUTE_SCOPES is the
table of them all, read from engine/route_index.py (generated from the declarations).

Required values:
    PUBLIC         no key needed
    AUTHENTICATED  any valid secret
    SESSION        a command-line session only (keys of either kind: 403 insufficient_scope)
    "<scope>"      a key must hold it; a session passes every scope check (seed, Authentication 1)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from workspacectl.engine.route_index import ROUTE_INDEX
from workspacectl.errors import ApiError
from workspacectl.formats.key_scopes import KIND_SCOPES, PERSONAL_SCOPES, PLATFORM_SCOPES  # noqa: F401

if TYPE_CHECKING:
    from workspacectl.engine.registry import Caller

PUBLIC = "public"
AUTHENTICATED = "authenticated"
SESSION = "session"

# (method, path template) -> the scope it requires: each route declares its own (registry.route,
# beside its handler); this view of engine/route_index.py, generated from the declarations, is
# what the doors check before anything is looked up.
ROUTE_SCOPES: dict[tuple[str, str], str] = {key: scope for key, (scope, _module) in ROUTE_INDEX.items()}


def is_vault_scope(scope: str) -> bool:
    return scope.startswith("vault:")


def check_scope(caller: Caller | None, required: str) -> None:
    if required == PUBLIC:
        return
    if caller is None:
        raise ApiError("unauthenticated", "Authentication required. Sign in with `wsctl auth login` or pass an API key.")
    if required == AUTHENTICATED or caller.is_session:
        return
    if required == SESSION or required not in caller.scopes:
        raise insufficient(caller.kind, required)


def insufficient(key_kind: str, required: str, hint: str | None = None) -> ApiError:
    """403 insufficient_scope. The message is the contract's, word for word; the detail names
    what is missing, `{"requiredScope": "vault:read" | "session", "hint": "…what to do"}`, and the
    command line prints the hint after the message."""
    return ApiError("insufficient_scope", "Insufficient scope",
                    {"requiredScope": required, "hint": hint or scope_hint(key_kind, required)})


def scope_hint(key_kind: str, required: str) -> str:
    """What to do about a missing scope, as the rest of a sentence after 'Insufficient scope: '."""
    login = "or a session (`wsctl auth login`)"
    if required == SESSION:
        return "only a signed-in session may do this, not an API key of either kind; sign in with `wsctl auth login`."
    owner = next((k for k, scopes in KIND_SCOPES.items() if required in scopes), None)
    make = f"`wsctl keys create --kind {owner} --scope {required}`"
    if owner is None or owner == key_kind:
        return f"this key lacks {required}: use a key with {required} ({make}), {login}."
    return (f"{required} belongs to {owner} keys and this is a {key_kind} key: use a {owner} key with {required} "
            f"({make}), {login}.")
