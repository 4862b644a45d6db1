"""`wsctl admin`: workspace administration (owner only)."""
from __future__ import annotations

from typing import Annotated

import typer

from workspacectl.cli.context import backend
from workspacectl.cli.output import JsonOpt, emit, info

app = typer.Typer(help="Workspace administration (key rotation).", no_args_is_help=True)


@app.command("rotate-key")
def rotate_key(
    ctx: typer.Context,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    json: JsonOpt = False,
):
    """Re-encrypt every stored secret under a new workspace key, in one transaction."""
    from workspacectl.cli.output import confirm_or_refuse

    confirm_or_refuse("Re-encrypt every credential and OAuth client secret under a new workspace key?", yes)
    body = backend(ctx).request("POST", "/v1/admin/rotate-key")

    def render(b):
        info(f"Re-encrypted {b.get('credentials', 0)} credential(s) and {b.get('oauthClients', 0)} OAuth client "
             f"secret(s) under a new workspace key (kept in the {b.get('keySource', 'key store')}).")

    emit(ctx, body, render, json_flag=json)
