"""`wsctl members`: list, add, and make login codes."""
from __future__ import annotations

from typing import Annotated, Any, Literal

import typer

from workspacectl.cli.common import choices
from workspacectl.cli.common.context import backend
from workspacectl.cli.common.output import JsonOpt, emit, fields, info, list_table

app = typer.Typer(no_args_is_help=True)

COLUMNS = [("id", "ID"), ("name", "NAME"), ("email", "EMAIL"), ("role", "ROLE"), ("createdAt", "CREATED")]


def member_path(ref: str) -> str:
    from urllib.parse import quote

    return f"/v1/members/{quote(ref, safe='')}"


@app.command("list")
def list_(ctx: typer.Context, json: JsonOpt = False) -> None:
    """List the workspace's members."""
    list_table(ctx, "/v1/members", "members", COLUMNS, "No members.", json)


@app.command("add")
def add(
    ctx: typer.Context,
    email: Annotated[str, typer.Argument(help="The new member's email.")],
    name: Annotated[str, typer.Option("--name", help="Display name.")] = "",
    role: Annotated[Literal["owner", "admin", "member", "guest"], typer.Option("--role", help="owner, admin, member or guest.")] = "member",
    json: JsonOpt = False,
) -> None:
    """Add a member (owner or admin). Then give them a login code with `wsctl members login-code`.

    \b
    Examples:
      wsctl members add bob@example.com --name Bob
      wsctl members add ci@example.com --role guest
    """
    body = backend(ctx).request("POST", "/v1/members", body={"email": email, "name": name or email, "role": role})

    def render(m: Any) -> None:
        fields([("id", m["id"]), ("name", m["name"]), ("email", m["email"]), ("role", m["role"])])
        info(f"Next: `wsctl members login-code {m['email']}` and give them the code.")

    emit(ctx, body, render, json_flag=json)


@app.command("login-code")
def login_code(
    ctx: typer.Context,
    member: Annotated[str, typer.Argument(metavar="MEMBER", click_type=choices.member(), help="Member id, email or name.")],
    json: JsonOpt = False,
) -> None:
    """Make a one-time login code (15 minutes) for a member to run `wsctl auth login`.

    \b
    Examples:
      wsctl members login-code bob@example.com  # give Bob the code for `wsctl auth login`
    """
    from workspacectl.cli.common.refs import resolve

    body = backend(ctx).request("POST", member_path(resolve(ctx, "member", member)) + "/login-codes")

    def render(b: Any) -> None:
        print(b["code"])
        info(f"Single use, valid until {b['expiresAt']}. They run: wsctl auth login --server URL")

    emit(ctx, body, render, json_flag=json)
