"""The shapes several routes answer, as /v1/openapi.json's `#/components/schemas/<Name>`.

A route's own body, query parameters and answers are declared with the route, beside its handler
(registry.route); a declaration refers to these by name (schema_blocks.ref("Credential")).
tests/openapi/test_openapi.py checks that every reference resolves and that real answers validate.
Only the OpenAPI document imports this module (no wing does), so the limits and names it reads
from the wings cost a command nothing.
"""
from __future__ import annotations

from workspacectl.engine.catalog.search_routes import OPERATION_FIELDS
from workspacectl.engine.events.delivery import MAX_ATTEMPTS
from workspacectl.engine.events.record import EVENT_TYPES
from workspacectl.engine.events.webhooks import WEBHOOK_FIELDS
from workspacectl.engine.identity.keys import KEY_CREDENTIALS
from workspacectl.engine.identity.members import ROLES
from workspacectl.engine.projects.routes import ACCESSORIES, KINDS
from workspacectl.engine.projects.workflows import INPUTS
from workspacectl.engine.schema_blocks import ANY, BOOL, INT, STR, STR_MAP, TIME, array, nullable, obj, ref, text
from workspacectl.engine.scopes import KIND_SCOPES
from workspacectl.engine.skills.routes import STATUSES

# --- shapes answered by several routes ---------------------------------------------------------

_CREDENTIAL = {
    "id": STR, "service": STR, "name": STR,
    "credentialType": text(enum=["oauth2", "apiKey", "platform", "noAuth"]),
    "envVars": STR_MAP, "ownerMembershipId": STR,
    "access": text(enum=["owner", "user", "viewer"]),
    "status": text(enum=["ok", "needs_reconnect", "invalid"]),
    "createdAt": TIME, "updatedAt": TIME,
}
_CREDENTIAL_DETAIL = {
    **_CREDENTIAL,
    "fields": {"type": "object", "description": "Non-secret values (instanceUrl, accountLabel, ...)."},
    "scopes": array(STR),
    "sharing": array(obj({"membershipId": STR, "workspace": {"const": True},
                          "role": text(enum=["user", "viewer"])}, required=["membershipId", "role"])),
    "expiresAt": nullable(TIME), "syncedAt": nullable(TIME),
    "statusReason": nullable(text(description="Why the credential needs a reconnect (null when ok): the provider "
                                  "refused its grant, the refresh was interrupted, or its integration was "
                                  "re-imported with new addresses.")),
}
_INTEGRATION = {
    "service": STR, "name": STR, "description": STR,
    "credentialType": text(enum=["oauth2", "apiKey", "platform", "noAuth"]),
    "envVars": STR_MAP, "operationCount": INT,
}
_INTEGRATION_DETAIL = {
    **_INTEGRATION,
    "fields": array(STR), "secretFields": array(STR),
    "authorizeUrl": STR, "tokenUrl": STR, "scopes": array(STR), "revokeUrl": STR, "pkce": BOOL,
    "scopeSeparator": STR, "extraAuthorizeParams": {"type": "object"}, "oauthClientConfigured": BOOL,
    "clientAuth": text(enum=["client_secret_post", "client_secret_basic", "none"]),
    "tokenBodyEncoding": text(enum=["form", "json"]), "issuer": STR,
    "baseUrl": STR, "docsUrl": STR, "probe": STR,
    "pagination": obj({"cursorPath": STR, "cursorParam": STR}, required="all",
                      description="How the service pages: the cursor's place in a JSON answer and the query "
                                  "parameter that sends it back (wsctl vault proxy --paginate)."),
    "source": text(enum=["builtin", "import"]), "updatedAt": TIME,
}
_TRIGGER = {
    "type": text(enum=["webhook", "cron", "poll"]), "triggerId": STR, "name": STR, "description": STR,
    "service": text(description="The integration it watches; a generic provider's own id (webhook, cron)."),
    "requiresCredential": BOOL,
    "cadenceSeconds": {"type": "integer", "description": "Poll providers only."},
}

COMPONENTS: dict[str, dict] = {
    "Error": obj({"error": obj({"status": INT, "code": STR, "message": STR, "detail": ANY},
                               required=["status", "code", "message"])}, required="all"),
    "Member": obj({"id": STR, "name": STR, "email": STR, "role": text(enum=list(ROLES)), "createdAt": TIME},
                  required="all"),
    "ApiKey": obj({"id": STR, "kind": text(enum=list(KIND_SCOPES)), "name": STR, "scopes": array(STR),
                   "memberId": STR, "createdAt": TIME, "expiresAt": nullable(TIME), "revokedAt": nullable(TIME),
                   "credentials": KEY_CREDENTIALS},
                  required="all"),
    "Credential": obj(_CREDENTIAL, required="all"),
    "CredentialDetail": obj(_CREDENTIAL_DETAIL, required="all"),
    "Connection": obj({"id": STR, "service": STR,
                       "status": text(enum=["pending", "connected", "expired", "failed"]),
                       "connectUrl": nullable(STR), "expiresAt": TIME, "createdAt": TIME,
                       "credentialId": {**STR, "description": "Present once status is connected."},
                       "error": {**STR, "description": "Present when status is failed."}},
                      required=["id", "service", "status", "connectUrl", "expiresAt", "createdAt"]),
    "Integration": obj(_INTEGRATION, required="all"),
    "IntegrationDetail": obj(_INTEGRATION_DETAIL, required=[*_INTEGRATION, "fields", "source", "updatedAt"]),
    "Operation": obj(OPERATION_FIELDS, required="all"),
    "OperationDetail": obj({**OPERATION_FIELDS, "description": STR, "tags": array(STR),
                            "params": array(obj({"name": STR, "in": STR, "type": STR, "required": BOOL,
                                                 "description": STR}, required=["name", "in"], closed=False)),
                            "response": ANY, "example": ANY,
                            "credentialType": text(enum=["oauth2", "apiKey", "platform", "noAuth"]),
                            "envVars": STR_MAP, "markdown": STR}, required="all"),
    "Trigger": obj(_TRIGGER, required=["type", "triggerId", "name", "description", "service",
                                        "requiresCredential"]),
    "TriggerDetail": obj({**_TRIGGER, "config": {"type": "object"}},
                         required=["type", "triggerId", "name", "description", "service", "requiresCredential",
                                   "config"]),
}

# --- projects, workflows and apps ------------------------------------------------------------

_ROLE = text(enum=["owner", "editor", "viewer"])
_GRANT_ROLE = text(enum=["editor", "viewer"])
_RESOURCE_TYPE = text(enum=["workflow", "app", "skill"])
_PROJECT = {
    "id": STR, "name": STR, "description": nullable(STR), "icon": text(description="One emoji; 🤖 when unset."),
    "workerColor": text(description="A colour name; blue when unset."),
    "workerAccessories": obj({k: nullable(STR) for k in ACCESSORIES}, required="all"),
    "role": _ROLE, "isOwner": BOOL, "canEdit": BOOL,
    "ownerMembershipId": STR,
    "orgGrant": nullable(obj({"role": _GRANT_ROLE}, required="all")),
    "isShared": BOOL,
    "counts": obj({k: INT for k in ("workflows", "apps", "skills", "files")}, required="all"),
    "createdAt": TIME, "updatedAt": TIME,
}
_GRANT = {"anyOf": [
    obj({"membershipId": STR, "displayName": nullable(STR), "role": _GRANT_ROLE}, required="all"),
    obj({"workspace": {"const": True}, "role": _GRANT_ROLE}, required="all"),
]}
_WORKFLOW = {
    "id": STR, "kind": text(enum=list(KINDS)), "name": STR, "description": nullable(STR),
    "projectId": nullable(STR), "createdBy": STR, "canEdit": BOOL,
    "createdAt": TIME, "updatedAt": TIME, "lastUsedAt": nullable(TIME),
}
_NODE = obj({"id": STR, "type": STR, "triggerId": STR, "credentialId": nullable(STR), "inputs": nullable(INPUTS),
             "ready": {**BOOL, "description": "Trigger nodes only."}},
            required=["id"], closed=False, description="As imported; any other fields are kept as given.")
_TRIGGER_STATE = obj({
    "nodeId": STR, "triggerId": STR,
    "type": {"type": ["string", "null"], "enum": ["webhook", "cron", "poll", None],
             "description": "null when the provider has left the catalog."},
    "credentialId": nullable(STR), "inputs": nullable({"type": "object"}), "ready": BOOL,
    "missing": array(text(description="credentialId, inputs, inputs.<name> or triggerProvider."))},
    required="all")

COMPONENTS.update({
    "ProjectSummary": obj(_PROJECT, required="all"),
    "ProjectDetail": obj({**_PROJECT, "grants": array(_GRANT)}, required="all"),
    "ProjectMemory": obj({"text": STR, "version": INT, "updatedAt": TIME,
                          "updatedBy": nullable(obj({"membershipId": STR, "displayName": STR},
                                                    required=["membershipId"]))}, required="all"),
    "ProjectResource": obj({"id": STR, "name": STR, "description": nullable(STR), "type": _RESOURCE_TYPE,
                            "lastUsedAt": nullable(TIME)}, required="all"),
    "Project": obj({"project": ref("ProjectDetail"), "memory": ref("ProjectMemory"),
                    "resources": array(ref("ProjectResource"))}, required="all"),
    "WorkflowSummary": obj(_WORKFLOW, required="all"),
    "Workflow": obj({**_WORKFLOW, "nodes": array(_NODE), "triggers": array(_TRIGGER_STATE)}, required="all"),
})

# --- skills --------------------------------------------------------------------------------

_VERSION = {
    "id": STR, "skillId": STR, "number": INT, "publishedAt": TIME, "publishedBy": STR,
    "source": text(enum=["inline", "bundle", "revert"]),
    "sha256": text(64, 64, description="SHA-256 of the canonical tar before gzip."),
}

COMPONENTS.update({
    "Skill": obj({
        "id": STR, "name": STR, "description": STR, "status": text(enum=list(STATUSES)), "enabled": BOOL,
        "version": {**INT, "description": "The live version; 0 while draft."}, "projectId": nullable(STR),
        "createdBy": STR, "createdAt": TIME, "updatedAt": TIME, "lastUsedAt": nullable(TIME),
        "canEdit": {**BOOL, "description": "Whether the caller may change it (never when archived)."}},
        required="all"),
    "SkillVersion": obj(_VERSION, required="all"),
    "SkillPublished": obj({**_VERSION, "skill": ref("Skill")}, required="all",
                          description="The version just published and the skill record after it."),
    "SkillProblem": obj({"path": text(description="\"\" for the whole archive."), "message": STR},
                        required="all"),
    "PresignedUrl": obj({"url": text(description="http(s) from a server, file:// with the local backend; no key "
                                                 "needed, valid 15 minutes."),
                         "expiresAt": TIME}, required="all"),
})

# --- events and webhooks ----------------------------------------------------------------------

_EVENT = obj({"id": STR, "type": text(enum=list(EVENT_TYPES)), "timestamp": TIME,
              "actorId": nullable(text(description="The member who acted; null for the server's own work.")),
              "subjectId": nullable(STR),
              "data": {"type": "object", "description": "Names, ids, counts and reasons; never a secret."}},
             required="all")

COMPONENTS.update({
    "Event": _EVENT,
    "Webhook": obj(WEBHOOK_FIELDS, required="all"),
    "WebhookDelivery": obj({
        "id": text(description="The webhook-id header of every attempt."), "webhookId": STR, "eventId": STR,
        "eventType": STR, "status": text(enum=["pending", "delivered", "failed"]),
        "attempts": {"type": "integer", "minimum": 0, "maximum": MAX_ATTEMPTS},
        "lastAttemptAt": nullable(TIME), "lastStatus": nullable(INT), "lastError": nullable(STR),
        "nextAttemptAt": nullable(TIME), "deliveredAt": nullable(TIME), "createdAt": TIME}, required="all"),
})
