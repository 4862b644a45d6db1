"""`wsctl workflow`: import a workflow.json, list and show workflows and apps, configure a trigger."""
from __future__ import annotations

import json as jsonlib
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import quote

import typer

from workspacectl.cli.common import choices
from workspacectl.cli.common.context import backend
from workspacectl.cli.common.output import JsonOpt, emit, fields, info, list_table, table
from workspacectl.errors import ApiError

app = typer.Typer(help="Workflows and apps.", no_args_is_help=True)

WfArg = Annotated[str, typer.Argument(metavar="WORKFLOW", click_type=choices.workflow(),
                                      help="Workflow or app id (wf_…) or name.")]
LIST_COLUMNS = [("id", "ID"), ("kind", "KIND"), ("name", "NAME"), ("projectId", "SPECIALIST"), ("lastUsedAt", "LAST USED")]
TRIGGER_COLUMNS = [("nodeId", "NODE"), ("triggerId", "TRIGGER"), ("ready", "READY"), ("credentialId", "CREDENTIAL"),
                   ("missing", "MISSING")]


def wf_path(wid: str, suffix: str = "") -> str:
    return f"/v1/workflows/{quote(wid, safe='')}{suffix}"


def workflow_id(ctx: typer.Context, ref: str) -> str:
    """The id a word names: an id as given, or the id of the workflow or app with that name (cli/common/refs.py)."""
    from workspacectl.cli.common.refs import resolve

    return resolve(ctx, "workflow", ref)


def show_workflow(w: dict) -> None:
    fields([("id", w["id"]), ("kind", w["kind"]), ("name", w["name"]), ("description", w.get("description")),
            ("specialist", w.get("projectId") or "none (with its creator)"), ("created by", w["createdBy"]),
            ("can edit", "yes" if w["canEdit"] else "no"), ("nodes", len(w["nodes"]))])
    if w["triggers"]:
        print()
        table([{**t, "ready": "yes" if t["ready"] else "no"} for t in w["triggers"]], TRIGGER_COLUMNS)


@app.command("import")
def import_(ctx: typer.Context,
            file: Annotated[Path, typer.Argument(metavar="FILE", help="A workflow.json: {name, kind, description, nodes}; a node's credentialId may name a credential (as `wsctl vault list` shows it) or give its id.")],
            into: Annotated[str | None, typer.Option("--into", metavar="SPECIALIST", click_type=choices.specialist(), help="Put it straight into this specialist (id or name).")] = None,
            json: JsonOpt = False) -> None:
    """Import a workflow or app from its workflow.json.

    \b
    Examples:
      wsctl workflow import workflow.json
      wsctl workflow import workflow.json --into ops-desk
    """
    try:
        doc = jsonlib.loads(file.read_text(encoding="utf-8"))
    except OSError as e:
        raise ApiError("invalid_request", f"Cannot read {file}: {e.strerror}; give the path of a workflow.json "
                       "({{name, kind, nodes}}).") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ApiError("invalid_request", f"{file} is not valid JSON: {e}. Fix the file and import it again.") from None
    if not isinstance(doc, dict):
        raise ApiError("invalid_request", f"{file} must hold a JSON object {{name, kind, description, nodes}}.")
    doc = with_credential_ids(ctx, doc)
    if into:
        from workspacectl.cli.specialist.refs import project_id

        doc = {**doc, "projectId": project_id(ctx, into)}
    body = backend(ctx).request("POST", "/v1/workflows", body=doc)

    def render(w: Any) -> None:
        print(w["id"])
        waiting = [t["nodeId"] for t in w["triggers"] if not t["ready"]]
        if waiting:
            info(f"Trigger nodes not ready yet: {', '.join(waiting)}. Set them with "
                 f"`wsctl workflow configure {w['id']} NODE --credential CRED --input NAME=VALUE`.")

    emit(ctx, body, render, json_flag=json)


def with_credential_ids(ctx: typer.Context, doc: dict) -> dict:
    """The document with each node's `credentialId` that is a credential's name (as `vault list`
    shows it) replaced by its id: the API takes ids, a file written by hand names credentials."""
    from workspacectl.cli.common.refs import KINDS, resolve

    nodes = doc.get("nodes")
    if not isinstance(nodes, list):
        return doc
    out, ids = [], {}
    for node in nodes:
        ref = node.get("credentialId") if isinstance(node, dict) else None
        if isinstance(ref, str) and ref and not ref.startswith(KINDS["credential"].prefix):
            if ref not in ids:
                try:
                    ids[ref] = resolve(ctx, "credential", ref)
                except ApiError as e:
                    raise ApiError(e.code, f"Node '{node.get('id')}': {e.message}", e.detail) from None
            node = {**node, "credentialId": ids[ref]}
        out.append(node)
    return {**doc, "nodes": out}


@app.command("list")
def list_(ctx: typer.Context,
          kind: Annotated[Literal["workflow", "app"] | None, typer.Option("--kind", help="workflow or app.")] = None,
          specialist: Annotated[str | None, typer.Option("--specialist", help="Only those in this specialist.")] = None,
          json: JsonOpt = False) -> None:
    """List the workflows and apps you made or can reach through a specialist.

    \b
    Examples:
      wsctl workflow list --kind app --specialist ops-desk
    """
    query: dict[str, str] = {}
    if kind:
        query["kind"] = kind
    if specialist:
        from workspacectl.cli.specialist.refs import project_id

        query["projectId"] = project_id(ctx, specialist)
    list_table(ctx, "/v1/workflows", "workflows", LIST_COLUMNS, "No workflows or apps.", json, query=query)


@app.command("show")
def show(ctx: typer.Context, wid: WfArg, json: JsonOpt = False) -> None:
    """Show a workflow or app and whether each trigger node is ready.

    \b
    Examples:
      wsctl workflow show triage-flow
    """
    emit(ctx, backend(ctx).request("GET", wf_path(workflow_id(ctx, wid))), show_workflow, json_flag=json)


@app.command("configure")
def configure(ctx: typer.Context, wid: WfArg,
              node: Annotated[str, typer.Argument(metavar="NODE", help="The trigger node's id.")],
              credential: Annotated[str | None, typer.Option("--credential", click_type=choices.credential(),
                                                                help="Credential id (cred_…) or name it polls with.")] = None,
              inputs: Annotated[list[str] | None, typer.Option("--input", metavar="NAME=VALUE", help="An input of the trigger node; repeatable.")] = None,
              json: JsonOpt = False) -> None:
    """Set a trigger node's credential and inputs (replaces both).

    \b
    Examples:
      wsctl workflow configure triage-flow trigger --credential github --input repo=acme/app
    """
    values = {}
    for item in inputs or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ApiError("invalid_request", f"--input must read NAME=VALUE, not '{item}'.")
        values[name] = value
    if credential:
        from workspacectl.cli.common.refs import resolve

        credential = resolve(ctx, "credential", credential)
    body = backend(ctx).request("PUT", wf_path(workflow_id(ctx, wid), f"/triggers/{quote(node, safe='')}/config"),
                                body={"credentialId": credential, "inputs": values if inputs else None})
    emit(ctx, body, show_workflow, json_flag=json)
