"""What /v1/openapi.json says about bodies, answers and query parameters, as data.

`ROUTE_DOCS[(method, path)]` describes one handled route: `body` (the JSON request schema),
`responses` ({status: schema or None for no body}), `query` (query parameters). `COMPONENTS`
holds the shapes several routes answer, referenced as `#/components/schemas/<Name>`.

The limits are the engine's own constants where it has them. The rest is written by hand and
checked against the running engine by tests/openapi/test_openapi.py: a body valid under its schema is
not refused for its shape, answers validate against their schema, and every route with a
handler has an entry here. Routes without handlers keep the minimal entry openapi.py makes.

The building blocks (text, obj, ref, ...) live in openapi/blocks.py; projects, workflows
and project files in openapi/schemas_projects.py, skills in openapi/schemas_skills.py, merged
into ROUTE_DOCS and COMPONENTS at the end of this module (import this one, not the parts).
"""
from __future__ import annotations

from workspacectl.formats import env_text
from workspacectl.engine.catalog.definition_values import MAX_SERVICE, SERVICE_RE
from workspacectl.engine.catalog.search_routes import DEFAULT_LIMIT as SEARCH_LIMIT, MAX_QUERY_CHARS
from workspacectl.engine.vault.credentials import MAX_FIELD_CHARS, MAX_SECRET_CHARS
from workspacectl.engine.identity.members import ROLES
from workspacectl.engine.pagination import MAX_LIMIT
from workspacectl.engine.openapi.blocks import (ANY, BOOL, INT, NAMED_PAGE, NOT_BLANK, PAGE, STR, STR_MAP, TIME, array,
                                                       nullable, obj, page_of, query, ref, text)
from workspacectl.engine.scopes import KIND_SCOPES
from workspacectl.engine.catalog.triggers import MAX_QUERY as TRIGGER_QUERY_CHARS
from workspacectl.engine.validate import EMAIL
from workspacectl.engine.vault.routes import REASON_MAX

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
_OPERATION = {"opId": STR, "service": STR, "name": STR, "summary": STR, "method": STR, "path": STR}
_TRIGGER = {
    "type": text(enum=["webhook", "cron", "poll"]), "triggerId": STR, "name": STR, "description": STR,
    "service": text(description="The integration it watches; a generic provider's own id (webhook, cron)."),
    "requiresCredential": BOOL,
    "cadenceSeconds": {"type": "integer", "description": "Poll providers only."},
}

_KEY_CREDENTIALS = nullable(array(STR, description="The credential ids the key is limited to; null: not limited."))
COMPONENTS: dict[str, dict] = {
    "Error": obj({"error": obj({"status": INT, "code": STR, "message": STR, "detail": ANY},
                               required=["status", "code", "message"])}, required="all"),
    "Member": obj({"id": STR, "name": STR, "email": STR, "role": text(enum=list(ROLES)), "createdAt": TIME},
                  required="all"),
    "ApiKey": obj({"id": STR, "kind": text(enum=list(KIND_SCOPES)), "name": STR, "scopes": array(STR),
                   "memberId": STR, "createdAt": TIME, "expiresAt": nullable(TIME), "revokedAt": nullable(TIME),
                   "credentials": _KEY_CREDENTIALS},
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
    "Operation": obj(_OPERATION, required="all"),
    "OperationDetail": obj({**_OPERATION, "description": STR, "tags": array(STR),
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

# --- request bodies ----------------------------------------------------------------------------

_KEY_LIMIT = {"credentials": nullable(array(text(1, 100), minItems=1, maxItems=100, description=(
    "Platform keys only: the credential ids (cred_…) the key is limited to, each one its creator can use; "
    "any other credential is 404 to it. Absent or null: every credential its creator can use.")))}
_KEY_BODY = {"oneOf": [
    obj({"kind": {"const": kind}, "scopes": array(text(enum=list(scopes)), minItems=1, maxItems=20),
         "name": text(0, 200), "expiresAt": text(1, 64, format="date-time", description="In the future."),
         **(_KEY_LIMIT if kind == "platform" else {})},
        required=["kind", "scopes"])
    for kind, scopes in KIND_SCOPES.items()]}
_SHARING_BODY = {
    "description": "Exactly one of membershipId (an id or an email) and workspace: true; role null removes "
                   "the share.",
    "oneOf": [
        obj({"membershipId": text(1, 320), "workspace": {"const": False},
             "role": {"enum": ["user", "viewer", None]}}, required=["membershipId", "role"]),
        obj({"workspace": {"const": True}, "role": {"enum": ["user", "viewer", None]}},
            required=["workspace", "role"]),
    ]}
_SECRET_VALUE = text(1, MAX_SECRET_CHARS, NOT_BLANK)
_DATA_BODY = {
    "type": "object", "minProperties": 1,
    "description": "The credential's secret fields by name (at least one; see editable-fields secretFields; "
                   f"1-{MAX_SECRET_CHARS} characters, not blank) and its declared non-secret fields "
                   f"(at most {MAX_FIELD_CHARS} characters). Any other key is refused.",
    "properties": {"apiKey": _SECRET_VALUE},
    "additionalProperties": text(0, MAX_SECRET_CHARS),
}
_IMPORT_BODY = obj({
    "content": text(description="The text of a service definition (TOML) or an OpenAPI 2/3 document."),
    "format": text(enum=["toml", "openapi"], description="Guessed from filename, then content, when absent."),
    "service": text(1, MAX_SERVICE, SERVICE_RE.pattern, description="Overrides the document's service name."),
    "filename": text(1, 500, description="Shown in error messages; its extension hints the format."),
    "force": {"type": "boolean", "description": "Owner only: replace a service even when the import changes "
              "where secrets go while credentials use it; they become needs_reconnect, secrets erased."},
}, required=["content"])
_CATALOG_CHANGE = obj({
    "id": INT, "at": TIME, "membershipId": nullable(STR), "service": STR,
    "action": text(enum=["create", "replace", "delete", "oauth-client"]), "forced": BOOL, "credentialsReset": INT,
    "changes": array(obj({"field": STR, "from": ANY, "to": ANY}, required="all"))}, required="all")
_WEB_NEXT = r"^(/|/[^/\\\x00-\x1f][^\\\x00-\x1f]*)$"  # a path on this server: never '//host' or '\'

# --- the routes --------------------------------------------------------------------------------

_CREATED_CODE = obj({"code": text(description="XXXX-XXXX-XXXX"), "expiresAt": TIME}, required="all")

# The credential proxy (engine/vault/proxy.py): any body goes through, the service's answer comes back.
_PROXY = {"query": [query("reason", text(1, REASON_MAX, NOT_BLANK), "Why the call is made, written to the access "
                          "log; required unless the X-Wsctl-Reason header says it, and then not forwarded.")],
          "responses": {200: None}}


ROUTE_DOCS: dict[tuple[str, str], dict] = {
    ("GET", "/v1/openapi.json"): {"responses": {200: {"type": "object", "required": ["openapi", "info", "paths"]}}},
    # identity
    ("POST", "/v1/auth/session"): {
        "body": obj({"code": text(1, 64, description="A login code; case, spaces and dashes are ignored."),
                     "name": text(1, 200, description="Labels the session (default wsctl).")}, required=["code"]),
        "responses": {201: obj({"token": STR, "member": ref("Member")}, required="all")}},
    ("DELETE", "/v1/auth/session"): {"responses": {204: None}},
    ("GET", "/v1/auth/whoami"): {"responses": {200: obj({
        "member": ref("Member"), "kind": text(enum=["session", "platform", "personal"]), "keyId": STR,
        "scopes": array(STR), "workspace": nullable(STR),
        "credentials": nullable(array(STR, description="A key limited to named credentials: their ids."))},
        required="all")}},
    ("POST", "/v1/auth/web-link"): {
        "body": obj({"next": text(1, 2000, _WEB_NEXT, description="A path on this server (default /).")}),
        "body_required": False,
        "responses": {201: obj({"url": STR, "expiresAt": TIME}, required="all")}},
    ("GET", "/v1/members"): {"query": NAMED_PAGE, "responses": {200: page_of("members", ref("Member"))}},
    ("POST", "/v1/members"): {
        "body": obj({"email": text(3, 320, EMAIL.pattern), "name": text(1, 200, description="Blank: the email."),
                     "role": text(enum=list(ROLES), description="Default member.")}, required=["email", "name"]),
        "responses": {201: ref("Member")}},
    ("POST", "/v1/members/{id}/login-codes"): {"responses": {201: _CREATED_CODE}},
    ("GET", "/v1/keys"): {"query": NAMED_PAGE, "responses": {200: page_of("keys", ref("ApiKey"))}},
    ("POST", "/v1/keys"): {"body": _KEY_BODY, "responses": {201: obj({
        "id": STR, "secret": text(description="Shown only here."), "kind": text(enum=list(KIND_SCOPES)),
        "scopes": array(STR), "name": STR, "memberId": STR, "createdAt": TIME, "expiresAt": nullable(TIME),
        "credentials": _KEY_CREDENTIALS}, required="all")}},
    ("DELETE", "/v1/keys/{id}"): {"responses": {204: None}},
    # vault
    ("GET", "/v1/credentials"): {
        "query": [query("service", STR, "Only credentials of this service."), *NAMED_PAGE],
        "responses": {200: page_of("credentials", ref("Credential"))}},
    ("GET", "/v1/credentials/{id}"): {"responses": {200: ref("CredentialDetail")}},
    ("POST", "/v1/credentials/{id}/token"): {
        "body": obj({"reason": text(1, REASON_MAX, NOT_BLANK, description="Why; written to the access log."),
                     "format": text(enum=list(env_text.FORMS), description="How the client will write the "
                                    "token (default json); one it cannot write exactly is 400 before anything "
                                    "is issued or logged."),
                     "dryRun": {**BOOL, "description": "Check only: answer {dryRun, fields} and "
                                "issue and log nothing."}},
                    required=["reason"]),
        "responses": {200: {"type": "object", "additionalProperties": True,
                            "description": "Only the usable fields: accessToken and tokenType (oauth2) or the "
                                           "secret fields by name (apiKey), instanceUrl and the non-secret "
                                           "fields the env vars name, expiresAt. Never a refresh token. "
                                           "A dry run answers {dryRun: true, fields: [names]} instead.",
                            "properties": {"accessToken": STR, "tokenType": STR, "apiKey": STR,
                                           "instanceUrl": STR, "expiresAt": TIME}}}},
    ("PUT", "/v1/credentials/{id}/sharing"): {"body": _SHARING_BODY, "responses": {200: ref("CredentialDetail")}},
    ("GET", "/v1/credentials/{id}/access-log"): {"query": PAGE, "responses": {200: page_of("entries", obj({
        "at": TIME, "membershipId": STR, "keyId": STR, "reason": STR, "fields": array(STR),
        "outcome": text(enum=["issued", "refused", "proxied", "failed"]),
        "method": text(description="A call through the proxy: its method."),
        "path": text(description="A call through the proxy: the path on the service (no query string)."),
        "upstreamStatus": nullable({**INT, "description": "A call through the proxy: the status the service "
                                                          "answered (null: no answer)."})},
        required=["at", "membershipId", "keyId", "reason", "fields", "outcome"]))}},
    **{(m, "/v1/credentials/{id}/proxy/{path}"): _PROXY for m in ("GET", "POST", "PUT", "PATCH", "DELETE")},
    ("POST", "/v1/connections"): {
        "body": obj({"service": text(1, 100, description="An oauth2 or apiKey integration."),
                     "credentialId": nullable(text(1, 100, description="Reconnect: refill this credential.")),
                     "name": nullable(text(1, 64, r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="The new "
                                           "credential's name (default: the service's, made unique)."))},
                    required=["service"]),
        "responses": {201: ref("Connection")}},
    ("GET", "/v1/connections/{id}"): {"responses": {200: ref("Connection")}},
    ("GET", "/v1/vault/credentials/{id}/editable-fields"): {"responses": {200: obj({
        "fields": {"type": "object", "additionalProperties": nullable(STR)},
        "secretFields": array(obj({"name": STR, "set": BOOL}, required="all"))}, required="all")}},
    ("PUT", "/v1/vault/credentials/{id}/data"): {"body": _DATA_BODY, "responses": {200: ref("CredentialDetail")}},
    ("POST", "/v1/vault/credentials/{id}/sync"): {"responses": {200: ref("CredentialDetail")}},
    ("PATCH", "/v1/vault/credentials/{id}"): {
        "body": obj({"name": text(1, 64, r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="The new name: unique in "
                                  "the workspace regardless of case, not starting with cred_.")}, required=["name"]),
        "responses": {200: ref("CredentialDetail")}},
    ("DELETE", "/v1/vault/credentials/{id}"): {
        "query": [query("force", text(enum=["true", "false", "1", "0", "yes", "no"]),
                        "Delete even when revoking at the provider fails.")],
        "responses": {204: None}},
    # catalog
    ("GET", "/v1/integrations"): {"query": PAGE, "responses": {200: page_of("integrations", ref("Integration"))}},
    ("GET", "/v1/integrations/{service}"): {"responses": {200: ref("IntegrationDetail")}},
    ("GET", "/v1/integrations/{service}/operations"): {
        "query": PAGE, "responses": {200: page_of("operations", ref("Operation"))}},
    ("GET", "/v1/integrations/{service}/operations/{opId}"): {"responses": {200: ref("OperationDetail")}},
    ("GET", "/v1/operations"): {
        "query": [query("q", text(1, MAX_QUERY_CHARS, NOT_BLANK),
                        "A capability phrase such as 'send a text message' (required).", required=True),
                  query("service", STR, "Only this service's operations."),
                  query("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                        f"How many hits, 1-{MAX_LIMIT} (default {SEARCH_LIMIT}); a ranking has one page.")],
        "responses": {200: obj({"operations": array(obj({**_OPERATION, "score": {"type": "number"}},
                                                        required="all")),
                                "nextCursor": {"type": "null"}}, required="all")}},
    ("GET", "/v1/operations/{opId}"): {"responses": {200: ref("OperationDetail")}},
    ("POST", "/v1/admin/catalog"): {
        "body": _IMPORT_BODY, "raw_body": True,
        "query": [query("service", STR, "Raw (non-JSON) body only: the service name override."),
                  query("force", text(enum=["true", "false"]), "Raw (non-JSON) body only: see the body's force."),
                  query("filename", STR, "Raw (non-JSON) body only: the file name, which hints the format.")],
        "responses": {n: obj({"service": STR, "created": BOOL, "operationCount": INT, "triggerCount": INT,
                              "integration": ref("IntegrationDetail")}, required="all") for n in (200, 201)}},
    ("DELETE", "/v1/admin/catalog/{service}"): {"responses": {204: None}},
    ("GET", "/v1/admin/catalog/history"): {
        "query": [query("service", text(1, MAX_SERVICE), "Only this service's changes."), *PAGE],
        "responses": {200: page_of("changes", _CATALOG_CHANGE)}},
    ("PUT", "/v1/admin/catalog/{service}/oauth-client"): {
        "body": obj({"clientId": text(1, 1000), "clientSecret": text(
            1, 4000, description="Required, except for a public client (clientAuth none), which has none.")},
            required=["clientId"]),
        "responses": {200: ref("IntegrationDetail")}},
    ("POST", "/v1/admin/rotate-key"): {"responses": {200: obj({
        "credentials": INT, "oauthClients": INT, "connections": INT, "webhooks": INT,
        "keySource": text(enum=["env", "keyring", "file"]), "retiredKeys": INT}, required="all")}},
    # trigger providers
    ("GET", "/v1/triggers"): {
        "query": [query("q", text(0, TRIGGER_QUERY_CHARS),
                        "Words matched in name, service and description, case-insensitively."), *PAGE],
        "responses": {200: page_of("triggers", ref("Trigger"))}},
    ("GET", "/v1/triggers/{triggerId}"): {"responses": {200: ref("TriggerDetail")}},
}

# --- memory (engine/memory/routes.py, engine/memory/agent.py) -----------------------------------------
from workspacectl.engine.memory import routes as _memory  # noqa: E402  (kept with the block it serves)

_MEMORY_FILE = obj({"path": text(1, _memory.MAX_PATH, description="A safe relative path: names separated by "
                                                                    "'/', no '..', '.', empty names or '\\'."),
                    "content": text(0, _memory.MAX_FILE_BYTES, description=f"UTF-8 text, at most "
                                                                           f"{_memory.MAX_FILE_BYTES} bytes.")},
                   required="all")
_FOLD_RESULT = obj({"ownerType": text(enum=list(_memory.OWNER_TYPES)), "membershipId": nullable(STR),
                    "version": INT, "folded": array(STR), "dropped": array(STR), "held": array(STR)},
                   required="all")
_NOTE = {"id": STR, "text": STR, "section": nullable(STR), "proposedBy": STR, "proposedAt": TIME}
ROUTE_DOCS.update({
    ("GET", "/v1/memory/{ownerType}"): {"responses": {200: obj({
        "ownerType": text(enum=list(_memory.OWNER_TYPES)),
        "guide": text(description="Markdown, at most 1 MiB of UTF-8."),
        "version": INT, "updatedAt": TIME,
        "pendingNotes": array(obj(_NOTE, required="all"), maxItems=_memory.MAX_PENDING),
        "heldNotes": array(obj({**_NOTE, "reason": text(enum=["guide_full"])}, required="all"),
                           maxItems=_memory.MAX_PENDING)}, required="all")}},
    ("GET", "/v1/memory/{ownerType}/files"): {
        "query": [query("path", text(1, _memory.MAX_PATH), "Answer this file's bytes instead of the list."),
                  query("format", text(enum=["tar.gz"]), "Answer every file as one tar.gz (entries at its root)."),
                  *PAGE],
        "responses": {200: obj({"files": array(obj({"path": STR, "size": INT, "updatedAt": TIME}, required="all")),
                                "nextCursor": nullable(STR)}, required="all",
                               description="The list; with ?path= the file's bytes (text/markdown or "
                                           "application/octet-stream), with ?format=tar.gz application/gzip.")}},
    ("POST", "/v1/memory/{ownerType}/proposals"): {
        "body": obj({"text": text(1, _memory.MAX_TEXT, NOT_BLANK),
                     "section": nullable(text(0, _memory.MAX_SECTION, description="One line; default Notes.")),
                     "file": nullable(_MEMORY_FILE)}, required=["text"]),
        "responses": {202: obj({"id": STR, "status": {"const": "pending"}}, required="all")}},
    ("POST", "/v1/memory/agent/run"): {
        "body": obj({}, description="Empty; no fields."), "body_required": False,
        "responses": {200: obj({"owners": array(_FOLD_RESULT)}, required="all")}},
})

# --- projects, workflows and skills, each in its own module -------------------------------------
from workspacectl.engine.openapi import schemas_projects as _projects  # noqa: E402
from workspacectl.engine.openapi import schemas_skills as _skills  # noqa: E402
from workspacectl.engine.openapi import schemas_events as _events  # noqa: E402

for _part in (_projects, _skills, _events):
    assert not set(_part.COMPONENTS) & set(COMPONENTS) and not set(_part.ROUTE_DOCS) & set(ROUTE_DOCS), _part
    COMPONENTS.update(_part.COMPONENTS)
    ROUTE_DOCS.update(_part.ROUTE_DOCS)
