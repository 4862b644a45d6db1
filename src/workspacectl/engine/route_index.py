"""The route index, GENERATED from the @route declarations: do not edit; regenerate it with
`python -m workspacectl.engine.route_gen` (tests/core/test_route_index.py fails when it is stale).

(method, path template) -> (scope, the module declaring the route). A door checks the scope before
anything is looked up, and imports the module on the route's first request (registry.handler_for),
so a local `wsctl vault list` loads the vault wing only. Everything else about a route (its body,
answers, summary and handler) is in its declaration, beside the handler.
"""
from __future__ import annotations

ROUTE_INDEX: dict[tuple[str, str], tuple[str, str]] = {
    # workspacectl.engine.catalog.admin
    ("POST", "/v1/admin/catalog"): ("session", "workspacectl.engine.catalog.admin"),
    ("GET", "/v1/admin/catalog/history"): ("session", "workspacectl.engine.catalog.admin"),
    ("DELETE", "/v1/admin/catalog/{service}"): ("session", "workspacectl.engine.catalog.admin"),
    ("PUT", "/v1/admin/catalog/{service}/oauth-client"): ("session", "workspacectl.engine.catalog.admin"),
    # workspacectl.engine.catalog.routes
    ("GET", "/v1/integrations"): ("docs:read", "workspacectl.engine.catalog.routes"),
    ("GET", "/v1/integrations/{service}"): ("docs:read", "workspacectl.engine.catalog.routes"),
    ("GET", "/v1/integrations/{service}/operations"): ("docs:read", "workspacectl.engine.catalog.routes"),
    ("GET", "/v1/integrations/{service}/operations/{opId}"): ("docs:read", "workspacectl.engine.catalog.routes"),
    ("GET", "/v1/operations/{opId}"): ("docs:read", "workspacectl.engine.catalog.routes"),
    # workspacectl.engine.catalog.search_routes
    ("GET", "/v1/operations"): ("docs:read", "workspacectl.engine.catalog.search_routes"),
    # workspacectl.engine.catalog.triggers
    ("GET", "/v1/triggers"): ("triggers:manage", "workspacectl.engine.catalog.triggers"),
    ("GET", "/v1/triggers/{triggerId}"): ("triggers:manage", "workspacectl.engine.catalog.triggers"),
    # workspacectl.engine.events.feed
    ("GET", "/v1/events"): ("vault:read", "workspacectl.engine.events.feed"),
    # workspacectl.engine.events.webhooks
    ("GET", "/v1/webhooks"): ("session", "workspacectl.engine.events.webhooks"),
    ("POST", "/v1/webhooks"): ("session", "workspacectl.engine.events.webhooks"),
    ("POST", "/v1/webhooks/deliver"): ("session", "workspacectl.engine.events.webhooks"),
    ("GET", "/v1/webhooks/{id}"): ("session", "workspacectl.engine.events.webhooks"),
    ("DELETE", "/v1/webhooks/{id}"): ("session", "workspacectl.engine.events.webhooks"),
    ("GET", "/v1/webhooks/{id}/deliveries"): ("session", "workspacectl.engine.events.webhooks"),
    ("POST", "/v1/webhooks/{id}/test"): ("session", "workspacectl.engine.events.webhooks"),
    # workspacectl.engine.identity.auth
    ("POST", "/v1/auth/session"): ("public", "workspacectl.engine.identity.auth"),
    ("DELETE", "/v1/auth/session"): ("session", "workspacectl.engine.identity.auth"),
    ("POST", "/v1/auth/web-link"): ("session", "workspacectl.engine.identity.auth"),
    ("GET", "/v1/auth/whoami"): ("authenticated", "workspacectl.engine.identity.auth"),
    # workspacectl.engine.identity.key_rotation
    ("POST", "/v1/admin/rotate-key"): ("session", "workspacectl.engine.identity.key_rotation"),
    # workspacectl.engine.identity.keys
    ("GET", "/v1/keys"): ("session", "workspacectl.engine.identity.keys"),
    ("POST", "/v1/keys"): ("session", "workspacectl.engine.identity.keys"),
    ("DELETE", "/v1/keys/{id}"): ("session", "workspacectl.engine.identity.keys"),
    # workspacectl.engine.identity.members
    ("GET", "/v1/members"): ("session", "workspacectl.engine.identity.members"),
    ("POST", "/v1/members"): ("session", "workspacectl.engine.identity.members"),
    ("POST", "/v1/members/{id}/login-codes"): ("session", "workspacectl.engine.identity.members"),
    # workspacectl.engine.memory.agent
    ("POST", "/v1/memory/agent/run"): ("session", "workspacectl.engine.memory.agent"),
    # workspacectl.engine.memory.routes
    ("GET", "/v1/memory/{ownerType}"): ("memory:manage", "workspacectl.engine.memory.routes"),
    ("GET", "/v1/memory/{ownerType}/files"): ("memory:manage", "workspacectl.engine.memory.routes"),
    ("POST", "/v1/memory/{ownerType}/proposals"): ("memory:manage", "workspacectl.engine.memory.routes"),
    # workspacectl.engine.openapi.routes
    ("GET", "/v1/openapi.json"): ("public", "workspacectl.engine.openapi.routes"),
    # workspacectl.engine.projects.contents
    ("POST", "/v1/projects/pin"): ("projects:manage", "workspacectl.engine.projects.contents"),
    ("GET", "/v1/projects/{id}/connections"): ("projects:manage", "workspacectl.engine.projects.contents"),
    # workspacectl.engine.projects.files
    ("GET", "/v1/projects/{id}/files"): ("projects:manage", "workspacectl.engine.projects.files"),
    ("DELETE", "/v1/projects/{id}/files"): ("projects:manage", "workspacectl.engine.projects.files"),
    ("GET", "/v1/projects/{id}/files/bundle"): ("projects:manage", "workspacectl.engine.projects.files"),
    ("POST", "/v1/projects/{id}/files/bundle"): ("projects:manage", "workspacectl.engine.projects.files"),
    # workspacectl.engine.projects.grants
    ("PUT", "/v1/projects/{id}/grants"): ("projects:manage", "workspacectl.engine.projects.grants"),
    # workspacectl.engine.projects.routes
    ("GET", "/v1/projects"): ("projects:manage", "workspacectl.engine.projects.routes"),
    ("POST", "/v1/projects"): ("projects:manage", "workspacectl.engine.projects.routes"),
    ("GET", "/v1/projects/{id}"): ("projects:manage", "workspacectl.engine.projects.routes"),
    ("PATCH", "/v1/projects/{id}"): ("projects:manage", "workspacectl.engine.projects.routes"),
    ("POST", "/v1/projects/{id}/delete"): ("projects:manage", "workspacectl.engine.projects.routes"),
    ("PUT", "/v1/projects/{id}/memory"): ("projects:manage", "workspacectl.engine.projects.routes"),
    # workspacectl.engine.projects.workflows
    ("GET", "/v1/workflows"): ("projects:manage", "workspacectl.engine.projects.workflows"),
    ("POST", "/v1/workflows"): ("projects:manage", "workspacectl.engine.projects.workflows"),
    ("GET", "/v1/workflows/{id}"): ("projects:manage", "workspacectl.engine.projects.workflows"),
    ("PUT", "/v1/workflows/{id}/triggers/{nodeId}/config"): ("triggers:manage", "workspacectl.engine.projects.workflows"),
    # workspacectl.engine.skills.bundles
    ("POST", "/v1/skills/{id}/bundle-upload-url"): ("skills:manage", "workspacectl.engine.skills.bundles"),
    ("GET", "/v1/skills/{id}/bundle-url"): ("skills:manage", "workspacectl.engine.skills.bundles"),
    ("GET", "/v1/skills/{id}/file-url"): ("skills:manage", "workspacectl.engine.skills.bundles"),
    ("GET", "/v1/skills/{id}/files"): ("skills:manage", "workspacectl.engine.skills.bundles"),
    ("PUT", "/v1/skills/{id}/files"): ("skills:manage", "workspacectl.engine.skills.bundles"),
    ("POST", "/v1/skills/{id}/publish"): ("skills:manage", "workspacectl.engine.skills.bundles"),
    ("POST", "/v1/skills/{id}/validate"): ("skills:manage", "workspacectl.engine.skills.bundles"),
    # workspacectl.engine.skills.routes
    ("GET", "/v1/skills"): ("skills:manage", "workspacectl.engine.skills.routes"),
    ("POST", "/v1/skills"): ("skills:manage", "workspacectl.engine.skills.routes"),
    ("GET", "/v1/skills/platform/{name}"): ("skills:manage", "workspacectl.engine.skills.routes"),
    ("GET", "/v1/skills/{id}"): ("skills:manage", "workspacectl.engine.skills.routes"),
    ("PATCH", "/v1/skills/{id}"): ("skills:manage", "workspacectl.engine.skills.routes"),
    ("DELETE", "/v1/skills/{id}"): ("skills:manage", "workspacectl.engine.skills.routes"),
    ("PATCH", "/v1/skills/{id}/enabled"): ("skills:manage", "workspacectl.engine.skills.routes"),
    # workspacectl.engine.skills.versions
    ("GET", "/v1/skills/{id}/versions"): ("skills:manage", "workspacectl.engine.skills.versions"),
    ("POST", "/v1/skills/{id}/versions/{versionId}/revert"): ("skills:manage", "workspacectl.engine.skills.versions"),
    # workspacectl.engine.vault.connections
    ("POST", "/v1/connections"): ("vault:connect", "workspacectl.engine.vault.connections"),
    ("GET", "/v1/connections/{id}"): ("vault:connect", "workspacectl.engine.vault.connections"),
    # workspacectl.engine.vault.manage
    ("PATCH", "/v1/vault/credentials/{id}"): ("vault:manage", "workspacectl.engine.vault.manage"),
    ("DELETE", "/v1/vault/credentials/{id}"): ("vault:manage", "workspacectl.engine.vault.manage"),
    ("PUT", "/v1/vault/credentials/{id}/data"): ("vault:manage", "workspacectl.engine.vault.manage"),
    ("GET", "/v1/vault/credentials/{id}/editable-fields"): ("vault:manage", "workspacectl.engine.vault.manage"),
    ("POST", "/v1/vault/credentials/{id}/sync"): ("vault:manage", "workspacectl.engine.vault.manage"),
    # workspacectl.engine.vault.proxy
    ("GET", "/v1/credentials/{id}/proxy/{path}"): ("vault:token", "workspacectl.engine.vault.proxy"),
    ("POST", "/v1/credentials/{id}/proxy/{path}"): ("vault:token", "workspacectl.engine.vault.proxy"),
    ("PUT", "/v1/credentials/{id}/proxy/{path}"): ("vault:token", "workspacectl.engine.vault.proxy"),
    ("PATCH", "/v1/credentials/{id}/proxy/{path}"): ("vault:token", "workspacectl.engine.vault.proxy"),
    ("DELETE", "/v1/credentials/{id}/proxy/{path}"): ("vault:token", "workspacectl.engine.vault.proxy"),
    # workspacectl.engine.vault.routes
    ("GET", "/v1/credentials"): ("vault:read", "workspacectl.engine.vault.routes"),
    ("GET", "/v1/credentials/{id}"): ("vault:read", "workspacectl.engine.vault.routes"),
    ("GET", "/v1/credentials/{id}/access-log"): ("vault:read", "workspacectl.engine.vault.routes"),
    ("PUT", "/v1/credentials/{id}/sharing"): ("vault:manage", "workspacectl.engine.vault.routes"),
    ("POST", "/v1/credentials/{id}/token"): ("vault:token", "workspacectl.engine.vault.routes"),
}
