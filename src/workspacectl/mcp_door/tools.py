"""The tools an agent calls: each a JSON schema, a description an agent can act on, annotations,
and what it runs through the caller's `Client` (one or a few API requests; the rules are the
engine's, the same as for `wsctl api`).

Safety, by construction: no tool answers a secret but `vault_issue_token`, which answers the one
token asked for (the API never answers a refresh token); `vault_issue_token` and `vault_proxy`
require a reason, recorded in the access log as for `wsctl vault token`; memory is only ever
proposed. Annotations say which tools are read-only, which change or may destroy something, and
(in `_meta`, `wsctl/returnsSecret`) which answer a secret.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from workspacectl.errors import ApiError
from workspacectl.mcp_door import Client

MAX_PAGES = 20          # a list tool reads at most this many pages (of up to 500 rows)
PROXY_BODY_MAX = 1024 * 1024   # vault_proxy answers at most this much of a service's body
PROXY_HEADERS = {"content-type", "link", "location", "retry-after", "x-wsctl-upstream-status", "x-wsctl-pagination",
                 "x-ratelimit-remaining", "x-ratelimit-reset"}
OWNER_TYPES = ["organization", "membership"]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    properties: dict[str, dict]
    required: tuple[str, ...]
    run: Callable[[Client, dict], Any]
    read_only: bool = True
    destructive: bool = False
    idempotent: bool = True
    open_world: bool = False
    returns_secret: bool = False
    extra: dict = field(default_factory=dict)

    def input_schema(self) -> dict:
        return {"type": "object", "properties": self.properties, "required": list(self.required),
                "additionalProperties": False}


def seg(value: str) -> str:
    """One path segment, percent-encoded whole (an id or name holding '/' stays one segment)."""
    return quote(value, safe="")


def checked(spec: ToolSpec, args: dict | None) -> dict:
    """The arguments against the tool's schema: unknown names, missing required ones and wrong
    types are refused as the API refuses a bad body (400 invalid_request), naming the argument."""
    args = dict(args or {})
    unknown = sorted(set(args) - set(spec.properties))
    if unknown:
        raise ApiError("invalid_request", f"Unknown argument '{unknown[0]}' for {spec.name}; it takes: "
                       f"{', '.join(spec.properties)}.")
    for name in spec.required:
        if args.get(name) in (None, ""):
            raise ApiError("invalid_request", f"{spec.name} needs the argument '{name}'.")
    for name, value in list(args.items()):
        if value is None:
            del args[name]
            continue
        want = str(spec.properties[name].get("type", ""))
        ok = {"string": isinstance(value, str), "integer": isinstance(value, int) and not isinstance(value, bool),
              "object": isinstance(value, dict), "boolean": isinstance(value, bool)}.get(want, True)
        if not ok:
            raise ApiError("invalid_request", f"The argument '{name}' of {spec.name} must be a {want}.")
        allowed = spec.properties[name].get("enum")
        if allowed and value not in allowed:
            raise ApiError("invalid_request", f"The argument '{name}' of {spec.name} must be one of: {', '.join(allowed)}.")
        low, high = spec.properties[name].get("minimum"), spec.properties[name].get("maximum")
        if want == "integer" and ((low is not None and value < low) or (high is not None and value > high)):
            raise ApiError("invalid_request", f"The argument '{name}' of {spec.name} must be from {low} to {high}.")
    return args


def all_rows(client: Client, path: str, key: str, query: dict | None = None) -> dict:
    """Every page of a list route (at most MAX_PAGES of 500), as one body {key: rows, truncated}."""
    query = {**(query or {}), "limit": "500"}
    rows: list = []
    for _ in range(MAX_PAGES):
        body = client.request("GET", path, query=query)
        rows.extend(body.get(key) or [])
        if not body.get("nextCursor"):
            return {key: rows, "truncated": False}
        query["cursor"] = body["nextCursor"]
    return {key: rows, "truncated": True}


def resolve(client: Client, kind: str, ref: str) -> str:
    """The id an id or a name stands for, by the CLI's rules (formats/refs.py)."""
    from workspacectl.formats.refs import resolve_with

    return resolve_with(client.request, kind, ref)


# ---- catalog ----------------------------------------------------------------------------------

def _catalog_search(client: Client, a: dict) -> Any:
    query = {"q": a["query"], "limit": str(a.get("limit", 10))}
    if a.get("service"):
        query["service"] = a["service"]
    return client.request("GET", "/v1/operations", query=query)


def _catalog_operation(client: Client, a: dict) -> Any:
    return client.request("GET", f"/v1/operations/{seg(a['opId'])}")


def _catalog_integrations(client: Client, a: dict) -> Any:
    return all_rows(client, "/v1/integrations", "integrations")


# ---- vault ------------------------------------------------------------------------------------

def _vault_list(client: Client, a: dict) -> Any:
    body = all_rows(client, "/v1/credentials", "credentials")
    if a.get("service"):
        body["credentials"] = [c for c in body["credentials"] if c.get("service") == a["service"]]
    return body


def _vault_token(client: Client, a: dict) -> Any:
    cred = resolve(client, "credential", a["credential"])
    return client.request("POST", f"/v1/credentials/{seg(cred)}/token", body={"reason": a["reason"]})


def _vault_proxy(client: Client, a: dict) -> Any:
    """The call through the vault: the service's status, a few headers and its body (JSON when it
    is JSON, else text; at most PROXY_BODY_MAX bytes, `truncated` saying so)."""
    import io
    import json

    cred = resolve(client, "credential", a["credential"])
    path = a["path"].lstrip("/")
    headers = {"X-Wsctl-Reason": a["reason"]}
    data, length = None, None
    if "body" in a:
        raw = json.dumps(a["body"]).encode()
        headers["Content-Type"] = "application/json"
        data, length = io.BytesIO(raw), len(raw)
    query = [(str(k), str(v)) for k, v in (a.get("query") or {}).items()]
    answer = client.proxy(a["method"], f"/v1/credentials/{seg(cred)}/proxy/{path}", query, headers, data, length)
    try:
        kept, size = [], 0
        for chunk in answer.chunks:
            kept.append(chunk[:PROXY_BODY_MAX - size])
            size += len(chunk)
            if size >= PROXY_BODY_MAX:
                break
    finally:
        answer.close()
    raw_body = b"".join(kept)
    shown = {k.lower(): v for k, v in answer.headers if k.lower() in PROXY_HEADERS}
    body: Any = raw_body.decode("utf-8", "replace")
    if "json" in shown.get("content-type", "") and size <= PROXY_BODY_MAX:
        try:
            body = json.loads(raw_body)
        except ValueError:
            pass
    return {"status": answer.status, "headers": shown, "body": body, "truncated": size > PROXY_BODY_MAX}


# ---- skills -----------------------------------------------------------------------------------

def _skill_list(client: Client, a: dict) -> Any:
    return all_rows(client, "/v1/skills", "skills", {"status": a["status"]} if a.get("status") else None)


def _skill_get(client: Client, a: dict) -> Any:
    return client.request("GET", f"/v1/skills/{seg(a['skill'])}")


def _skill_files(client: Client, a: dict) -> Any:
    return client.request("GET", f"/v1/skills/{seg(a['skill'])}/files")


def _platform_skill(client: Client, a: dict) -> Any:
    return client.request("GET", f"/v1/skills/platform/{seg(a['name'])}")


# ---- memory -----------------------------------------------------------------------------------

def _memory_read(client: Client, a: dict) -> Any:
    return client.request("GET", f"/v1/memory/{seg(a['ownerType'])}")


def _memory_propose(client: Client, a: dict) -> Any:
    body: dict = {"text": a["text"]}
    if a.get("section"):
        body["section"] = a["section"]
    return client.request("POST", f"/v1/memory/{seg(a['ownerType'])}/proposals", body=body)


# ---- specialists and triggers -----------------------------------------------------------------

def _specialist_list(client: Client, a: dict) -> Any:
    return all_rows(client, "/v1/projects", "projects")


def _specialist_get(client: Client, a: dict) -> Any:
    return client.request("GET", f"/v1/projects/{seg(resolve(client, 'specialist', a['specialist']))}")


def _specialist_files(client: Client, a: dict) -> Any:
    project = resolve(client, "specialist", a["specialist"])
    return all_rows(client, f"/v1/projects/{seg(project)}/files", "files")


def _trigger_list(client: Client, a: dict) -> Any:
    return client.request("GET", "/v1/triggers", query={"q": a["query"]} if a.get("query") else None)


CREDENTIAL = {"type": "string", "description": "The credential's id (cred_…) or its name, as `vault_list_credentials` shows."}
REASON = {"type": "string", "minLength": 1, "maxLength": 500,
          "description": "Why you need it, in a sentence: recorded in the workspace's access log with who asked."}
OWNER = {"type": "string", "enum": OWNER_TYPES,
         "description": "organization: the workspace's shared memory; membership: your own."}
SPECIALIST = {"type": "string", "description": "The specialist's id (proj_…) or its exact name."}
SKILL = {"type": "string", "description": "The skill's id (skl_…) or its name."}

TOOLS: list[ToolSpec] = [
    ToolSpec("catalog_search", "Search API operations",
             "Find third-party API operations by what you want to do, in plain words (\"refund a payment\", "
             "\"post to a slack channel\"). Answers the best operations first with their opId, method and path; "
             "read one with catalog_operation before calling it.",
             {"query": {"type": "string", "minLength": 1, "maxLength": 500, "description": "What you want to do."},
              "service": {"type": "string", "description": "Only this service's operations (e.g. github)."},
              "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many (default 10)."}},
             ("query",), _catalog_search),
    ToolSpec("catalog_operation", "Read an operation's reference",
             "The full reference of one operation: method, path, parameters, response shape, an example, and the "
             "environment variable names a credential of its service provides. The `markdown` field is the whole "
             "document.",
             {"opId": {"type": "string", "description": "The operation's id, e.g. slack.chat-post-message."}},
             ("opId",), _catalog_operation),
    ToolSpec("catalog_integrations", "List integrations",
             "Every service the workspace can use, with its credential type (oauth2, apiKey, platform, noAuth) and "
             "how many operations it documents.", {}, (), _catalog_integrations),
    ToolSpec("vault_list_credentials", "List connected credentials",
             "The connected accounts you can use, with their names, services, status and the environment variable "
             "names they provide. Never any secret.",
             {"service": {"type": "string", "description": "Only credentials of this service."}},
             (), _vault_list),
    ToolSpec("vault_issue_token", "Issue a token (secret)",
             "Issue a fresh access token or API key for one credential so you can call its API yourself. A reason is "
             "required and is recorded in the access log with your identity. The answer holds the secret (only the "
             "usable fields: never a refresh token): use it for the call at hand, do not store or repeat it. Request "
             "a new one once expiresAt has passed.",
             {"credential": CREDENTIAL, "reason": REASON}, ("credential", "reason"), _vault_token,
             read_only=False, idempotent=False, open_world=True, returns_secret=True),
    ToolSpec("vault_proxy", "Call an API through the vault",
             "Call the credential's API through the workspace, which applies the credential's authentication so "
             "the secret never reaches you. `path` is relative to the service's base URL (e.g. /v1/customers). "
             "A reason is required and is recorded in the access log. Answers the upstream status, a few headers "
             "and the body. This can change or delete data at the service: use the method the operation documents.",
             {"credential": CREDENTIAL, "method": {"type": "string", "enum": ["GET", "POST", "PUT", "PATCH", "DELETE"]},
              "path": {"type": "string", "minLength": 1, "description": "The path at the service, e.g. /v1/charges."},
              "reason": REASON,
              "query": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Query parameters."},
              "body": {"description": "A JSON body for POST, PUT or PATCH."}},
             ("credential", "method", "path", "reason"), _vault_proxy,
             read_only=False, destructive=True, idempotent=False, open_world=True),
    ToolSpec("skill_list", "List skills",
             "The workspace's skills you can see (name, description, status, version). Read one's files with "
             "skill_files; a skill is instructions to follow, never code to run blindly.",
             {"status": {"type": "string", "enum": ["draft", "published", "archived", "all"],
                         "description": "Which skills (default: draft and published)."}},
             (), _skill_list),
    ToolSpec("skill_get", "Show a skill", "One skill's record: name, description, status, version, specialist.",
             {"skill": SKILL}, ("skill",), _skill_get),
    ToolSpec("skill_files", "Pull a skill's files",
             "The published bundle's files: SKILL.md and its scripts/, references/ and assets/, text files inline "
             "(`content`), larger or binary ones by size only.",
             {"skill": SKILL}, ("skill",), _skill_files),
    ToolSpec("skill_platform", "Read a platform skill",
             "A skill wsctl ships (integration-discovery, skill-authoring, vault-tokens): its files inline.",
             {"name": {"type": "string", "description": "The platform skill's name."}}, ("name",), _platform_skill),
    ToolSpec("memory_read", "Read memory",
             "The memory guide (markdown standing instructions) of the organization or your own, with the notes "
             "waiting to be folded in.", {"ownerType": OWNER}, ("ownerType",), _memory_read),
    ToolSpec("memory_propose", "Propose a memory change",
             "Queue a note for the memory agent, which folds it into the guide on its next run. Memory is never "
             "written directly; the note may be dropped or held by the agent.",
             {"ownerType": OWNER,
              "text": {"type": "string", "minLength": 1, "maxLength": 20000, "description": "The note, in markdown."},
              "section": {"type": "string", "maxLength": 200, "description": "The guide's section it belongs in."}},
             ("ownerType", "text"), _memory_propose, read_only=False, idempotent=False),
    ToolSpec("specialist_list", "List specialists",
             "The specialists (projects) you can access, with your role in each.", {}, (), _specialist_list),
    ToolSpec("specialist_get", "Show a specialist",
             "One specialist: its record, its memory document and its workflows, apps and skills.",
             {"specialist": SPECIALIST}, ("specialist",), _specialist_get),
    ToolSpec("specialist_files", "List a specialist's files",
             "The shared files of one specialist (path, size, sha256, updatedAt).",
             {"specialist": SPECIALIST}, ("specialist",), _specialist_files),
    ToolSpec("trigger_list", "List trigger providers",
             "The trigger providers (webhook, cron, poll) that can start a workflow.",
             {"query": {"type": "string", "description": "Only providers whose name, service or description match."}},
             (), _trigger_list),
]
BY_NAME = {t.name: t for t in TOOLS}


def run_tool(client: Client, name: str, args: dict | None) -> Any:
    """The tool's JSON answer; ApiError for a refusal (unknown tool: 404 not_found)."""
    spec = BY_NAME.get(name)
    if spec is None:
        raise ApiError("not_found", f"No tool named '{name}'; list them with tools/list.")
    return spec.run(client, checked(spec, args))
