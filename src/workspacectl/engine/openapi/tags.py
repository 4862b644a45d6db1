"""The areas (tags) of /v1/openapi.json: TAGS names each in the order the reference (`/docs`) lists
them; `tag_of` puts a path in its area by its first segments. tests/openapi/test_openapi.py checks
that every operation has one (and a summary, from its @route declaration or its handler's docstring).
"""
from __future__ import annotations

TAGS: list[dict] = [
    {"name": "auth", "description": "Sessions: sign in with a login code, who am I, web sign-in links."},
    {"name": "members", "description": "The workspace's members and their one-time login codes."},
    {"name": "keys", "description": "Platform and personal API keys."},
    {"name": "vault", "description": "Credentials, their tokens, sharing and access logs; connecting services."},
    {"name": "catalog", "description": "Integrations and their operations, operation search, catalog admin."},
    {"name": "projects", "description": "Projects (specialists in the CLI): grants, memory, files, workflows."},
    {"name": "memory", "description": "Organization and membership memory: guide, files, proposals, agent."},
    {"name": "skills", "description": "Skills: bundles, files, versions, publishing and platform skills."},
    {"name": "triggers", "description": "Trigger providers (webhook, cron, poll)."},
    {"name": "events", "description": "The event feed and signed webhook subscriptions."},
    {"name": "admin", "description": "Workspace administration: key rotation."},
    {"name": "meta", "description": "This description of the API."},
]

_PREFIXES = [
    ("/v1/auth/", "auth"), ("/v1/members", "members"), ("/v1/keys", "keys"),
    ("/v1/credentials", "vault"), ("/v1/connections", "vault"), ("/v1/vault/", "vault"),
    ("/v1/integrations", "catalog"), ("/v1/operations", "catalog"), ("/v1/admin/catalog", "catalog"),
    ("/v1/admin/", "admin"), ("/v1/projects", "projects"), ("/v1/workflows", "projects"),
    ("/v1/memory", "memory"), ("/v1/skills", "skills"), ("/v1/triggers", "triggers"),
    ("/v1/events", "events"), ("/v1/webhooks", "events"),
    ("/v1/openapi.json", "meta"),
]


def tag_of(path: str) -> str | None:
    for prefix, tag in _PREFIXES:
        if path == prefix.rstrip("/") or path.startswith(prefix):
            return tag
    return None
