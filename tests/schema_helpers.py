"""A tiny JSON Schema checker for the answers /v1/openapi.json documents (no dependency).

Covers what the @route declarations and engine/openapi/components.py write: type (one or a list, so nullable), enum, const,
required, properties, additionalProperties, items, $ref into the document, anyOf, oneOf,
min/maxLength, pattern, min/maxItems, minimum/maximum and format date-time.
"""
from __future__ import annotations

import re
from datetime import datetime

_TYPES = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "integer": lambda x: isinstance(x, int) and not isinstance(x, bool),
    "number": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
}


def schema_errors(value, schema: dict, doc: dict, where: str = "$") -> list[str]:
    """Every way `value` breaks `schema` ($refs resolved in `doc`), as 'path: why' lines."""
    errs: list[str] = []
    if "$ref" in schema:
        node = doc
        for part in schema["$ref"].lstrip("#/").split("/"):
            node = node[part]
        errs += schema_errors(value, node, doc, where)
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_TYPES[t](value) for t in types):
            return [*errs, f"{where}: {value!r:.80} is not {'/'.join(types)}"]
    if "enum" in schema and value not in schema["enum"]:
        errs.append(f"{where}: {value!r:.80} not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errs.append(f"{where}: {value!r:.80} is not {schema['const']!r}")
    for key in ("anyOf", "oneOf"):
        if key in schema:
            passing = sum(not schema_errors(value, s, doc, where) for s in schema[key])
            if passing == 0 or (key == "oneOf" and passing > 1):
                errs.append(f"{where}: {passing} of the {key} alternatives match {value!r:.120}")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        errs += [f"{where}: missing {k!r}" for k in schema.get("required", []) if k not in value]
        extra = schema.get("additionalProperties", True)
        for k, x in value.items():
            if k in props:
                errs += schema_errors(x, props[k], doc, f"{where}.{k}")
            elif extra is False:
                errs.append(f"{where}: undocumented key {k!r}")
            elif isinstance(extra, dict):
                errs += schema_errors(x, extra, doc, f"{where}.{k}")
    if isinstance(value, list):
        if "items" in schema:
            for i, x in enumerate(value):
                errs += schema_errors(x, schema["items"], doc, f"{where}[{i}]")
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
            errs.append(f"{where}: {len(value)} items")
    if isinstance(value, str):
        if not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)):
            errs.append(f"{where}: length {len(value)}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errs.append(f"{where}: {value!r:.80} does not match {schema['pattern']}")
        if schema.get("format") == "date-time":
            try:
                datetime.fromisoformat(value)
            except ValueError:
                errs.append(f"{where}: {value!r:.80} is not a date-time")
    if _TYPES["number"](value):
        if ("minimum" in schema and value < schema["minimum"]) or ("maximum" in schema and value > schema["maximum"]):
            errs.append(f"{where}: {value} out of range")
    return errs


def answer_schema(spec: dict, method: str, template: str, status: int) -> dict | None:
    """The documented JSON schema of one answer; fails when that status is not documented."""
    responses = spec["paths"][template][method.lower()]["responses"]
    assert str(status) in responses, f"{method} {template} answered {status}; documented: {sorted(responses)}"
    return responses[str(status)].get("content", {}).get("application/json", {}).get("schema")


def assert_documented(spec: dict, r, method: str, template: str, status: int):
    """The call answered `status` and its JSON body validates against the documented schema."""
    assert r.status == status, f"{method} {template}: {r.status} {r.body}"
    schema = answer_schema(spec, method, template, status)
    if schema is None:
        assert r.body is None, f"{method} {template}: documented without a body, answered {r.body!r:.200}"
        return r.body
    errs = schema_errors(r.body, schema, spec)
    assert not errs, f"{method} {template} answer does not match its schema:\n  " + "\n  ".join(errs[:20])
    return r.body
