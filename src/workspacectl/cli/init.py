"""`wsctl init`: make a workspace and sign the local profile in as its owner."""
from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated, Optional

import typer

from workspacectl.cli import config
from workspacectl.cli.context import state
from workspacectl.cli.output import JsonOpt, emit, info
from workspacectl.cli.paths import default_workspace


def init(
    ctx: typer.Context,
    workspace: Annotated[Optional[str], typer.Option("--workspace", "-w", help="Folder for the workspace, or a postgresql:// URL of an empty database (default: the embedded one).")] = None,
    name: Annotated[Optional[str], typer.Option("--name", help="Workspace name.")] = None,
    owner_name: Annotated[Optional[str], typer.Option("--owner-name", help="The owner's display name.")] = None,
    owner_email: Annotated[Optional[str], typer.Option("--owner-email", help="The owner's email.")] = None,
    json: JsonOpt = False,
):
    """Make a workspace (SQLite + blobs folder) and sign the local profile in as its owner."""
    from workspacectl.engine.pg_url import is_postgres_url
    from workspacectl.engine.validate import email_address
    from workspacectl.engine.workspace import workspace_type

    user = getpass.getuser() or "owner"
    if workspace and is_postgres_url(workspace):
        location = workspace
    else:
        location = (Path(workspace) if workspace else default_workspace()).expanduser().resolve()
    email = email_address(owner_email or f"{user}@localhost", "--owner-email")
    ws, owner = workspace_type(location).create(location, name=name or f"{user}'s workspace",
                                                owner_name=owner_name or user, owner_email=email)
    st = state(ctx)
    profile = config.profile_name(st.profile_flag, config.load())
    config.set_profile(profile, {"workspace": ws.location, "member": owner["id"]})
    if ws.location != str(location) and is_postgres_url(str(location)):
        info("The database password is not kept in config.toml; give it to later commands through "
             "PGPASSWORD or ~/.pgpass (or WSCTL_WORKSPACE with the full URL).")
    body = {"workspace": ws.shown, "name": ws.setting("name"), "profile": profile, "owner": owner}
    emit(ctx, body, lambda b: info(f"Made workspace '{b['name']}' at {b['workspace']}; "
                                   f"profile '{profile}' acts as {owner['name']} <{owner['email']}> (owner)."),
         json_flag=json)
