"""The credential routes' paths and the one token request, shared by `wsctl vault` (commands.py) and
`vault inject` (inject.py), and below both: it imports neither.
"""
from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from workspacectl.cli.common.context import backend

if TYPE_CHECKING:
    import typer


def seg(value: str) -> str:
    return quote(value, safe="")


def cred_path(cred_id: str, suffix: str = "") -> str:
    return f"/v1/credentials/{seg(cred_id)}{suffix}"


def issue(ctx: typer.Context, cred_id: str, reason: str, form: str = "json", dry_run: bool = False) -> dict:
    """One token request. `form` tells the engine how we will write it (workspacectl/formats/env_text.py), so a
    body we could not write exactly is refused before it is issued or logged."""
    body = {"reason": reason, "format": form, **({"dryRun": True} if dry_run else {})}
    return backend(ctx).request("POST", cred_path(cred_id, "/token"), body=body)
