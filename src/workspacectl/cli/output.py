"""Rendering: --json prints the API body exactly; a TTY gets rich tables; a pipe gets plain text.

Also the two terminal interactions every group shares: confirming a destructive step, and a
transfer progress bar (stderr, only on a terminal)."""
from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from typing import Annotated, Any, Callable, Iterable

import typer



def json_switch(ctx: typer.Context, value: bool) -> bool:
    """One switch: `wsctl --json CMD` and `wsctl CMD --json` mean the same in every command. The
    command's own flag answers (and records) whichever of the two was given."""
    from workspacectl.cli.context import state

    st = state(ctx)
    st.json = bool(st.json or value)
    return st.json


JsonOpt = Annotated[bool, typer.Option("--json", help="Print the API's JSON body exactly.", callback=json_switch)]


def is_tty() -> bool:
    return sys.stdout.isatty()


def print_json(body: Any) -> None:
    sys.stdout.write(json.dumps(body, indent=2, ensure_ascii=False) + "\n")


def emit(ctx: typer.Context, body: Any, render: Callable[[Any], None] | None = None, json_flag: bool = False) -> None:
    from workspacectl.cli.context import state

    if json_flag or state(ctx).json or render is None:
        if body is not None:
            print_json(body)
        return
    render(body)


def table(rows: Iterable[dict], columns: list[tuple[str, str]], empty: str = "Nothing to show.") -> None:
    """columns: [(key, heading)]. Rich table on a TTY, tab-separated lines on a pipe."""
    rows = list(rows)
    if not rows:
        print(empty, file=sys.stderr)
        return
    cell = lambda v: "" if v is None else (", ".join(map(str, v)) if isinstance(v, list) else str(v))
    if not is_tty():
        for r in rows:
            print("\t".join(cell(r.get(k)) for k, _ in columns))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(box=None, header_style="bold")
    for _, heading in columns:
        t.add_column(heading)
    for r in rows:
        t.add_row(*(cell(r.get(k)) for k, _ in columns))
    Console().print(t)


def fields(pairs: list[tuple[str, Any]]) -> None:
    """A record as 'label: value' lines."""
    width = max((len(k) for k, _ in pairs), default=0)
    for k, v in pairs:
        if isinstance(v, list):
            v = ", ".join(map(str, v))
        print(f"{k.ljust(width)}  {'' if v is None else v}")


def info(message: str) -> None:
    print(message, file=sys.stderr)


def confirm_or_refuse(question: str, yes: bool) -> None:
    """Ask on a terminal; without one, refuse unless --yes was given."""
    if yes:
        return
    if not sys.stdin.isatty():
        from workspacectl.errors import ApiError

        raise ApiError("invalid_request", "Refusing to do this without confirmation: pass --yes.")
    if not typer.confirm(question, default=False, err=True):
        raise typer.Abort()


@contextmanager
def progress_bar(label: str, total: int | None):
    """A callback advancing a transfer bar on stderr (a no-op when stderr is not a terminal)."""
    if not sys.stderr.isatty():
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
