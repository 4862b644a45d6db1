"""`wsctl admin`: workspace administration (owner only)."""
from __future__ import annotations

from typing import Annotated, Any

import typer

from workspacectl.cli.common import choices
from workspacectl.cli.common.context import backend
from workspacectl.cli.common.output import JsonOpt, emit, info

app = typer.Typer(help="Workspace administration (key rotation, copying a workspace).", no_args_is_help=True)


@app.command("rotate-key")
def rotate_key(
    ctx: typer.Context,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    json: JsonOpt = False,
) -> None:
    """Re-encrypt every stored secret under a new workspace key, in one transaction.

    \b
    Examples:
      wsctl admin rotate-key --yes
    """
    from workspacectl.cli.common.output import confirm_or_refuse

    confirm_or_refuse("Re-encrypt every credential and OAuth client secret under a new workspace key?", yes)
    body = backend(ctx).request("POST", "/v1/admin/rotate-key")

    def render(b: Any) -> None:
        info(f"Re-encrypted {b.get('credentials', 0)} credential(s) and {b.get('oauthClients', 0)} OAuth client "
             f"secret(s) under a new workspace key (kept in the {b.get('keySource', 'key store')}).")

    emit(ctx, body, render, json_flag=json)


@app.command("copy-workspace")
def copy_workspace(
    ctx: typer.Context,
    source: Annotated[str, typer.Argument(click_type=choices.local_dir(), help="The workspace to copy: a folder or a postgresql:// URL.")],
    target: Annotated[str, typer.Argument(click_type=choices.local_dir(), help="An empty folder or an empty PostgreSQL database (postgresql:// URL).")],
    json: JsonOpt = False,
) -> None:
    """Copy every row and blob of a workspace into an empty one, folder or PostgreSQL, and verify it.

    Secrets are copied sealed, under the same key: a PostgreSQL target needs that key given
    (WSCTL_MASTER_KEY or WSCTL_MASTER_KEY_FILE) here and on every server of it. Stop the
    source's servers first. Exit codes: 5 no source, 6 target not empty, 7 same workspace twice,
    3 the target cannot reach the key, 1 verification failed (nothing is left in the target).

    \b
    Examples:
      wsctl admin copy-workspace ~/acme postgresql://localhost/acme
      wsctl admin copy-workspace ~/acme ~/acme-copy
    """
    from workspacectl.backend.local import copy_workspace as copy
    from workspacectl.cli.common.output import human_size, phases

    with phases("Copying the workspace") as progress:
        body = copy(source, target, progress)

    def render(b: Any) -> None:
        info(f"Copied {b['rows']} rows of {len(b['tables'])} tables and {b['blobs']} blobs "
             f"({human_size(b['blobBytes'])}) from {b['source']} to {b['target']}; counts and checksums verified. "
             f"Use it with WSCTL_WORKSPACE={b['target']} or `wsctl serve --workspace {b['target']}`.")

    emit(ctx, body, render, json_flag=json)
