"""Scripting switches shared by every command, as `gh` has them: `--json [FIELDS]`, `--jq EXPR`,
and `--limit N` / `--all` on lists.

- `--json` stays one switch (`wsctl --json CMD` == `wsctl CMD --json`, cli/output.json_switch).
  It may be followed by a field list, `--json id,name` or `--json=id,name`: main() takes that
  word off the command line before click parses it (`take_json_fields`), so `--json` is still a
  flag to click, the completion scripts and the man pages. A word is a field list when it is
  comma-separated camelCase names (`id`, `envVars`, `fields.instanceUrl`); ids (`cred_…`) hold an
  underscore and are never one, and neither is a command name. When the command then lacks an
  argument, main() parses the line again with the word given back (`wsctl vault show --json
  stripe` names the credential "stripe").
- With fields, an object keeps only those keys, and a list body (`{"credentials": [...],
  "nextCursor": …}`) keeps them in each entry, its envelope unchanged. A field no entry has is
  exit 7, naming the fields there are.
- `--jq EXPR` filters the JSON with jq (the `jq` package, a binding of the jq C library; imported
  only when used) and prints each result, strings raw as `gh --jq` does. It implies `--json`.
- `--limit N` caps a list at N entries (pages are asked for at most the remaining count, so the
  `nextCursor` printed is exact); `--all` (the default when neither is given) reads every page.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from workspacectl.cli.common.state import state

if TYPE_CHECKING:
    from typer import _click
    from typer.core import TyperOption

# camelCase names, dotted for nested objects; no underscore, so an id is never one.
_FIELD = r"[a-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)*"
FIELD_LIST = re.compile(rf"{_FIELD}(?:,{_FIELD})*")


class Filters:
    """What the scripting switches asked for, in this process (one command per process)."""

    def __init__(self) -> None:
        self.fields: list[str] | None = None
        self.jq: str | None = None
        self.consumed = False       # a word after --json was taken as fields (main may give it back)
        self.limit: int | None = None
        self.all = False


FILTERS = Filters()


def reset() -> None:
    global FILTERS
    FILTERS = Filters()


def take_json_fields(argv: list[str], command_names: set[str]) -> list[str]:
    """argv without the field list after `--json` (recorded in FILTERS.fields)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            out += argv[i:]
            break
        if word.startswith("--json="):
            value = word[len("--json="):]
            FILTERS.fields = _parse(value)
            out.append("--json")
        elif word == "--json" and i + 1 < len(argv) and FIELD_LIST.fullmatch(argv[i + 1]) \
                and argv[i + 1] not in command_names:
            FILTERS.fields = _parse(argv[i + 1])
            FILTERS.consumed = True
            out.append("--json")
            i += 1
        else:
            out.append(word)
        i += 1
    return out


def _parse(value: str) -> list[str]:
    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if not re.fullmatch(_FIELD, n)]
    if bad or not names:
        from typer._click.exceptions import UsageError

        raise UsageError(f"--json takes a comma-separated list of field names, e.g. --json id,name (not {value!r})")
    return names


def active() -> bool:
    """Whether output must be JSON regardless of the terminal (a field list or --jq was given)."""
    return FILTERS.fields is not None or FILTERS.jq is not None


# --------------------------------------------------------------------------- field selection

def _pick(obj: Any, names: list[str]) -> Any:
    if not isinstance(obj, dict):
        return obj
    out: dict = {}
    for name in names:
        head, _, rest = name.partition(".")
        if head not in obj:
            continue
        if rest:
            inner = _pick(obj[head], [rest])
            if isinstance(out.get(head), dict) and isinstance(inner, dict):
                out[head].update(inner)
            else:
                out[head] = inner
        else:
            out[head] = obj[head]
    return out


def _keys(obj: Any, prefix: str = "") -> set[str]:
    if not isinstance(obj, dict):
        return set()
    found = set()
    for k, v in obj.items():
        found.add(prefix + k)
        if isinstance(v, dict):
            found |= _keys(v, prefix + k + ".")
    return found


def _list_key(body: dict) -> str | None:
    """The key of a list body: the one list of objects beside at most a nextCursor."""
    lists = [k for k, v in body.items() if isinstance(v, list)]
    others = [k for k in body if k not in lists and k != "nextCursor"]
    return lists[0] if len(lists) == 1 and not others else None


def select_fields(body: Any, names: list[str]) -> Any:
    from workspacectl.errors import ApiError

    if isinstance(body, list):
        entries, wrap = body, lambda picked: picked
    elif isinstance(body, dict) and _list_key(body):
        key = _list_key(body)
        entries, wrap = body[key], lambda picked: {**body, key: picked}
    else:
        entries, wrap = [body], lambda picked: picked[0]
    available: set[str] = set()
    for entry in entries:
        available |= _keys(entry)
    unknown = [n for n in names if n not in available]
    if entries and unknown:
        raise ApiError("invalid_request", f"Unknown JSON field {', '.join(unknown)}; this output has: "
                       f"{', '.join(sorted(k for k in available if '.' not in k)) or 'no fields'}.")
    return wrap([_pick(e, names) for e in entries])


# --------------------------------------------------------------------------- jq

def compile_jq(expr: str) -> Any:
    """A compiled jq program (the jq package ships no types, hence Any), or exit 7 saying what jq
    said about it (checked before any request)."""
    from workspacectl.errors import ApiError

    try:
        import jq
    except ImportError:
        raise ApiError("invalid_request", "--jq needs the jq package: pip install jq.") from None
    try:
        return jq.compile(expr)
    except ValueError as e:
        from typer._click.exceptions import UsageError

        raise UsageError(f"--jq: {_jq_message(e)}") from None


def _jq_message(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else "invalid expression"
    return text.removeprefix("jq: error: ").removeprefix("jq: error (at <unknown>): ").rstrip(": ")


def run_jq(expr: str, body: Any) -> list[Any]:
    from workspacectl.errors import ApiError

    try:
        return compile_jq(expr).input_value(body).all()
    except ValueError as e:
        raise ApiError("invalid_request", f"--jq: {_jq_message(e)}") from None


def apply(body: Any) -> tuple[bool, Any]:
    """(is_jq_output, value): the body with fields selected, or the list of jq results."""
    if FILTERS.fields is not None:
        body = select_fields(body, FILTERS.fields)
    if FILTERS.jq is not None:
        return True, run_jq(FILTERS.jq, body)
    return False, body


# --------------------------------------------------------------------------- click callbacks

def jq_switch(ctx: _click.Context, param: _click.Parameter, value: str | None) -> str | None:
    if value is not None:
        compile_jq(value)  # a bad expression is refused before anything is sent
        FILTERS.jq = value
        state(ctx).json = True
    return value


def limit_switch(ctx: _click.Context, param: _click.Parameter, value: int | None) -> int | None:
    if value is not None:
        FILTERS.limit = value
    return value


def all_switch(ctx: _click.Context, param: _click.Parameter, value: bool) -> bool:
    if value:
        FILTERS.all = True
    return value


def page_limit(default: int | None = None) -> int | None:
    """The cap a list command applies (None: every page); `default` when neither flag is given."""
    if FILTERS.all and FILTERS.limit is not None:
        from typer._click.exceptions import UsageError

        raise UsageError("give --limit N or --all, not both")
    if FILTERS.all:
        return None
    return FILTERS.limit if FILTERS.limit is not None else default


def jq_option() -> TyperOption:
    from typer.core import TyperOption

    return TyperOption(param_decls=["--jq"], metavar="EXPR", expose_value=False, callback=jq_switch,
                       help="Filter the JSON output with a jq expression (implies --json); strings print raw.")


def list_options() -> list[TyperOption]:
    from typer._click.types import IntRange
    from typer.core import TyperOption

    return [
        TyperOption(param_decls=["--limit", "-L"], type=IntRange(min=1), metavar="N", expose_value=False,
                    callback=limit_switch, help="Show at most N entries (the nextCursor printed continues after them)."),
        TyperOption(param_decls=["--all"], is_flag=True, expose_value=False, callback=all_switch,
                    help="Read every page (the default when --limit is not given)."),
    ]


def cap_items(body: dict, key: str) -> dict:
    """--limit on a list a route answers whole (no pages): its first N entries."""
    cap = page_limit()
    if cap is None or not isinstance(body, dict) or not isinstance(body.get(key), list):
        return body
    return {**body, key: body[key][:cap]}
