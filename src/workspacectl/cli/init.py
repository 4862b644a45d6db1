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
    workspace: Annotated[Optional[Path], typer.Option("--workspace", "-w", help="Folder for the workspace (default: the embedded one).")] = None,
    name: Annotated[Optional[str], typer.Option("--name", help="Workspace name.")] = None,
    owner_name: Annotated[Optional[str], typer.Option("--owner-name", help="The owner's display name.")] = None,
    owner_email: Annotated[Optional[str], typer.Option("--owner-email", help="The owner's email.")] = None,
    json: JsonOpt = False,
):
    """Make a workspace (SQLite + blobs folder) and sign the local profile in as its owner."""
    from workspacectl.backend.local import create_workspace

    user = getpass.getuser() or "owner"
    path = (workspace or default_workspace()).expanduser().resolve()
    made = create_workspace(path, name or f"{user}'s workspace", owner_name or user,
                            owner_email or f"{user}@localhost", email_flag="--owner-email")
    owner = made["owner"]
    st = state(ctx)
    profile = config.profile_name(st.profile_flag, config.load())
    config.set_profile(profile, {"workspace": made["workspace"], "member": owner["id"]})
    body = {"workspace": made["workspace"], "name": made["name"], "profile": profile, "owner": owner}
    emit(ctx, body, lambda b: info(f"Made workspace '{b['name']}' at {b['workspace']}; "
                                   f"profile '{profile}' acts as {owner['name']} <{owner['email']}> (owner)."),
         json_flag=json)
