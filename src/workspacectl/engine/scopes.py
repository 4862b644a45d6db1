"""THE scope table: every route of the seed and the contract, and what it requires.

Both doors enforce it through dispatch.py, before any handler runs or anything is looked up.
Every route here has a handler, in the module engine/route_modules.py names for its path.

Required values:
    PUBLIC         no key needed
    AUTHENTICATED  any valid secret
    SESSION        a command-line session only (keys of either kind: 403 insufficient_scope)
    "<scope>"      a key must hold it; a session passes every scope check (seed, Authentication 1)
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from workspacectl.errors import ApiError
from workspacectl.formats.key_scopes import KIND_SCOPES, PERSONAL_SCOPES, PLATFORM_SCOPES  # noqa: F401

if TYPE_CHECKING:
    from workspacectl.engine.registry import Caller

PUBLIC = "public"
AUTHENTICATED = "authenticated"
SESSION = "session"

ROUTE_SCOPES: dict[tuple[str, str], str] = {
    # Identity (contract §2)
    ("GET", "/v1/openapi.json"): PUBLIC,
    ("POST", "/v1/auth/session"): PUBLIC,
    ("DELETE", "/v1/auth/session"): SESSION,
    ("GET", "/v1/auth/whoami"): AUTHENTICATED,
    ("POST", "/v1/auth/web-link"): SESSION,
    ("GET", "/v1/members"): SESSION,
    ("POST", "/v1/members"): SESSION,
    ("POST", "/v1/members/{id}/login-codes"): SESSION,
    ("GET", "/v1/keys"): SESSION,
    ("POST", "/v1/keys"): SESSION,
    ("DELETE", "/v1/keys/{id}"): SESSION,
    # Vault (seed; contract §4)
    ("GET", "/v1/credentials"): "vault:read",
    ("GET", "/v1/credentials/{id}"): "vault:read",
    ("POST", "/v1/credentials/{id}/token"): "vault:token",
    ("PUT", "/v1/credentials/{id}/sharing"): "vault:manage",
    ("GET", "/v1/credentials/{id}/access-log"): "vault:read",
    ("GET", "/v1/credentials/{id}/proxy/{path}"): "vault:token",
    ("POST", "/v1/credentials/{id}/proxy/{path}"): "vault:token",
    ("PUT", "/v1/credentials/{id}/proxy/{path}"): "vault:token",
    ("PATCH", "/v1/credentials/{id}/proxy/{path}"): "vault:token",
    ("DELETE", "/v1/credentials/{id}/proxy/{path}"): "vault:token",
    ("POST", "/v1/connections"): "vault:connect",
    ("GET", "/v1/connections/{id}"): "vault:connect",
    ("GET", "/v1/vault/credentials/{id}/editable-fields"): "vault:manage",
    ("PUT", "/v1/vault/credentials/{id}/data"): "vault:manage",
    ("POST", "/v1/vault/credentials/{id}/sync"): "vault:manage",
    ("DELETE", "/v1/vault/credentials/{id}"): "vault:manage",
    ("PATCH", "/v1/vault/credentials/{id}"): "vault:manage",
    # Catalog (seed; contract §5)
    ("GET", "/v1/integrations"): "docs:read",
    ("GET", "/v1/integrations/{service}"): "docs:read",
    ("GET", "/v1/integrations/{service}/operations"): "docs:read",
    ("GET", "/v1/integrations/{service}/operations/{opId}"): "docs:read",
    ("GET", "/v1/operations"): "docs:read",
    ("GET", "/v1/operations/{opId}"): "docs:read",
    ("POST", "/v1/admin/catalog"): SESSION,
    ("GET", "/v1/admin/catalog/history"): SESSION,
    ("DELETE", "/v1/admin/catalog/{service}"): SESSION,
    ("PUT", "/v1/admin/catalog/{service}/oauth-client"): SESSION,
    ("POST", "/v1/admin/rotate-key"): SESSION,
    # Projects (seed; contract §6)
    ("GET", "/v1/projects"): "projects:manage",
    ("POST", "/v1/projects"): "projects:manage",
    ("GET", "/v1/projects/{id}"): "projects:manage",
    ("PATCH", "/v1/projects/{id}"): "projects:manage",
    ("PUT", "/v1/projects/{id}/memory"): "projects:manage",
    ("GET", "/v1/projects/{id}/connections"): "projects:manage",
    ("POST", "/v1/projects/{id}/delete"): "projects:manage",
    ("POST", "/v1/projects/pin"): "projects:manage",
    ("PUT", "/v1/projects/{id}/grants"): "projects:manage",
    ("GET", "/v1/projects/{id}/files"): "projects:manage",
    ("GET", "/v1/projects/{id}/files/bundle"): "projects:manage",
    ("POST", "/v1/projects/{id}/files/bundle"): "projects:manage",
    ("DELETE", "/v1/projects/{id}/files"): "projects:manage",
    # Workflows and apps (contract §6, §9)
    ("GET", "/v1/workflows"): "projects:manage",
    ("POST", "/v1/workflows"): "projects:manage",
    ("GET", "/v1/workflows/{id}"): "projects:manage",
    ("PUT", "/v1/workflows/{id}/triggers/{nodeId}/config"): "triggers:manage",
    # Memory (seed; contract §7)
    ("GET", "/v1/memory/{ownerType}"): "memory:manage",
    ("GET", "/v1/memory/{ownerType}/files"): "memory:manage",
    ("POST", "/v1/memory/{ownerType}/proposals"): "memory:manage",
    ("POST", "/v1/memory/agent/run"): SESSION,
    # Skills (seed; contract §8)
    ("GET", "/v1/skills"): "skills:manage",
    ("POST", "/v1/skills"): "skills:manage",
    ("GET", "/v1/skills/{id}"): "skills:manage",
    ("PATCH", "/v1/skills/{id}"): "skills:manage",
    ("DELETE", "/v1/skills/{id}"): "skills:manage",
    ("PATCH", "/v1/skills/{id}/enabled"): "skills:manage",
    ("GET", "/v1/skills/platform/{name}"): "skills:manage",
    ("GET", "/v1/skills/{id}/files"): "skills:manage",
    ("PUT", "/v1/skills/{id}/files"): "skills:manage",
    ("GET", "/v1/skills/{id}/bundle-url"): "skills:manage",
    ("GET", "/v1/skills/{id}/file-url"): "skills:manage",
    ("POST", "/v1/skills/{id}/bundle-upload-url"): "skills:manage",
    ("POST", "/v1/skills/{id}/validate"): "skills:manage",
    ("POST", "/v1/skills/{id}/publish"): "skills:manage",
    ("GET", "/v1/skills/{id}/versions"): "skills:manage",
    ("POST", "/v1/skills/{id}/versions/{versionId}/revert"): "skills:manage",
    # Events and webhooks (issue 30): the feed is vault:read for a platform key (an owner or admin
    # sees every event, another member its credentials' events); subscriptions are sessions only.
    ("GET", "/v1/events"): "vault:read",
    ("GET", "/v1/webhooks"): SESSION,
    ("POST", "/v1/webhooks"): SESSION,
    ("GET", "/v1/webhooks/{id}"): SESSION,
    ("DELETE", "/v1/webhooks/{id}"): SESSION,
    ("POST", "/v1/webhooks/{id}/test"): SESSION,
    ("POST", "/v1/webhooks/deliver"): SESSION,
    ("GET", "/v1/webhooks/{id}/deliveries"): SESSION,
    # Trigger providers (seed; contract §9)
    ("GET", "/v1/triggers"): "triggers:manage",
    ("GET", "/v1/triggers/{triggerId}"): "triggers:manage",
}


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
