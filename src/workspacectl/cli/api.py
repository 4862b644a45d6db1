"""`wsctl api METHOD PATH [--data JSON]`: a raw call, like `gh api`."""
from __future__ import annotations

import json as jsonlib
import re
import sys
from typing import Annotated, Optional

import typer

from workspacectl.cli.context import backend
from workspacectl.cli.output import print_json
from workspacectl.errors import ApiError

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def api(
    ctx: typer.Context,
    method: Annotated[str, typer.Argument(help="GET, POST, PUT, PATCH or DELETE.")],
    path: Annotated[str, typer.Argument(help="A route path such as /v1/members (the /v1 may be left out).")],
    data: Annotated[Optional[str], typer.Option("--data", "-d", help="JSON body; '@FILE' reads a file, '@-' stdin.")] = None,
    json: Annotated[bool, typer.Option("--json", help="Accepted for symmetry; the body is always printed as JSON.")] = False,
):
    """Call any route of the API and print its JSON body. On an error the error body is printed
    to stdout too, and the exit code says which class of error it was."""
    method = method.upper()
    if method not in METHODS:
        raise typer.BadParameter(f"must be one of {', '.join(METHODS)}", param_hint="METHOD")
    # control characters and spaces are sent percent-encoded, the same on both backends
    path = re.sub(r"[\x00-\x20\x7f]", lambda m: "%%%02X" % ord(m.group()), path)
    if not path.startswith("/"):
        path = "/" + path
    if not path.startswith("/v1/"):
        path = "/v1" + path
    body = None
    if data is not None:
        text = sys.stdin.read() if data == "@-" else (_read(data[1:]) if data.startswith("@") else data)
        try:
            body = jsonlib.loads(text) if text.strip() else None
        except ValueError as e:
            raise ApiError("invalid_request", f"--data is not valid JSON ({e.msg} at line {e.lineno}).") from None
    try:
        answer = backend(ctx).request(method, path, body=body)
    except ApiError as e:
        if e.code != "unreachable":
            print_json(e.body())
        raise
    if isinstance(answer, (bytes, bytearray)):
        sys.stdout.buffer.write(answer)
    elif answer is not None:
        print_json(answer)


def _read(name: str) -> str:
    try:
        with open(name, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise ApiError("invalid_request", f"Cannot read {name}: {e.strerror}.") from None
    except UnicodeDecodeError:
        raise ApiError("invalid_request", f"{name} is not UTF-8 text; --data takes JSON.") from None
