"""How a command names what it takes: every argument and option value has a real metavar.

Typer's own usage line reads `wsctl vault token [OPTIONS] {CREDENTIAL}` (braces for a required
argument) and a value with no metavar of its own reads `<str>`. Every command is built as a
`Command` (cli/app.py), which names each value after its parameter (`--reason REASON`, `METHOD`)
unless it declares a metavar, keeps choices listed (`<json|value|env>`), and writes the usage line
as the man pages' SYNOPSIS does: `wsctl vault token [OPTIONS] CREDENTIAL`, `[NAME]` when optional.
"""
from __future__ import annotations

from typing import Any

from typer import _click
from typer.core import TyperCommand


def is_argument(param: _click.Parameter) -> bool:
    return getattr(param, "param_type_name", "") == "argument"


def real_metavars(params: list[_click.Parameter]) -> None:
    """Give every value-taking parameter without a metavar its name (upper case) as one."""
    for p in params:
        if p.metavar is not None or not p.name or getattr(p, "is_flag", False) or getattr(p, "count", False):
            continue
        if is_argument(p):
            p.metavar = p.name.upper() + ("..." if p.nargs != 1 else "")
        elif getattr(p.type, "choices", None) is None:   # choices show as <a|b|c>
            p.metavar = p.name.upper()


class Command(TyperCommand):
    """A wsctl command: real metavars, and a usage line without braces."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        real_metavars(self.params)

    def collect_usage_pieces(self, ctx: _click.Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for p in self.get_params(ctx):
            if not is_argument(p):
                pieces.extend(p.get_usage_pieces(ctx))
                continue
            meta = p.metavar or (p.name or "").upper()
            pieces.append(meta if p.required or meta.startswith("[") else f"[{meta}]")
        return pieces
