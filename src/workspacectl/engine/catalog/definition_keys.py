"""The keys a service definition file (TOML) may hold, table by table; any other key is refused.

A misspelt key (`clientAuthMethod` for `clientAuth`) would otherwise be silently ignored and the
service would behave as if it were absent, so `check_keys` refuses the file with the key, its line
and the keys that table knows (400 / exit 7). Free-form tables (`envVars`, `extraAuthorizeParams`,
`auth.headers`, an operation's `response` and `example`, a trigger's `config`) are not checked.
OpenAPI documents are not checked: their extensions are theirs, and the reader takes only what it
knows from them.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from workspacectl.engine.catalog.definition_values import bad

if TYPE_CHECKING:
    from workspacectl.errors import ApiError

TOP: tuple[str, ...] = ("service", "name", "description", "credentialType", "envVars", "fields", "secretFields", "baseUrl",
       "docsUrl", "probe", "auth", "bodyEncoding", "pagination", "oauth2", "operations", "triggers")
OAUTH2: tuple[str, ...] = ("authorizeUrl", "tokenUrl", "revokeUrl", "scopes", "scopeSeparator", "pkce", "extraAuthorizeParams",
          "clientId", "clientSecret", "clientAuth", "tokenBodyEncoding", "issuer")
AUTH: tuple[str, ...] = ("type", "name", "prefix", "field", "username", "password", "headers")
OPERATION: tuple[str, ...] = ("name", "summary", "description", "method", "path", "tags", "params", "response", "example",
             "markdown")
PARAM: tuple[str, ...] = ("name", "in", "type", "required", "description")
TRIGGER: tuple[str, ...] = ("type", "event", "id", "name", "description", "cadenceSeconds", "requiresCredential", "config")

_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(?:#.*)?$")


def _unknown(table: dict, known: tuple) -> str | None:
    for key in table:
        if key not in known:
            return str(key)
    return None


def _blocks(text: str) -> list[tuple[str, int, int]]:
    """(header name, first line, end line) of each table in the file: "" for the top level, the
    dotted name of a [table] or [[array]] header otherwise (1-based lines, end exclusive)."""
    lines = text.splitlines()
    out: list[tuple[str, int, int]] = []
    name, start = "", 1
    for i, line in enumerate(lines, 1):
        m = _HEADER.match(line)
        if m:
            out.append((name, start, i))
            name, start = m.group(1).replace('"', "").replace("'", "").replace(" ", ""), i + 1
    out.append((name, start, len(lines) + 1))
    return out


def _line_of(text: str, table: str, index: int, key: str) -> int | None:
    """The line assigning `key` in the index-th block named `table` ("" the top level), or None."""
    lines = text.splitlines()
    pattern = re.compile(r"(?:^|[{,\s])[\"']?" + re.escape(key) + r"[\"']?\s*=")
    seen = -1
    for name, start, end in _blocks(text):
        if name != table:
            continue
        seen += 1
        if seen != index:
            continue
        for n in range(start, end):
            if pattern.search(lines[n - 1]):
                return n
    return None


def _refuse(text: str, where: str, key: str, label: str, known: tuple, table: str = "", index: int = 0) -> ApiError:
    line = _line_of(text, table, index, key)
    if line is None and table:   # an inline table or array at the top level
        line = _line_of(text, "", 0, key)
    at = f"{where} line {line}" if line else where
    return bad(at, f"unknown key '{key[:80]}' {label}; the known keys are {', '.join(sorted(known))}. "
                   "Fix its spelling or remove it.")


def check_keys(data: dict, text: str, where: str) -> None:
    """Refuse (400) the first key no table of a definition knows."""
    if not isinstance(data, dict):
        return
    key = _unknown(data, TOP)
    if key:
        raise _refuse(text, where, key, "at the top level", TOP)
    for table, known in (("oauth2", OAUTH2), ("auth", AUTH)):
        value = data.get(table)
        if isinstance(value, dict) and (key := _unknown(value, known)):
            raise _refuse(text, where, key, f"in [{table}]", known, table)
    for label, items, known, inner in (("operations", data.get("operations"), OPERATION, "params"),
                                       ("triggers", data.get("triggers"), TRIGGER, None)):
        if not isinstance(items, list):
            continue
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            if key := _unknown(item, known):
                raise _refuse(text, where, key, f"in [[{label}]] entry {i + 1}", known, label, i)
            params = item.get(inner) if inner else None
            for p in params if isinstance(params, list) else []:
                if isinstance(p, dict) and (key := _unknown(p, PARAM)):
                    raise _refuse(text, where, key, f"in a param of [[{label}]] entry {i + 1}", PARAM, label, i)
