"""Keys limited to named credentials (issue 25): what a limited platform key may reach.

A platform key made with `credentials: [cred_…, …]` reaches only those credentials, and then
only as far as its creator still can (the member's own access is checked as for any caller).
Any other credential does not exist for it: `404 not_found`, the very answer an unknown id gets,
on every route that names one, with nothing issued and nothing logged. Sessions and unlimited
keys (`Caller.credentials is None`) are not touched by anything here.

Where it is enforced, for every door (local and HTTP alike go through engine/dispatch.py):

- `gate`, called by Engine.call after the scope check and before any handler runs: every route
  whose path names a credential (`/v1/credentials/{id}…`, `/v1/vault/credentials/{id}…`, derived
  from the scope table, so a route added there is covered without touching this file);
- `only`, the filter of the credential list (`GET /v1/credentials`, and with it every name lookup);
- `check_connect`: a limited key connects no new credential (403 insufficient_scope); a reconnect
  names one of its credentials (404 otherwise);
- `reaches`, for a connection's credential (`GET /v1/connections/{id}`);
- the event feed (`GET /v1/events`, engine/events/feed.py) keeps only its credentials' events.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from workspacectl.engine.scopes import ROUTE_SCOPES
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.registry import Caller

# The route templates whose {id} is a credential id.
CREDENTIAL_PATHS = frozenset(path for _, path in ROUTE_SCOPES
                             if path.startswith(("/v1/credentials/{id}", "/v1/vault/credentials/{id}")))


def unseen(cred_id: object) -> ApiError:
    """The 404 of a credential the caller cannot see: the same for one that does not exist, one
    the member has no access to, and one outside a limited key's credentials."""
    return ApiError("not_found", f"No credential {cred_id} that you can see. Run `wsctl vault list`.")


def reaches(caller: Caller, cred_id: str) -> bool:
    return caller.credentials is None or cred_id in caller.credentials


def only(caller: Caller) -> frozenset[str] | None:
    """The ids a credential list is limited to for this caller, None for every credential."""
    return caller.credentials


def gate(caller: Caller, path: str, params: dict) -> None:
    """Before the handler: a route naming a credential outside a limited key's is 404."""
    if caller.credentials is not None and path in CREDENTIAL_PATHS and params.get("id") not in caller.credentials:
        raise unseen(params.get("id"))


def check_connect(caller: Caller, reconnect_id: str | None) -> None:
    """A limited key may reconnect one of its credentials, never connect a new one."""
    if caller.credentials is None:
        return
    if not reconnect_id:
        from workspacectl.engine.scopes import insufficient

        raise insufficient(caller.kind, "vault:connect", hint=(
            "this key is limited to named credentials, so it cannot connect a new one (only reconnect one of "
            "its own with --reconnect): connect with a session (`wsctl auth login`) or a key that is not "
            "limited, then make a key limited to the new credential too (`wsctl keys create --credential`)."))
    if reconnect_id not in caller.credentials:
        raise unseen(reconnect_id)
