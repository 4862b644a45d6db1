"""`wsctl vault proxy CREDENTIAL METHOD PATH`: a call to the credential's service made by the vault,
so the secret never reaches this machine (docs/api.md §6.10). Like `wsctl api` (its -f/-F/-H/-i
pieces are cli/api.py's):

- PATH is the path on the service after its base URL (`/repos/OWNER/NAME`); a query string may
  follow. A path that would leave the base URL is refused here, as the server would refuse it.
- `-f`/`-F` fields go into the query for GET and DELETE, else into a JSON body; `--input FILE`
  (`-` stdin) sends the file's bytes as the body, streamed.
- The answer's body is written to stdout as it arrives (never held whole), the service's status
  and headers first with `-i`. With `--jq` the body must be JSON and is filtered.
- An answer of 400 or more from the service exits 1 after printing it; our own refusals exit as
  every command does.
- `--paginate` (GET) follows the pages of a service that says where the next one is: a `Link:
  <…>; rel="next"` header, or the cursor its catalog definition names (`[pagination]`, announced by
  the proxy's `X-Wsctl-Pagination` header). Each page is printed in turn (as `gh api --paginate`),
  with `--jq` each page filtered; at most MAX_PAGES pages.
"""
from __future__ import annotations

import json as jsonlib
import os
import re
import sys
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import parse_qsl, quote

from workspacectl.errors import ApiError

if TYPE_CHECKING:
    import typer

    from workspacectl.backend.base import Backend, ProxyAnswer

QUERY_METHODS = ("GET", "DELETE")
MAX_PAGES = 1000
PROXY_KEY = ("the credential is presented for you by the vault; a secret on the command line would stay in shell "
             "history")
_HEADER_SAFE = re.compile(r"[^\x00-\x1f\x7f]*")
_NEXT = re.compile(r'<([^>]*)>[^,]*;\s*rel="?([^",;]*)"?')


def run(ctx: typer.Context, cred_ref: str, method: str, path: str, reason: str, raw_field: list[str], field: list[str],
        input_file: str | None, header: list[str], include: bool, paginate: bool) -> None:
    import typer

    from workspacectl.cli.api import parse_fields, parse_headers
    from workspacectl.cli.common.context import backend
    from workspacectl.cli.common.refs import resolve
    from workspacectl.formats.proxy_path import refusal

    verb = method.upper()
    tail, _, query_text = path.lstrip("/").partition("?")
    why = refusal(tail)
    if why:
        raise ApiError("invalid_request", f"Refused to proxy this request: {why}. Nothing was sent; give a path "
                       "under the service's base URL.")
    query = parse_qsl(query_text, keep_blank_values=True)
    headers = parse_headers(header, authorization=PROXY_KEY)
    fields = parse_fields(raw_field, field)
    if paginate and verb != "GET":
        raise typer.BadParameter("--paginate follows the pages of a GET", param_hint="--paginate")
    if not reason.strip() or len(reason) > 500:
        raise ApiError("invalid_request", "--reason must say why, 1 to 500 characters.")
    if reason == reason.strip() and _HEADER_SAFE.fullmatch(reason):
        headers["X-Wsctl-Reason"] = reason
    else:   # a header cannot carry it as it is: the query parameter can (it is not forwarded)
        query.append(("reason", reason))
    body: Any = None
    length: int | None = None
    if input_file is not None:
        if fields and verb not in QUERY_METHODS:
            raise typer.BadParameter("give the body with --input or as -f/-F fields, not both", param_hint="--input")
        body, length = _open_input(input_file)
    if fields and verb in QUERY_METHODS:
        query += [(k, v if isinstance(v, str) else jsonlib.dumps(v)) for k, v in fields.items()]
    elif fields:
        import io

        data = jsonlib.dumps(fields).encode()
        body, length = io.BytesIO(data), len(data)
        headers.setdefault("Content-Type", "application/json")
    be = backend(ctx)
    cred_id = resolve(ctx, "credential", cred_ref)
    try:
        _pages(be, verb, cred_id, tail, query, headers, body, length, include, paginate)
    finally:
        if body is not None and body is not sys.stdin.buffer:
            body.close()


def _open_input(name: str) -> tuple[BinaryIO, int | None]:
    if name == "-":
        return sys.stdin.buffer, None
    try:
        f = open(name, "rb")
    except OSError as e:
        raise ApiError("invalid_request", f"Cannot read {name}: {e.strerror}; check the path, or give - to read stdin.") from None
    st = os.fstat(f.fileno())
    import stat

    return f, (st.st_size if stat.S_ISREG(st.st_mode) else None)


def _pages(be: Backend, verb: str, cred_id: str, tail: str, query: list[tuple[str, str]], headers: dict[str, str],
           body: BinaryIO | None, length: int | None, include: bool, paginate: bool) -> None:
    from workspacectl.cli.common import scripting

    prefix = f"/v1/credentials/{quote(cred_id, safe='')}/proxy/"
    seen: set[tuple[str, tuple]] = set()
    for _ in range(MAX_PAGES):
        answer = be.proxy(verb, prefix + tail, query, headers, body, length)
        try:
            status = answer.status
            if include:
                from workspacectl.cli.api import print_head

                print_head(status, answer.headers)
            cursor = _cursor_rule(answer.header("x-wsctl-pagination")) if paginate else None
            page = None
            if scripting.active() or cursor is not None:   # the page is read whole: jq or the cursor needs it
                raw = b"".join(answer.chunks)
                page = _json(raw)
                if scripting.active() and status < 400:
                    if page is _NOT_JSON:
                        kind = answer.header("content-type") or "no content type"
                        raise ApiError("invalid_request", f"The service's answer ({kind}) is not JSON, so --jq "
                                       "cannot read it; drop --jq.")
                    from workspacectl.cli.common.output import print_json

                    print_json(page)
                else:   # as the service sent it (an error body too, whatever --jq says)
                    _write(raw if not raw or raw.endswith(b"\n") else raw + b"\n")
            else:
                for chunk in answer.chunks:
                    _write(chunk)
                sys.stdout.flush()
        finally:
            answer.close()
        if status >= 400:
            raise ApiError("upstream_failed", f"The service answered HTTP {status}; its answer is printed above "
                                                 "(read it for what the service wants changed).")
        if not paginate:
            return
        nxt = _next_page(answer, prefix, cursor, page, tail, query)
        if nxt is None or (nxt[0], tuple(nxt[1])) in seen:
            return
        seen.add((nxt[0], tuple(nxt[1])))
        tail, query = nxt
    raise ApiError("invalid_request", f"--paginate stopped after {MAX_PAGES} pages.")


def _write(data: bytes) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.write(data)


_NOT_JSON = object()


def _json(raw: bytes) -> Any:
    """The page as JSON, None when empty, _NOT_JSON when it is something else."""
    try:
        return jsonlib.loads(raw) if raw.strip() else None
    except (ValueError, UnicodeDecodeError):
        return _NOT_JSON


def _cursor_rule(value: str | None) -> tuple[str, str] | None:
    """(cursorPath, cursorParam) of an `X-Wsctl-Pagination: cursor; path=…; param=…` header."""
    if not value or not value.startswith("cursor"):
        return None
    parts = dict(p.strip().partition("=")[::2] for p in value.split(";")[1:])
    return (parts["path"], parts["param"]) if parts.get("path") and parts.get("param") else None


def _next_page(answer: ProxyAnswer, prefix: str, cursor: tuple[str, str] | None, page: Any, tail: str,
               query: list[tuple[str, str]]) -> tuple[str, list[tuple[str, str]]] | None:
    """(tail, query) of the next page, or None: a Link rel="next" through the proxy, else the cursor."""
    for link in [v for k, v in answer.headers if k.lower() == "link"]:
        for url, rel in _NEXT.findall(link):
            if "next" in rel.split():
                path = url[url.index(prefix):] if prefix in url else None
                if path is None:
                    return None   # a next page the proxy cannot reach
                rest, _, q = path[len(prefix):].partition("?")
                kept = [(k, v) for k, v in query if k == "reason"]
                return rest, kept + parse_qsl(q, keep_blank_values=True)
    if cursor is None or not isinstance(page, (dict, list)):
        return None
    value: Any = page
    for key in cursor[0].split("."):
        value = value.get(key) if isinstance(value, dict) else None
    if value in (None, "", False) or isinstance(value, (dict, list)):
        return None
    return tail, [(k, v) for k, v in query if k != cursor[1]] + [(cursor[1], str(value))]
