"""Workflows and apps: import a workflow.json, list, read, configure a poll trigger node.

A workflow is seen by its creator and by members with access to the project holding it
(grants flow down: viewer reads, editor edits). Trigger nodes name a `triggerId` of the trigger
providers; any node may name a `credentialId` the caller may use (owner or `user` share).
A poll trigger node is `ready` once its credential (when the provider needs one) and every
required input are set, through the workflow.json or PUT …/triggers/:nodeId/config.
"""
from __future__ import annotations

import json
import math
import sqlite3
from typing import TYPE_CHECKING, Any

from workspacectl.engine import validate as v
from workspacectl.engine.db import transaction
from workspacectl.engine.pagination import name_filter, page, page_args
from workspacectl.engine.projects.routes import KINDS, require_edit
from workspacectl.engine.projects.routes import load as load_project
from workspacectl.engine.registry import Ctx, Response, route
from workspacectl.engine.schema_blocks import (
    NAMED_PAGE,
    NOT_BLANK,
    STR,
    array,
    nullable,
    obj,
    page_of,
    query,
    ref,
    text,
)
from workspacectl.engine.store import catalog as catalog_store
from workspacectl.engine.store import workflows as store
from workspacectl.engine.vault.credentials import visible_credential
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.db.conn import Conn

MAX_NODES = 500
MAX_NODES_JSON = 1_000_000
MAX_INPUTS = 100


# --- views -----------------------------------------------------------------------------------

def can_edit(row: sqlite3.Row) -> bool:
    return row["access"] in ("creator", "owner", "editor")


def summary_json(row: sqlite3.Row) -> dict:
    return {"id": row["id"], "kind": row["kind"], "name": row["name"], "description": row["description"],
            "projectId": row["project_id"], "createdBy": row["created_by"], "canEdit": can_edit(row),
            "createdAt": row["created_at"], "updatedAt": row["updated_at"], "lastUsedAt": row["last_used_at"]}


def trigger_state(node: dict, provider: sqlite3.Row | None) -> dict:
    """{nodeId, triggerId, type, credentialId, inputs, ready, missing} of one trigger node."""
    missing: list[str] = []
    if provider is None:
        missing.append("triggerProvider")
    elif provider["type"] == "poll":
        if provider["requires_credential"] and not node.get("credentialId"):
            missing.append("credentialId")
        inputs = node.get("inputs")
        if not isinstance(inputs, dict):
            missing.append("inputs")
        else:
            wanted = json.loads(provider["config_json"] or "{}").get("inputs") or []
            missing += [f"inputs.{i['name']}" for i in wanted if isinstance(i, dict) and i.get("required")
                        and inputs.get(i.get("name")) in (None, "")]
    return {"nodeId": node["id"], "triggerId": node["triggerId"], "type": provider["type"] if provider else None,
            "credentialId": node.get("credentialId"), "inputs": node.get("inputs"),
            "ready": not missing, "missing": missing}


def detail_json(conn: Conn, row: sqlite3.Row) -> dict:
    out = summary_json(row)
    nodes, triggers, providers = [], [], {}
    for node in json.loads(row["nodes"]):
        node = dict(node)
        if "triggerId" in node:
            tid = node["triggerId"]
            if tid not in providers:
                providers[tid] = catalog_store.get_trigger(conn, tid)
            state = trigger_state(node, providers[tid])
            node["ready"] = state["ready"]
            triggers.append(state)
        nodes.append(node)
    out["nodes"], out["triggers"] = nodes, triggers
    return out


# --- validation ------------------------------------------------------------------------------

def usable_credential(conn: Conn, cred_id: object, me: str, where: str = "") -> sqlite3.Row:
    """The credential if the caller may use it; 404 if unseen, 403 if shared as viewer only.
    The API takes ids: a name given here is not found, and the message says where the id is
    (`wsctl workflow import` resolves names in the file before it sends it)."""
    if not isinstance(cred_id, str) or not 1 <= len(cred_id) <= 200:
        raise v.bad(f"{where}'credentialId' must be a credential id (a string).")
    try:
        row = visible_credential(conn, cred_id, me)
    except ApiError as e:
        if e.code != "not_found" or cred_id.startswith("cred_"):
            raise
        raise ApiError("not_found", f"{where}no credential with id '{cred_id[:100]}': 'credentialId' takes a credential's "
                       "id (cred_…), not its name. `wsctl vault list` shows the ids; `wsctl workflow import` "
                       "turns names into ids for you.") from None
    if row["access"] == "viewer":
        raise ApiError("forbidden", f"Credential {cred_id} is shared with you as viewer only; "
                                    "ask its owner for user access or wire one of your own.")
    return row


def check_service(provider: sqlite3.Row | None, cred: sqlite3.Row) -> None:
    """A trigger that watches a service is wired to a credential of that service."""
    if provider is not None and provider["service"] and cred["service"] != provider["service"]:
        raise v.bad(f"Trigger {provider['id']} watches {provider['service']}; "
                    f"wire a {provider['service']} credential, not a {cred['service']} one.")


def check_inputs(value: Any, where: str) -> dict:
    if not isinstance(value, dict) or len(value) > MAX_INPUTS or not all(
            isinstance(k, str) and len(k) <= 200 and (x is None or isinstance(x, (str, int, bool))
                                                      or (isinstance(x, float) and math.isfinite(x)))
            and not (isinstance(x, str) and len(x) > 10_000) for k, x in value.items()):
        raise v.bad(f"{where}'inputs' must be an object of at most {MAX_INPUTS} names with text, number, "
                    "true/false or null values.")
    return value


def check_nodes(conn: Conn, nodes: Any, me: str) -> list[dict]:
    if not isinstance(nodes, list) or len(nodes) > MAX_NODES:
        raise v.bad(f"'nodes' must be a list of at most {MAX_NODES} node objects.")
    try:
        size = len(json.dumps(nodes, allow_nan=False))
    except (ValueError, RecursionError):
        raise v.bad("'nodes' must be plain JSON: no NaN or Infinity, and not nested too deep.") from None
    if size > MAX_NODES_JSON:
        raise v.bad(f"'nodes' must be at most {MAX_NODES_JSON} bytes of JSON; split the workflow.")
    seen: set[str] = set()
    for i, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise v.bad(f"nodes[{i}] must be an object.")
        nid = node.get("id")
        if not isinstance(nid, str) or not 1 <= len(nid) <= 100 or nid in seen:
            raise v.bad(f"nodes[{i}] needs an 'id': a string of 1 to 100 characters, unique in the workflow.")
        seen.add(nid)
        where = f"Node '{nid}': "
        if "type" in node and not (isinstance(node["type"], str) and len(node["type"]) <= 100):
            raise v.bad(f"{where}'type' must be a string of at most 100 characters.")
        if node.get("type") == "trigger" and "triggerId" not in node:
            raise v.bad(f"{where}a trigger node needs a 'triggerId'; run `wsctl trigger list`.")
        provider = None
        if "triggerId" in node:
            tid = node["triggerId"]
            provider = catalog_store.get_trigger(conn, tid) if isinstance(tid, str) and len(tid) <= 200 else None
            if provider is None:
                raise v.bad(f"{where}unknown triggerId {str(tid)[:80]!r}; run `wsctl trigger list` for the ids.")
        if node.get("credentialId") is not None:
            check_service(provider, usable_credential(conn, node["credentialId"], me, where))
        if node.get("inputs") is not None:
            check_inputs(node["inputs"], where)
    return nodes


def load(ctx: Ctx) -> sqlite3.Row:
    row = store.get_workflow(ctx.db, ctx.params["id"], ctx.caller.member_id)
    if row is None:
        raise ApiError("not_found", f"No workflow '{ctx.params['id'][:120]}' that you can see. "
                                    "Run `wsctl workflow list`.")
    return row


# --- routes ----------------------------------------------------------------------------------

# A trigger node's inputs (also in the Workflow answer, engine/openapi/components.py).
INPUTS = {"type": "object", "maxProperties": MAX_INPUTS, "propertyNames": {"maxLength": 200},
          "additionalProperties": {"type": ["string", "number", "boolean", "null"], "maxLength": 10_000},
          "description": f"At most {MAX_INPUTS} names with text, number, true/false or null values."}
_NODE_BODY = obj({
    "id": text(1, 100, description="Unique in the workflow."), "type": text(0, 100),
    "triggerId": text(1, 200, description="A trigger provider (GET /v1/triggers); required when type is trigger."),
    "credentialId": nullable(text(1, 200, description="A credential the caller may use (own or shared as user).")),
    "inputs": nullable(INPUTS)}, required=["id"], closed=False)
_WORKFLOW_BODY = obj({
    "name": text(1, 200, NOT_BLANK), "kind": text(enum=list(KINDS), description="Default workflow."),
    "description": nullable(text(0, 2000)),
    "nodes": array(_NODE_BODY, maxItems=MAX_NODES, description="At most 1 MB of JSON; may be empty."),
    "projectId": nullable(text(1, 200, description="Put it straight into this specialist (needs edit)."))},
    required=["name", "nodes"])


@route("GET", "/v1/workflows", scope="projects:manage",
       query=[query("kind", text(enum=list(KINDS)), "Only workflows or only apps."),
              query("projectId", STR, "Only those in this specialist (404 when you cannot see it)."),
              *NAMED_PAGE],
       responses={200: page_of("workflows", ref("WorkflowSummary"))},
       summary="List the workflows and apps the caller can see.")
def list_workflows(ctx: Ctx) -> dict:
    limit, after = page_args(ctx)
    kind = ctx.query.get("kind") or None
    if kind is not None and kind not in KINDS:
        raise v.bad("Query parameter 'kind' must be workflow or app.")
    pid = ctx.query.get("projectId") or None
    if pid is not None:
        load_project(ctx, pid)
    rows = store.list_workflows(ctx.db, ctx.caller.member_id, after, limit + 1, kind, pid, name_filter(ctx))
    return page("workflows", rows, limit, lambda r: r["id"], summary_json)


@route("POST", "/v1/workflows", scope="projects:manage",
       body=_WORKFLOW_BODY,
       responses={201: ref("Workflow")},
       summary="Import a workflow or app from its workflow.json.")
def create_workflow(ctx: Ctx) -> Response:
    body = v.body_dict(ctx, allow_empty=False)
    name = v.string(body, "name", max_len=200).strip()
    if not name:
        raise v.bad("'name' must not be blank.")
    values: dict[str, Any] = {"name": name, "kind": v.choice(body, "kind", KINDS, required=False, default="workflow"),
              "description": v.string(body, "description", required=False, min_len=0, max_len=2000)}
    pid = v.string(body, "projectId", required=False, max_len=200)
    if "nodes" not in body:
        raise v.bad("'nodes' is required: a list of node objects (it may be empty).")
    with transaction(ctx.db):
        values["nodes"] = check_nodes(ctx.db, body["nodes"], ctx.caller.member_id)
        if pid is not None:
            require_edit(load_project(ctx, pid))
        wid = store.insert_workflow(ctx.db, ctx.caller.member_id, values, pid)
        return Response(201, detail_json(ctx.db, store.get_workflow(ctx.db, wid, ctx.caller.member_id)))


@route("GET", "/v1/workflows/{id}", scope="projects:manage",
       responses={200: ref("Workflow")},
       summary="One workflow or app, with its nodes and trigger readiness.")
def get_workflow(ctx: Ctx) -> dict:
    """The definition; reading it is a use (a run loads it, an app is opened with it): lastUsedAt."""
    wid = load(ctx)["id"]
    with transaction(ctx.db):
        store.touch_used(ctx.db, wid)
        return detail_json(ctx.db, load(ctx))


@route("PUT", "/v1/workflows/{id}/triggers/{nodeId}/config", scope="triggers:manage",
       body=obj({"credentialId": nullable(text(1, 200)), "inputs": nullable(INPUTS)},
                description="Replaces both values of the trigger node; an absent one becomes null."),
       responses={200: ref("Workflow")},
       summary="Configure a poll trigger node: its credential and inputs.")
def put_trigger_config(ctx: Ctx) -> dict:
    body = v.body_dict(ctx, allow_empty=False)
    cred_id = body.get("credentialId")
    inputs = body.get("inputs")
    if inputs is not None:
        check_inputs(inputs, "")
    me = ctx.caller.member_id
    with transaction(ctx.db):
        row = load(ctx)
        if not can_edit(row):
            raise ApiError("forbidden", f"You can view workflow {row['id']} but not change it; "
                                        "ask for edit access to its specialist.")
        nodes = json.loads(row["nodes"])
        node = next((n for n in nodes if n.get("id") == ctx.params["nodeId"]), None)
        if node is None:
            raise ApiError("not_found", f"Workflow {row['id']} has no node '{ctx.params['nodeId'][:100]}'. "
                                        "Run `wsctl workflow show` for its node ids.")
        if "triggerId" not in node:
            raise v.bad(f"Node '{node['id']}' is not a trigger node; only trigger nodes take a config.")
        if cred_id is not None:
            check_service(catalog_store.get_trigger(ctx.db, node["triggerId"]), usable_credential(ctx.db, cred_id, me))
        node["credentialId"], node["inputs"] = cred_id, inputs
        store.set_nodes(ctx.db, row["id"], nodes)
        return detail_json(ctx.db, load(ctx))
