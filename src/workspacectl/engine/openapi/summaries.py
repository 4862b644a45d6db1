"""What /v1/openapi.json says each route does, and the area (tag) it belongs to.

A handler's docstring gives a route's summary where it has one; SUMMARIES holds the rest, so every
operation reads as a sentence, not as its method and path. TAGS names each area in the order the
reference (`/docs`) lists them; `tag_of` puts a path in its area by its first segments.
tests/openapi/test_openapi.py checks that every operation has both.
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


SUMMARIES: dict[tuple[str, str], str] = {
    ("GET", "/v1/events"): "The event feed: what happened (credentials, keys, members, skills, memory), cursor-paged.",
    ("POST", "/v1/webhooks"): "Subscribe a URL to events; the signing secret (whsec_) is shown once.",
    ("GET", "/v1/webhooks"): "List webhook subscriptions (owner or admin).",
    ("GET", "/v1/webhooks/{id}"): "One webhook subscription, without its secret.",
    ("DELETE", "/v1/webhooks/{id}"): "Remove a webhook subscription and its delivery log.",
    ("POST", "/v1/webhooks/{id}/test"): "Send a signed webhook.test event to the subscription now.",
    ("POST", "/v1/webhooks/deliver"): "Send every due webhook delivery now, from this request (owner or admin).",
    ("GET", "/v1/webhooks/{id}/deliveries"): "A subscription's delivery log, newest first.",
    ("POST", "/v1/memory/agent/run"): "Run the memory agent now on organization memory and the caller's own.",
    ("GET", "/v1/memory/{ownerType}"): "The memory guide and the notes waiting for the memory agent.",
    ("POST", "/v1/admin/rotate-key"): "Rotate the workspace key: reseal every secret under a new key (owner session).",
    ("POST", "/v1/auth/session"): "Trade a one-time login code for a command-line session token.",
    ("DELETE", "/v1/auth/session"): "Sign out: revoke the session presented.",
    ("POST", "/v1/auth/web-link"): "Make a single-use web sign-in link (5 minutes) that opens a path on this server.",
    ("GET", "/v1/auth/whoami"): "The member and key the request acts as.",
    ("GET", "/v1/credentials"): "List the credentials the caller owns or that are shared with it.",
    ("GET", "/v1/credentials/{id}"): "One credential's detail: fields, scopes and sharing, never a secret.",
    ("GET", "/v1/credentials/{id}/access-log"): "Who asked for the credential's token, when and why (owner only).",
    ("GET", "/v1/credentials/{id}/proxy/{path}"): "Call the service with this credential (GET): the "
        "answer is the service's (docs/api.md, Authenticated proxy).",
    ("POST", "/v1/credentials/{id}/proxy/{path}"): "Call the service with this credential (POST): the "
        "answer is the service's (docs/api.md, Authenticated proxy).",
    ("PUT", "/v1/credentials/{id}/proxy/{path}"): "Call the service with this credential (PUT): the "
        "answer is the service's (docs/api.md, Authenticated proxy).",
    ("PATCH", "/v1/credentials/{id}/proxy/{path}"): "Call the service with this credential (PATCH): the "
        "answer is the service's (docs/api.md, Authenticated proxy).",
    ("DELETE", "/v1/credentials/{id}/proxy/{path}"): "Call the service with this credential (DELETE): the "
        "answer is the service's (docs/api.md, Authenticated proxy).",
    ("PUT", "/v1/credentials/{id}/sharing"): "Share a credential with a member or the workspace, or stop sharing it.",
    ("POST", "/v1/credentials/{id}/token"): "Issue the credential's usable token for a stated reason (logged).",
    ("GET", "/v1/keys"): "List API keys: one's own, or all of them for an owner or admin.",
    ("POST", "/v1/keys"): "Create a platform or personal API key; the secret is shown once.",
    ("DELETE", "/v1/keys/{id}"): "Revoke an API key.",
    ("GET", "/v1/members"): "List the workspace's members.",
    ("POST", "/v1/members"): "Add a member with a role (owner or admin session).",
    ("POST", "/v1/members/{id}/login-codes"): "Make a one-time login code (15 minutes) for a member to sign in with.",
    ("GET", "/v1/projects"): "List the projects the caller can see.",
    ("POST", "/v1/projects"): "Create a project.",
    ("POST", "/v1/projects/pin"): "Move a workflow, app or skill into a project.",
    ("GET", "/v1/projects/{id}"): "One project, with the caller's role and what it holds.",
    ("PATCH", "/v1/projects/{id}"): "Change a project's name, description, icon or worker look.",
    ("GET", "/v1/projects/{id}/connections"): "The credentials the project's workflows are wired to.",
    ("POST", "/v1/projects/{id}/delete"): "Delete a project: files go, held resources return to their creators.",
    ("PUT", "/v1/projects/{id}/grants"): "Grant a member or the workspace editor or viewer on a project, or remove it.",
    ("PUT", "/v1/projects/{id}/memory"): "Replace the project's memory text, given the current version.",
    ("GET", "/v1/skills"): "List the skills the caller can see.",
    ("POST", "/v1/skills"): "Create a draft skill.",
    ("GET", "/v1/skills/platform/{name}"): "One platform skill shipped with the server, with its files.",
    ("DELETE", "/v1/skills/{id}"): "Archive a skill.",
    ("GET", "/v1/skills/{id}"): "One skill's record.",
    ("POST", "/v1/skills/{id}/bundle-upload-url"): "A presigned URL (15 minutes) to upload one bundle for validate or publish.",
    ("GET", "/v1/skills/{id}/bundle-url"): "A presigned URL to download the live version's bundle.",
    ("PATCH", "/v1/skills/{id}/enabled"): "Enable or disable a skill.",
    ("GET", "/v1/skills/{id}/file-url"): "A presigned URL to download one file of the live version.",
    ("PUT", "/v1/skills/{id}/files"): "Save one text file and publish the result as a new version.",
    ("POST", "/v1/skills/{id}/publish"): "Publish an uploaded bundle as the new live version.",
    ("POST", "/v1/skills/{id}/validate"): "Check an uploaded bundle without publishing it.",
    ("GET", "/v1/skills/{id}/versions"): "Every published version, newest first.",
    ("POST", "/v1/skills/{id}/versions/{versionId}/revert"): "Publish an earlier version's content as a new version.",
    ("PATCH", "/v1/vault/credentials/{id}"): "Rename a credential; names are unique in the workspace (owner only).",
    ("PUT", "/v1/vault/credentials/{id}/data"): "Replace a hand-entered key; same credential id (owner only).",
    ("GET", "/v1/vault/credentials/{id}/editable-fields"): "The non-secret fields and which secret fields are set (owner only).",
    ("GET", "/v1/workflows"): "List the workflows and apps the caller can see.",
    ("POST", "/v1/workflows"): "Import a workflow or app from its workflow.json.",
    ("GET", "/v1/workflows/{id}"): "One workflow or app, with its nodes and trigger readiness.",
    ("PUT", "/v1/workflows/{id}/triggers/{nodeId}/config"): "Configure a poll trigger node: its credential and inputs.",
}
