r"""Rendering: --json prints the API body exactly; a TTY gets rich tables; a pipe gets plain text.

Human output never carries a control character raw. Names, notes, reasons, paths, imported
catalog text and server messages come from other members or from outside, and an escape
sequence in them would drive the reader's terminal (recolour, retitle, hide or fake lines).
`visible()` shows such characters as Python escapes: ESC as `\x1b`, BEL `\x07`, a C1 CSI
`\x9b`, DEL `\x7f`, a bidi override `\u202e`. It is applied where human output is rendered:
`emit()` hands its render function a copy of the body with every string made visible (free
text keeps its newlines and tabs), and `table()`, `fields()`, `info()` and the error line
(cli/main.py) apply it to what they print. Table cells are rich `Text`, never markup, so
"[bold]x[/]" prints as typed. `--json` stays exact: JSON's own escapes carry the same values
(`print_json` writes C1 and bidi characters as JSON \u escapes, which decode to the same strings).

Also the two terminal interactions every group shares: confirming a destructive step, and a
transfer progress bar (stderr, only on a terminal)."""
from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.progress import Progress, Task, TaskID


def json_switch(ctx: typer.Context, value: bool) -> bool:
    """One switch: `wsctl --json CMD` and `wsctl CMD --json` mean the same in every command. The
    command's own flag answers (and records) whichever of the two was given."""
    from workspacectl.cli.common.context import state

    st = state(ctx)
    st.json = bool(st.json or value)
    return st.json


JsonOpt = Annotated[bool, typer.Option("--json", help="Print the API's JSON body exactly.", callback=json_switch)]


# C0, DEL, C1, the line/paragraph separators and the bidi embeddings, overrides and isolates.
_UNSAFE = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_ONE_LINE = re.compile("[\x00-\x1f" + _UNSAFE + "]")
_TEXT = re.compile("\r(?!\n)|[\x00-\x08\x0b-\x0c\x0e-\x1f" + _UNSAFE + "]")  # keeps \t, \n, \r\n
_JSON_RAW = re.compile("[" + _UNSAFE + "]")  # json.dumps escapes C0 itself


def visible(value: Any, multiline: bool = False) -> str:
    r"""str(value) with every control character shown as its Python escape (`\x1b`, `\n`).
    multiline keeps newlines (CRLF too) and tabs: notes and descriptions read as text."""
    text = "" if value is None else str(value)
    if text.isprintable():  # the common case, answered in C: nothing to escape
        return text
    return (_TEXT if multiline else _ONE_LINE).sub(lambda m: repr(m.group())[1:-1], text)


def visible_body(body: Any) -> Any:
    """A copy of an API body with every string (keys too) made visible, newlines kept."""
    if isinstance(body, str):
        return visible(body, multiline=True)
    if isinstance(body, dict):
        return {visible_body(k): visible_body(v) for k, v in body.items()}
    if isinstance(body, (list, tuple)):
        return [visible_body(v) for v in body]
    return body


def is_tty() -> bool:
    return sys.stdout.isatty()


def print_json(body: Any, filtered: bool = True) -> None:
    """The body as JSON; `--json FIELDS` and `--jq EXPR` apply unless filtered=False (an error body)."""
    if filtered:
        from workspacectl.cli.common import scripting

        if scripting.active():
            is_jq, body = scripting.apply(body)
            if is_jq:
                for value in body:  # each result on its own line, strings raw (as `gh --jq`)
                    _write_json(value, raw_string=True)
                return
    _write_json(body)


def _write_json(body: Any, raw_string: bool = False) -> None:
    if raw_string and isinstance(body, str):
        # raw for a pipe (scripts read the value); a terminal sees control characters escaped
        sys.stdout.write((visible(body, multiline=True) if is_tty() else body) + "\n")
        return
    import json  # not at import: `wsctl --help` and the completion helpers print none

    text = json.dumps(body, indent=2, ensure_ascii=False)
    sys.stdout.write(_JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")


def emit(ctx: typer.Context, body: Any, render: Callable[[Any], None] | None = None, json_flag: bool = False) -> None:
    from workspacectl.cli.common import scripting
    from workspacectl.cli.common.context import state

    if json_flag or state(ctx).json or render is None or scripting.active():
        if body is not None:
            print_json(body)
        return
    render(visible_body(body))


def table(rows: Iterable[dict], columns: list[tuple[str, str]], empty: str = "Nothing to show.") -> None:
    """columns: [(key, heading)]. Rich table on a TTY, tab-separated lines on a pipe."""
    rows = list(rows)
    if not rows:
        print(empty, file=sys.stderr)
        return

    def cell(v: Any) -> str:
        return visible(", ".join(map(str, v)) if isinstance(v, list) else v)

    if not is_tty():
        for r in rows:
            print("\t".join(cell(r.get(k)) for k, _ in columns))
        return
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    t = Table(box=None, header_style="bold")
    for _, heading in columns:
        t.add_column(heading)
    for r in rows:
        t.add_row(*(Text(cell(r.get(k))) for k, _ in columns))  # Text: a member's "[red]" is not markup
    Console().print(t)


def fields(pairs: list[tuple[str, Any]]) -> None:
    """A record as 'label: value' lines."""
    width = max((len(k) for k, _ in pairs), default=0)
    for k, v in pairs:
        if isinstance(v, list):
            v = ", ".join(map(str, v))
        print(f"{visible(k).ljust(width)}  {visible(v)}")


def info(message: str) -> None:
    print(visible(message, multiline=True), file=sys.stderr)


def confirm_or_refuse(question: str, yes: bool) -> None:
    """Ask on a terminal; without one, refuse unless --yes was given."""
    if yes:
        return
    if not sys.stdin.isatty():
        from workspacectl.errors import ApiError

        raise ApiError("invalid_request", "Refusing to do this without confirmation: pass --yes.")
    if not typer.confirm(visible(question), default=False, err=True):
        raise typer.Abort()


def progress_wanted() -> bool:
    """Progress shows only on a terminal (stderr), and never when the output is JSON for a script."""
    if not sys.stderr.isatty():
        return False
    from typer._click.globals import get_current_context

    from workspacectl.cli.common import scripting
    from workspacectl.cli.common.context import state

    ctx = get_current_context(silent=True)
    return not ((ctx is not None and state(ctx).json) or scripting.active())


class _Advance:
    """advance(n) moves the bar by n bytes; advance.total(size) sets the total once it is known."""

    def __init__(self, bar: Progress | None = None, task: TaskID | None = None) -> None:
        self.bar, self.task = bar, task

    def __bool__(self) -> bool:   # no bar shown: nothing need count (or inflate) for it
        return self.bar is not None

    def __call__(self, n: int) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.advance(self.task, n)

    def total(self, size: int | None) -> None:
        if self.bar is not None and self.task is not None and size is not None:
            self.bar.update(self.task, total=size)


UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB")


def human_size(n: int | float) -> str:
    """A byte count as people read it, in binary units: '512 bytes', '1.5 KiB', '200.0 MiB'
    (summaries print this; --json keeps the count in bytes)."""
    if n < 1024:
        return f"{int(n)} byte{'' if int(n) == 1 else 's'}"
    value = float(n)
    for unit in UNITS:
        value /= 1024
        if value < 1024 or unit == UNITS[-1]:
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


@contextmanager
def progress_bar(label: str, total: int | None) -> Iterator[_Advance]:
    """A callback advancing a transfer bar on stderr (a no-op unless progress_wanted()). The bar
    shows at once: done/total (the total when it is known), the rate and the time left, in binary
    units as the summaries print them."""
    if not progress_wanted():
        yield _Advance()
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, ProgressColumn, TimeRemainingColumn
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text("?/s" if speed is None else f"{human_size(speed)}/s", style="progress.data.speed")

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(binary_units=True),
                  Rate(), TimeRemainingColumn(), console=Console(stderr=True), transient=True) as bar:
        from rich.markup import escape

        yield _Advance(bar, bar.add_task(escape(visible(label)), total=total))


def _no_phases(phase: str, done: int | None = None, total: int | None = None) -> None:
    """phases() when no progress is shown."""


PHASES = {"read": "reading the document", "resolve": "resolving operations", "index": "indexing operations",
          "upload": "sending the document", "server": "on the server..."}


@contextmanager
def phases(title: str) -> Iterator[Callable[[str, int | None, int | None], None]]:
    """A callback progress(phase, done, total) showing long work's phase on stderr, with a spinner
    (a no-op unless progress_wanted()). Over HTTP it reads "TITLE on the server...". """
    if not progress_wanted():
        yield _no_phases
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(escape(visible(title)), total=None)
        shown: list[str | None] = [None]

        def show(phase: str, done: int | None = None, total: int | None = None) -> None:
            what = PHASES.get(phase, phase)
            text = f"{title} {what}" if phase == "server" else f"{title}: {what}"
            if done is not None and total:
                text += f" {done}/{total}"
            elif total:
                text += f" ({total})"
            bar.update(task, description=escape(visible(text)))
            if phase != shown[0]:  # each phase is drawn at least once, however quick
                shown[0] = phase
                bar.refresh()

        yield show


def list_table(ctx: typer.Context, path: str, key: str, columns: list[tuple[str, str]], empty: str, json_flag: bool,
               query: dict | None = None) -> None:
    """A list command's whole answer: every page of `path` (context.all_pages), shown as a table of
    body[key] (`empty` when there is none), or the JSON body with --json."""
    from workspacectl.cli.common.context import all_pages

    body = all_pages(ctx, path, key, query)
    emit(ctx, body, lambda b: table(b[key], columns, empty), json_flag=json_flag)
