"""`wsctl init`: make a workspace and sign the local profile in as its owner."""
from __future__ import annotations

import getpass
from pathlib import Path
from typing import Annotated

import typer

from workspacectl.cli.common import config
from workspacectl.cli.common.context import state
from workspacectl.cli.common.output import JsonOpt, emit, info
from workspacectl.cli.common.paths import default_workspace


def init(
    ctx: typer.Context,
    workspace: Annotated[Path | None, typer.Option("--workspace", "-w", help="Folder for the workspace, or a postgresql:// URL of an empty database (default: the embedded one).")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Workspace name.")] = None,
    owner_name: Annotated[str | None, typer.Option("--owner-name", metavar="NAME", help="The owner's display name.")] = None,
    owner_email: Annotated[str | None, typer.Option("--owner-email", metavar="EMAIL", help="The owner's email.")] = None,
    activate: Annotated[bool, typer.Option("--activate/--no-activate", help="Make its profile the active one (the default, as `gh auth login` makes the new host active); --no-activate keeps the one you use.")] = True,
    json: JsonOpt = False,
) -> None:
    """Make a workspace (SQLite + blobs folder) and a local profile that acts as its owner.

    The profile is the one named by --profile (or WSCTL_PROFILE); else the active profile when it
    is new or already points here; else a new profile named after the folder: another workspace
    never repoints a profile you have. The profile it wrote becomes the active one (the next
    commands act on the workspace just made) and it says which was active before; --no-activate
    leaves the active profile as it was.

    \b
    Examples:
      wsctl init
      wsctl init --workspace ~/acme --name Acme --owner-email alice@example.com
    """
    from workspacectl.backend.local import create_workspace
    from workspacectl.cli.common.context import location_arg
    from workspacectl.formats.workspace_url import is_postgres_url

    user = getpass.getuser() or "owner"
    given = location_arg(workspace)
    path: Path | str
    if given and is_postgres_url(given):
        path = given
    else:
        path = (Path(given) if given else default_workspace()).expanduser().resolve()
    made = create_workspace(path, name or f"{user}'s workspace", owner_name or user,
                            owner_email or f"{user}@localhost", email_flag="--owner-email")
    owner = made["owner"]
    if made["workspace"] != str(path):
        info("The database password is not kept in config.toml; give it to later commands through "
             "PGPASSWORD or ~/.pgpass (or WSCTL_WORKSPACE with the full URL).")
    profile, before = choose_profile(state(ctx).profile_flag, Path(made["workspace"]))
    previous = config.load().get("profile")
    active = config.set_profile(profile, {"workspace": made["workspace"], "member": owner["id"]}, make_default=activate)
    body = {"workspace": made["workspace"], "name": made["name"], "profile": profile, "active": active,
            "owner": owner}
    if before is None:
        said = f"new profile '{profile}'"
    elif before.get("workspace") and Path(before["workspace"]) == Path(made["workspace"]):
        said = f"profile '{profile}'"
    else:
        said = f"profile '{profile}' (which pointed at {before.get('server') or before.get('workspace')}) now"

    emit(ctx, body, lambda b: info(f"Made workspace '{b['name']}' at {b['workspace']}; {said} acts as "
                                   f"{owner['name']} <{owner['email']}> (owner).{switched(profile, active, previous)}"),
         json_flag=json)


def switched(name: str, active: bool, was: str | None) -> str:
    """Whether the profile init wrote is active, and which one was before (how to go back)."""
    from workspacectl.cli.profile.commands import how_to_use

    if active and was and was != name:
        return f" It is now the active profile (it was '{was}': `wsctl profile use {was}` switches back)."
    return how_to_use(name, active)


def choose_profile(flag: str | None, path: Path) -> tuple[str, dict | None]:
    """(the profile a new workspace at `path` goes into, what that profile held before or None)."""
    import os
    import re

    data = config.load()
    profiles = data.get("profiles", {})
    named = flag or os.environ.get("WSCTL_PROFILE")
    if named:
        return named, profiles.get(named)
    active = data.get("profile") or "default"
    current = profiles.get(active)
    if current is None or (current.get("workspace") and Path(current["workspace"]) == path):
        return active, current
    base = re.sub(r"[^a-z0-9._-]+", "-", path.name.lower()).strip("-._") or "workspace"
    name, n = base, 1
    while name in profiles:
        n += 1
        name = f"{base}-{n}"
    return name, None
