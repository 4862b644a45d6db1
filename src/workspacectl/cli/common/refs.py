"""The one resolver for what a command names: an id, or a name (issue 12). The rule itself is
formats/refs.py, shared with the agent door (`wsctl mcp`); this module looks names up through the
command's backend."""
from __future__ import annotations

from typing import TYPE_CHECKING

from workspacectl.formats.refs import KINDS, MAX_CANDIDATES, Kind, is_id, resolve_with

if TYPE_CHECKING:
    import typer

    from workspacectl.backend.base import Backend

__all__ = ["KINDS", "MAX_CANDIDATES", "Kind", "resolve", "resolve_all"]


def resolve(ctx: typer.Context, kind: str, ref: str, be: Backend | None = None) -> str:
    """The id `ref` names (formats/refs.py), looked up through the command's backend (or `be`)."""
    return ref if is_id(kind, ref) else resolve_with((be or _backend(ctx)).request, kind, ref)


def resolve_all(ctx: typer.Context, kind: str, refs: list[str]) -> list[str]:
    """Each ref resolved, duplicates (an id and its name) kept once, in order."""
    return list(dict.fromkeys(resolve(ctx, kind, r) for r in refs))


def _backend(ctx: typer.Context) -> Backend:
    from workspacectl.cli.common.context import backend

    return backend(ctx)
