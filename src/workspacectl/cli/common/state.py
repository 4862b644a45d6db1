"""The root callback's object (profile flag, output mode, the backend once built), kept in ctx.obj
and found from any command's context. Below context.py (which builds the backend) and scripting.py
(whose --jq switch turns JSON output on).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typer import _click

    from workspacectl.backend.base import Backend


@dataclass
class State:
    """The root callback's object, kept in ctx.obj."""

    profile_flag: str | None = None
    json: bool = False
    debug: bool = False
    _backend: Backend | None = field(default=None, repr=False)


def state(ctx: _click.Context) -> State:
    root = ctx.find_root()
    if not isinstance(root.obj, State):
        root.obj = State()
    return root.obj
