"""/v1/openapi.json for projects (specialists), workflows and apps, and project files (docs/api.md §7).

Merged into openapi_schemas.ROUTE_DOCS and COMPONENTS; import that module, not this one.
Shapes follow engine/projects/routes.py, projects/grants.py, projects/contents.py, projects/files.py and
workflows.py.
"""
from __future__ import annotations

from workspacectl.engine.openapi.blocks import (BOOL, INT, NAMED_PAGE, NOT_BLANK, PAGE, STR, TIME, array, nullable, obj,
                                                       page_of, query, ref, text)
from workspacectl.engine.projects.routes import ACCESSORIES, MEMORY_MAX
from workspacectl.engine.projects.workflows import KINDS, MAX_INPUTS, MAX_NODES

_ROLE = text(enum=["owner", "editor", "viewer"])
_GRANT_ROLE = text(enum=["editor", "viewer"])
_RESOURCE_TYPE = text(enum=["workflow", "app", "skill"])
_CREDENTIAL_TYPE = text(enum=["oauth2", "apiKey", "platform", "noAuth"])

# --- shapes ------------------------------------------------------------------------------------

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
_INPUT_VALUE = {"type": ["string", "number", "boolean", "null"], "maxLength": 10_000}
_INPUTS = {"type": "object", "maxProperties": MAX_INPUTS, "propertyNames": {"maxLength": 200},
           "additionalProperties": _INPUT_VALUE,
           "description": f"At most {MAX_INPUTS} names with text, number, true/false or null values."}
_WORKFLOW = {
    "id": STR, "kind": text(enum=list(KINDS)), "name": STR, "description": nullable(STR),
    "projectId": nullable(STR), "createdBy": STR, "canEdit": BOOL,
    "createdAt": TIME, "updatedAt": TIME, "lastUsedAt": nullable(TIME),
}
_NODE = obj({"id": STR, "type": STR, "triggerId": STR, "credentialId": nullable(STR), "inputs": nullable(_INPUTS),
             "ready": {**BOOL, "description": "Trigger nodes only."}},
            required=["id"], closed=False, description="As imported; any other fields are kept as given.")
_TRIGGER_STATE = obj({
    "nodeId": STR, "triggerId": STR,
    "type": {"type": ["string", "null"], "enum": ["webhook", "cron", "poll", None],
             "description": "null when the provider has left the catalog."},
    "credentialId": nullable(STR), "inputs": nullable({"type": "object"}), "ready": BOOL,
    "missing": array(text(description="credentialId, inputs, inputs.<name> or triggerProvider."))},
    required="all")

COMPONENTS: dict[str, dict] = {
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
}

# --- request bodies ----------------------------------------------------------------------------

_PROJECT_FIELDS = {
    "name": text(1, 200, NOT_BLANK),
    "description": nullable(text(0, 2000)),
    "icon": nullable(text(1, 32, description="Exactly one emoji (one grapheme cluster); null: the default 🤖.")),
    "workerColor": nullable(text(1, 40, description="A colour name: letters, spaces, hyphens; null: the default blue.")),
    "workerAccessories": obj({k: nullable(STR) for k in ACCESSORIES},
                             description="Missing keys become null."),
}
_GRANT_BODY = {
    "description": "Exactly one of membershipId (a member id or email) and workspace: true; role null removes "
                   "the grant. The owner cannot be granted.",
    "oneOf": [
        obj({"membershipId": text(1, 320), "workspace": {"const": False},
             "role": {"enum": ["editor", "viewer", None]}}, required=["membershipId", "role"]),
        obj({"workspace": {"const": True}, "role": {"enum": ["editor", "viewer", None]}},
            required=["workspace", "role"]),
    ]}
_NODE_BODY = obj({
    "id": text(1, 100, description="Unique in the workflow."), "type": text(0, 100),
    "triggerId": text(1, 200, description="A trigger provider (GET /v1/triggers); required when type is trigger."),
    "credentialId": nullable(text(1, 200, description="A credential the caller may use (own or shared as user).")),
    "inputs": nullable(_INPUTS)}, required=["id"], closed=False)
_WORKFLOW_BODY = obj({
    "name": text(1, 200, NOT_BLANK), "kind": text(enum=list(KINDS), description="Default workflow."),
    "description": nullable(text(0, 2000)),
    "nodes": array(_NODE_BODY, maxItems=MAX_NODES, description="At most 1 MB of JSON; may be empty."),
    "projectId": nullable(text(1, 200, description="Put it straight into this specialist (needs edit)."))},
    required=["name", "nodes"])

# --- the routes --------------------------------------------------------------------------------

_PROJECT_FILE = obj({"path": text(1, 1024, description="A relative POSIX path: no '..', '.', empty parts, "
                                                       "leading '/', backslash or control characters."),
                     "size": INT, "sha256": text(64, 64), "updatedAt": TIME}, required="all")

ROUTE_DOCS: dict[tuple[str, str], dict] = {
    # projects (engine/projects/routes.py, projects/grants.py, projects/contents.py)
    ("GET", "/v1/projects"): {"query": NAMED_PAGE, "responses": {200: page_of("projects", ref("ProjectSummary"))}},
    ("POST", "/v1/projects"): {"body": obj(_PROJECT_FIELDS, required=["name"]), "responses": {201: ref("Project")}},
    ("GET", "/v1/projects/{id}"): {"responses": {200: ref("Project")}},
    ("PATCH", "/v1/projects/{id}"): {"body": obj(_PROJECT_FIELDS, description="Every field optional; {} changes "
                                                                              "nothing."),
                                     "responses": {200: ref("Project")}},
    ("PUT", "/v1/projects/{id}/memory"): {
        "body": obj({"text": text(0, MEMORY_MAX, description="The whole memory; may be empty."),
                     "version": {**INT, "description": "The current version; any other integer is 409 with "
                                                       "detail.currentVersion."}}, required="all"),
        "responses": {200: ref("ProjectMemory")}},
    ("GET", "/v1/projects/{id}/connections"): {"query": PAGE, "responses": {200: obj({
        "connections": array(obj({
            "id": STR, "service": nullable(STR), "name": nullable(STR), "credentialType": nullable(_CREDENTIAL_TYPE),
            "status": text(enum=["ok", "needs_reconnect", "invalid", "missing"],
                           description="missing: the credential was deleted (service, name, type null)."),
            "usedBy": array(obj({"id": STR, "name": STR, "type": text(enum=list(KINDS)), "nodeIds": array(STR)},
                                required="all"), description="At most 100, in id order."),
            "usedByCount": INT}, required="all")),
        "nextCursor": nullable(STR)}, required="all")}},
    ("POST", "/v1/projects/{id}/delete"): {"responses": {200: obj({
        "id": STR, "deleted": {"const": True}, "returnedResources": INT, "deletedFiles": INT}, required="all")}},
    ("POST", "/v1/projects/pin"): {
        "body": obj({"resourceId": text(1, 200, description="A workflow or app (wf_…) or a skill (skl_…), or "
                                                            "its name; a name several fit is 400, listing them."),
                     "projectId": nullable(text(1, 200, description="null returns it to its creator."))},
                    required="all"),
        "responses": {200: obj({"resource": ref("ProjectResource"), "projectId": nullable(STR),
                                "previousProjectId": nullable(STR)}, required="all")}},
    ("PUT", "/v1/projects/{id}/grants"): {"body": _GRANT_BODY, "responses": {200: ref("Project")}},
    # workflows and apps (engine/projects/workflows.py)
    ("GET", "/v1/workflows"): {
        "query": [query("kind", text(enum=list(KINDS)), "Only workflows or only apps."),
                  query("projectId", STR, "Only those in this specialist (404 when you cannot see it)."),
                  *NAMED_PAGE],
        "responses": {200: page_of("workflows", ref("WorkflowSummary"))}},
    ("POST", "/v1/workflows"): {"body": _WORKFLOW_BODY, "responses": {201: ref("Workflow")}},
    ("GET", "/v1/workflows/{id}"): {"responses": {200: ref("Workflow")}},
    ("PUT", "/v1/workflows/{id}/triggers/{nodeId}/config"): {
        "body": obj({"credentialId": nullable(text(1, 200)), "inputs": nullable(_INPUTS)},
                    description="Replaces both values of the trigger node; an absent one becomes null."),
        "responses": {200: ref("Workflow")}},
    # project files (engine/projects/files.py)
    ("GET", "/v1/projects/{id}/files"): {"query": PAGE, "responses": {200: page_of("files", _PROJECT_FILE)}},
    ("GET", "/v1/projects/{id}/files/bundle"): {"responses": {200: None}},  # application/gzip, streamed
    ("POST", "/v1/projects/{id}/files/bundle"): {
        "responses": {200: obj({"added": INT, "updated": INT}, required="all",
                               description="The body is the tar.gz itself (Content-Type: application/gzip). "
                                           "Adds and overwrites, never removes; refused whole (400/409/413) "
                                           "on a link, device, unsafe path or the limits (10,000 files, 1 GiB).")}},
    ("DELETE", "/v1/projects/{id}/files"): {
        "query": [query("path", text(1, 1024), "The file to remove.", required=True)],
        "responses": {204: None}},
}
