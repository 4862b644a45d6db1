"""`wsctl specialist`: projects (called specialists here) that hold workflows, apps, skills and files.

A specialist is named by its id (proj_…) or by its exact name when that is unique among those
you can see. `memory` lives in memory.py, `files` in files.py (beside this module).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

import typer

from workspacectl.cli.common import choices
from workspacectl.cli.common.context import all_pages, backend
from workspacectl.cli.common.output import JsonOpt, confirm_or_refuse, emit, fields, info, table
from workspacectl.cli.specialist.refs import project_id, project_path
from workspacectl.errors import ApiError

app = typer.Typer(help="Specialists (projects): workflows, apps, skills and files.", no_args_is_help=True)

SpecArg = Annotated[str, typer.Argument(metavar="ID", click_type=choices.specialist(), help="Specialist id (proj_…) or its name.")]
LIST_COLUMNS = [("id", "ID"), ("name", "NAME"), ("role", "ROLE"), ("shared", "SHARED"), ("workflows", "WORKFLOWS"),
                ("apps", "APPS"), ("skills", "SKILLS"), ("files", "FILES")]
RESOURCE_COLUMNS = [("id", "ID"), ("type", "TYPE"), ("name", "NAME"), ("lastUsedAt", "LAST USED")]
CONNECTION_COLUMNS = [("id", "ID"), ("service", "SERVICE"), ("name", "NAME"), ("status", "STATUS"), ("usedBy", "USED BY")]


def _row(p: dict) -> dict:
    return {**p, "shared": "yes" if p["isShared"] else "", **p["counts"]}


def show_project(body: dict) -> None:
    p, m = body["project"], body["memory"]
    who = ", ".join(f"{g.get('displayName') or g.get('membershipId')} ({g['role']})" if not g.get("workspace")
                    else f"workspace ({g['role']})" for g in p.get("grants", []))
    fields([("id", p["id"]), ("name", p["name"]), ("description", p.get("description")), ("icon", p.get("icon")),
            ("role", p["role"]), ("owner", p["ownerMembershipId"]), ("shared with", who or "nobody"),
            ("counts", ", ".join(f"{k} {n}" for k, n in p["counts"].items())),
            ("memory", f"version {m['version']}, {len(m['text'])} characters, updated {m['updatedAt']}")])
    if body["resources"]:
        print()
        table(body["resources"], RESOURCE_COLUMNS)


def _values(name: str | None, description: str | None, icon: str | None, color: str | None, head: str | None,
            shirt: str | None, hand: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {k: v for k, v in (("name", name), ("description", description), ("icon", icon),
                             ("workerColor", color)) if v is not None}
    acc = {k: v for k, v in (("head", head), ("shirt", shirt), ("hand", hand)) if v is not None}
    if acc:
        out["workerAccessories"] = {k: (acc.get(k) or None) for k in ("head", "shirt", "hand")}
    return out


DescOpt = Annotated[str | None, typer.Option("--description", "-d", help="What the specialist is for.")]
IconOpt = Annotated[str | None, typer.Option("--icon", help="An emoji.")]
ColorOpt = Annotated[str | None, typer.Option("--color", help="The worker's colour name.")]
HeadOpt = Annotated[str | None, typer.Option("--head", help="Worker accessory on the head ('' for none).")]
ShirtOpt = Annotated[str | None, typer.Option("--shirt", help="Worker shirt ('' for none).")]
HandOpt = Annotated[str | None, typer.Option("--hand", help="Worker accessory in the hand ('' for none).")]


@app.command("list")
def list_(ctx: typer.Context, json: JsonOpt = False) -> None:
    """List the specialists you own or were granted."""
    body = all_pages(ctx, "/v1/projects", "projects")
    emit(ctx, body, lambda b: table([_row(p) for p in b["projects"]], LIST_COLUMNS, "No specialists."),
         json_flag=json)


@app.command("create")
def create(ctx: typer.Context, name: Annotated[str, typer.Argument(help="The specialist's name.")],
           description: DescOpt = None, icon: IconOpt = None, color: ColorOpt = None, head: HeadOpt = None,
           shirt: ShirtOpt = None, hand: HandOpt = None, json: JsonOpt = False) -> None:
    """Create a specialist; you become its owner.

    \b
    Examples:
      wsctl specialist create ops-desk --description 'Runs the on-call desk'
    """
    body = backend(ctx).request("POST", "/v1/projects",
                                body=_values(name, description, icon, color, head, shirt, hand))
    emit(ctx, body, show_project, json_flag=json)


@app.command("show")
def show(ctx: typer.Context, ref: SpecArg, json: JsonOpt = False) -> None:
    """Show a specialist: role, sharing, counts, memory version and what it holds.

    \b
    Examples:
      wsctl specialist show ops-desk
    """
    emit(ctx, backend(ctx).request("GET", project_path(ctx, ref)), show_project, json_flag=json)


@app.command("edit")
def edit(ctx: typer.Context, ref: SpecArg,
         name: Annotated[str | None, typer.Option("--name", "-n", help="New name.")] = None,
         description: DescOpt = None, icon: IconOpt = None, color: ColorOpt = None, head: HeadOpt = None,
         shirt: ShirtOpt = None, hand: HandOpt = None, json: JsonOpt = False) -> None:
    """Rename, describe, or change the icon or figure of a specialist (needs edit access).

    \b
    Examples:
      wsctl specialist edit ops-desk --name on-call --description 'Pages and triage'
    """
    values = _values(name, description, icon, color, head, shirt, hand)
    if not values:
        raise ApiError("invalid_request", "Nothing to change: pass --name, --description, --icon, --color, "
                                          "--head, --shirt or --hand.")
    body = backend(ctx).request("PATCH", project_path(ctx, ref), body=values)
    emit(ctx, body, show_project, json_flag=json)


@app.command("delete")
def delete(ctx: typer.Context, ref: SpecArg,
           yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
           json: JsonOpt = False) -> None:
    """Delete a specialist (owner only): its files go; workflows, apps and skills return to their creators.

    \b
    Examples:
      wsctl specialist delete ops-desk --yes
    """
    path = project_path(ctx, ref)
    confirm_or_refuse(f"Delete specialist {ref} and its files? Workflows, apps and skills go back to their "
                      "creators.", yes)
    body = backend(ctx).request("POST", path + "/delete")
    emit(ctx, body, lambda b: info(f"Deleted {b['id']}: {b['returnedResources']} resources returned to their "
                                   f"creators, {b['deletedFiles']} files removed."), json_flag=json)


@app.command("connections")
def connections(ctx: typer.Context, ref: SpecArg, json: JsonOpt = False) -> None:
    """List the credentials the specialist's workflows and apps are wired to (no secrets).

    \b
    Examples:
      wsctl specialist connections ops-desk
    """
    body = all_pages(ctx, project_path(ctx, ref, "/connections"), "connections")

    def render(b: Any) -> None:
        rows = [{**c, "usedBy": [u["id"] for u in c["usedBy"]]} for c in b["connections"]]
        table(rows, CONNECTION_COLUMNS, "No connections: no workflow here names a credential.")

    emit(ctx, body, render, json_flag=json)


@app.command("pin")
def pin(ctx: typer.Context,
        resource: Annotated[str, typer.Argument(metavar="RESOURCE", help="Workflow, app or skill: its id (wf_…, skl_…) or its name.")],
        into: Annotated[str | None, typer.Option("--into", metavar="SPECIALIST", click_type=choices.specialist(), help="The specialist to move it into (id or name).")] = None,
        unpin: Annotated[bool, typer.Option("--unpin", help="Return it to its creator instead.")] = False,
        json: JsonOpt = False) -> None:
    """Move a workflow, app or skill into a specialist (it leaves any other one).

    \b
    Examples:
      wsctl specialist pin triage-flow --into ops-desk
      wsctl specialist pin pdf-forms --unpin
    """
    if bool(into) == unpin:
        raise ApiError("invalid_request", "Give exactly one of --into ID or --unpin.")
    target = project_id(ctx, into) if into else None   # exactly one of --into and --unpin: checked above
    body = backend(ctx).request("POST", "/v1/projects/pin", body={"resourceId": resource, "projectId": target})
    emit(ctx, body, lambda b: info(f"{b['resource']['type'].capitalize()} {b['resource']['id']} is now in "
                                   f"{b['projectId'] or 'no specialist (back with its creator)'}."), json_flag=json)


@app.command("grant")
def grant(ctx: typer.Context, ref: SpecArg,
          role: Annotated[Literal["editor", "viewer", "none"], typer.Option("--role", help="editor, viewer, or none to remove the grant.")],
          member: Annotated[str | None, typer.Option("--member", "-m", click_type=choices.member(),
                                                        help="Member id, email or name.")] = None,
          workspace: Annotated[bool, typer.Option("--workspace", help="Grant the whole workspace.")] = False,
          json: JsonOpt = False) -> None:
    """Give a member or the whole workspace editor or viewer access (owner only).

    \b
    Examples:
      wsctl specialist grant ops-desk --member bob@example.com --role editor
      wsctl specialist grant ops-desk --workspace --role viewer
    """
    if bool(member) == workspace:
        raise ApiError("invalid_request", "Give exactly one of --member M or --workspace.")
    if role not in ("editor", "viewer", "none"):
        raise ApiError("invalid_request", "--role must be editor, viewer or none.")
    from workspacectl.cli.common.refs import resolve

    who = {"membershipId": resolve(ctx, "member", member)} if member else {"workspace": True}   # one of them: above
    body = backend(ctx).request("PUT", project_path(ctx, ref, "/grants"),
                                body={**who, "role": None if role == "none" else role})
    emit(ctx, body, show_project, json_flag=json)


from workspacectl.cli.specialist.memory import app as memory_app  # noqa: E402

app.add_typer(memory_app, name="memory", help="The specialist's own memory document, written by version.")

from workspacectl.cli.specialist.files import app as files_app  # noqa: E402

app.add_typer(files_app, name="files", help="Shared files of a specialist.")
