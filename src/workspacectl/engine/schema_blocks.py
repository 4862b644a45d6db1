"""JSON Schema building blocks for route declarations (@route body=, query=, responses=).

Small functions that return plain JSON Schema dicts, and the shapes every wing uses. A shared
engine module (not under openapi/), so each wing declares its routes' schemas beside its
handlers without importing the OpenAPI document; engine/openapi/ assembles them.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from workspacectl.engine.pagination import DEFAULT_LIMIT, MAX_LIMIT, MAX_NAME_FILTER

NOT_BLANK = r"\S"  # JSON Schema patterns are unanchored: at least one non-space character


def text(min_len: int | None = None, max_len: int | None = None, pattern: str | None = None, **kw: Any) -> dict:
    out: dict = {"type": "string", **kw}
    if min_len is not None:
        out["minLength"] = min_len
    if max_len is not None:
        out["maxLength"] = max_len
    if pattern is not None:
        out["pattern"] = pattern
    return out


def obj(props: dict, required: Iterable[str] | Literal["all"] = (), closed: bool = True, **kw: Any) -> dict:
    """An object; `required` names the keys always present. Closed: no other keys."""
    out: dict = {"type": "object", "properties": props, **kw}
    if required == "all":
        required = list(props)
    if required:
        out["required"] = list(required)
    if closed:
        out["additionalProperties"] = False
    return out


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: dict) -> dict:
    t = schema.get("type")
    if isinstance(t, str) and "$ref" not in schema:
        if "enum" in schema:   # an enum lists every value allowed: null too
            return {**schema, "type": [t, "null"], "enum": [*schema["enum"], None]}
        return {**schema, "type": [t, "null"]}
    return {"anyOf": [schema, {"type": "null"}]}


def array(items: dict, **kw: Any) -> dict:
    return {"type": "array", "items": items, **kw}


def page_of(key: str, item: dict) -> dict:
    """A list answer (CONTRACT §3): {<plural>: [...], nextCursor}."""
    return obj({key: array(item), "nextCursor": nullable(text())}, required="all")


def query(name: str, schema: dict, description: str, required: bool = False) -> dict:
    return {"name": name, "in": "query", "required": required, "schema": schema, "description": description}


STR = text()
TIME = text(format="date-time")
INT = {"type": "integer"}
BOOL = {"type": "boolean"}
STR_MAP = {"type": "object", "additionalProperties": STR}
ANY: dict = {}

PAGE = [query("limit", {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
              f"Page size, 1-{MAX_LIMIT} (default {DEFAULT_LIMIT})."),
        query("cursor", STR, "The nextCursor of the previous page; empty or absent for the first page.")]
# A list that takes ?name= (what the CLI resolves a name with, in one request)
NAMED_PAGE = [query("name", text(max_len=MAX_NAME_FILTER), "Only entries with this name regardless of case "
                    "(Unicode case folding; the caller prefers an exact match). Empty or absent: all."), *PAGE]
