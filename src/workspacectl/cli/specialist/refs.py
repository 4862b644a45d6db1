"""A specialist named on the command line: its id (proj_…) as given, or the id of the one
specialist you can see with that name (cli/common/refs.py), and the API path under it. Shared by
`wsctl specialist` and its `memory` and `files` groups, and by `wsctl workflow`.
"""
from __future__ import annotations

from urllib.parse import quote

import typer


def project_id(ctx: typer.Context, ref: str) -> str:
    """An id as given, or the id of the one specialist you can see with this name (cli/common/refs.py)."""
    from workspacectl.cli.common.refs import resolve

    return resolve(ctx, "specialist", ref)


def project_path(ctx: typer.Context, ref: str, suffix: str = "") -> str:
    return f"/v1/projects/{quote(project_id(ctx, ref), safe='')}{suffix}"
