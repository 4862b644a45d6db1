"""`wsctl api METHOD PATH`: a raw call, like `gh api`.

- `-f key=value` adds a string field, `-F key=value` a typed one (true, false, null and numbers
  become JSON values; `@FILE` reads a file's text, `@-` stdin). For GET and DELETE the fields go into
  the query string, otherwise into a JSON body. `--data JSON` gives the whole body instead.
- `-H 'Name: value'` adds a request header (a remote server sees it; the local engine reads none).
- `-i` prints the status line and the response headers before the body.
- `--paginate` follows `nextCursor` on a GET list route and prints one body holding every entry.
"""
from __future__ import annotations

import json as jsonlib
import re
import sys
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from workspacectl.cli.common.context import backend
from workspacectl.cli.common.output import print_json
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.backend.base import Backend

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
QUERY_METHODS = ("GET", "DELETE")


def api(
    ctx: typer.Context,
    method: Annotated[Literal["GET", "POST", "PUT", "PATCH", "DELETE"],
                      typer.Argument(case_sensitive=False, help="GET, POST, PUT, PATCH or DELETE.")],
    path: Annotated[str, typer.Argument(help="A route path such as /v1/members (the /v1 may be left out).")],
    data: Annotated[str | None, typer.Option("--data", help="JSON body; '@FILE' reads a file, '@-' stdin.")] = None,
    raw_field: Annotated[list[str] | None, typer.Option(
        "--raw-field", "-f", metavar="KEY=VALUE", help="A string field (repeatable): query for GET/DELETE, "
        "JSON body otherwise.")] = None,
    field: Annotated[list[str] | None, typer.Option(
        "--field", "-F", metavar="KEY=VALUE", help="A typed field (repeatable): true, false, null and numbers "
        "as JSON; @FILE reads a file, @- stdin.")] = None,
    header: Annotated[list[str] | None, typer.Option(
        "--header", "-H", metavar="'NAME: VALUE'", help="A request header (repeatable).")] = None,
    include: Annotated[bool, typer.Option("--include", "-i", help="Print the status line and response headers "
                                          "before the body.")] = False,
    paginate: Annotated[bool, typer.Option("--paginate", help="GET: follow nextCursor and print every entry "
                                           "in one body.")] = False,
    json: Annotated[bool, typer.Option("--json", help="Accepted for symmetry; the body is always printed as JSON.")] = False,
) -> None:
    """Call any route of the API and print its JSON body. On an error the error body is printed
    to stdout too, and the exit code says which class of error it was.

    \b
    Examples:
      wsctl api GET /v1/members
      wsctl api POST /v1/projects -f name=ops-desk -f description='Runs the on-call desk'
      wsctl api GET /v1/credentials --paginate --jq '.credentials[].name'
    """
    verb = method.upper()
    # control characters and spaces are sent percent-encoded, the same on both backends
    path = re.sub(r"[\x00-\x20\x7f]", lambda m: f"%{ord(m.group()):02X}", path)
    if not path.startswith("/"):
        path = "/" + path
    if not path.startswith("/v1/"):
        path = "/v1" + path
    headers = parse_headers(header or [])
    fields = parse_fields(raw_field or [], field or [])
    if paginate and verb != "GET":
        raise typer.BadParameter("--paginate follows pages of a GET list route", param_hint="--paginate")
    body = query = None
    if data is not None:
        if fields:
            raise typer.BadParameter("give the body with --data or as -f/-F fields, not both", param_hint="--data")
        text = sys.stdin.read() if data == "@-" else (_read(data[1:]) if data.startswith("@") else data)
        try:
            body = jsonlib.loads(text) if text.strip() else None
        except jsonlib.JSONDecodeError as e:
            raise ApiError("invalid_request", f"--data is not valid JSON ({e.msg} at line {e.lineno}).") from None
    elif fields and verb in QUERY_METHODS:
        query = {k: v if isinstance(v, str) else jsonlib.dumps(v) for k, v in fields.items()}
    elif fields:
        body = fields
    b = backend(ctx)
    status, answer_headers, answer = b.exchange(verb, path, query=query, body=body, headers=headers)
    if paginate and status < 400:
        answer, status, answer_headers, _ = _follow(b, path, query, headers, answer, status, answer_headers)
    if include:
        print_head(status, answer_headers)
    if status >= 400:
        if isinstance(answer, dict):
            print_json(answer, filtered=False)
        raise ApiError.from_body(status, answer)
    if isinstance(answer, (bytes, bytearray)):
        sys.stdout.flush()
        sys.stdout.buffer.write(answer)
    elif answer is not None:
        print_json(answer)


def _follow(b: Backend, path: str, query: dict[str, str] | None, headers: dict[str, str], first: Any, status: int,
            answer_headers: list[tuple[str, str]]) -> tuple[Any, int, list[tuple[str, str]], int]:
    """Every page of a list route: the entries joined under its one list key, nextCursor null."""
    from workspacectl.cli.common.scripting import _list_key

    if not isinstance(first, dict) or not _list_key(first):
        return first, status, answer_headers, 1
    key = _list_key(first)
    items, answer, pages = list(first[key]), first, 1
    query = dict(query or {})
    while answer.get("nextCursor"):
        query["cursor"] = answer["nextCursor"]
        status, answer_headers, answer = b.exchange("GET", path, query=query, headers=headers)
        pages += 1
        if status >= 400 or not isinstance(answer, dict):
            return answer, status, answer_headers, pages
        items += answer.get(key) or []
    return {**first, key: items, "nextCursor": None}, status, answer_headers, pages


def print_head(status: int, headers: list[tuple[str, str]]) -> None:
    """`-i`: the status line and the headers, then a blank line (`wsctl api`, `wsctl vault proxy`)."""
    from http import HTTPStatus

    from workspacectl.cli.common.output import visible

    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    lines = [f"HTTP/1.1 {status} {phrase}".rstrip()]
    lines += [f"{visible(k.title())}: {visible(v)}" for k, v in headers]
    sys.stdout.write("\n".join(lines) + "\n\n")


KEY_SENT_FOR_YOU = ("the key is sent for you (WSCTL_TOKEN, WSCTL_API_KEY or the profile's); a secret on the command "
                    "line would stay in shell history")


def parse_headers(items: list[str], authorization: str = KEY_SENT_FOR_YOU) -> dict[str, str]:
    """-H 'Name: value' options; `authorization` says why an Authorization header is refused."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name) or re.search(r"[\x00-\x1f\x7f]", value):
            raise typer.BadParameter(f"{item!r} is not 'Name: value'", param_hint="--header")
        if name.lower() == "authorization":
            raise typer.BadParameter(authorization, param_hint="--header")
        out[name] = value
    return out


def parse_fields(raw: list[str], typed: list[str]) -> dict:
    """-f KEY=VALUE (strings) and -F KEY=VALUE (typed) options, as one object."""
    return {**_fields(raw, typed=False), **_fields(typed, typed=True)}


def _fields(items: list[str], typed: bool) -> dict:
    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--field" if typed else "--raw-field")
        out[key] = _typed(value) if typed else value
    return out


def _typed(value: str) -> str | bool | int | float | None:
    if value.startswith("@"):
        return sys.stdin.read() if value == "@-" else _read(value[1:])
    if value in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[value]
    if re.fullmatch(r"-?(0|[1-9][0-9]*)", value):
        return int(value)
    if re.fullmatch(r"-?(0|[1-9][0-9]*)\.[0-9]+", value):
        return float(value)
    return value


def _read(name: str) -> str:
    try:
        with open(name, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise ApiError("invalid_request", f"Cannot read {name}: {e.strerror}; check the path after @ (or use @- for stdin).") from None
    except UnicodeDecodeError:
        raise ApiError("invalid_request", f"{name} is not UTF-8 text; --data and -F @FILE take text.") from None
