"""How much work one catalog import may cause, checked before the work (docs/api.md, "Import limits").

An import is an admin's document run on the server: without bounds, an `allOf` explosion took
40 s of CPU, 300,000 parameters 476 MB, a 100,000-operation TOML 408 MB. Each limit below is
checked before the step it protects, so any import ends in bounded time and memory:

    document size        MAX_DOCUMENT_BYTES     413  before decoding or parsing
    document nodes       MAX_DOCUMENT_NODES     413  before parsing: JSON brackets and commas, YAML
                                                     parser events (aliases count once), TOML
                                                     '=' '[' '{' (an upper bound: ones inside strings count)
    alias expansion      MAX_EXPANDED_NODES     413  YAML values counted with every alias expanded
    nesting              MAX_NESTING            400  flow brackets ([ {) deeper than this, before parsing
    operations/service   MAX_OPERATIONS         422  before any operation is built
    params/operation     MAX_PARAMS             422  before that operation is built (body fields count)
    schema steps         MAX_SCHEMA_STEPS       422  per operation: every $ref, allOf part and schema
                         MAX_DOCUMENT_SCHEMA_STEPS   node the walkers visit; and for the whole document

The figures are about ten times what the largest real documents we know need (bench/README.md,
bench/hostile_imports.py).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workspacectl.errors import ApiError

MiB = 1024 * 1024
MAX_DOCUMENT_BYTES = 16 * MiB
MAX_DOCUMENT_NODES = 300_000
MAX_EXPANDED_NODES = 1_000_000
MAX_NESTING = 500
MAX_OPERATIONS = 2_000
MAX_PARAMS = 500
MAX_SCHEMA_STEPS = 10_000
MAX_DOCUMENT_SCHEMA_STEPS = 400_000
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def too_large(where: str, what: str) -> ApiError:
    return ApiError("payload_too_large", f"{where}: {what}; split the service or trim the document.")


def over(where: str, what: str) -> ApiError:
    return ApiError("unprocessable", f"{where}: {what}; split the service or trim the document.")


def check_size(text: str | bytes, where: str) -> None:
    """MAX_DOCUMENT_BYTES of UTF-8, checked without copying a text that is clearly within it."""
    if isinstance(text, (bytes, bytearray)) or len(text) > MAX_DOCUMENT_BYTES:
        size = len(text)
    elif len(text) * 4 <= MAX_DOCUMENT_BYTES:
        return
    else:
        size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_DOCUMENT_BYTES:
        raise too_large(where, f"the document is over {MAX_DOCUMENT_BYTES // MiB} MiB")


def _yaml_events(text: str, where: str) -> int:
    """Parser events of a YAML text, counted without building it; stops past the limit. Aliases
    are also expanded in the count (an anchor's size, not 1), so a "billion laughs" document,
    tiny as text, is refused before any walker could meet its expansion."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    count = 0
    sizes: dict = {}          # anchor -> expanded values in it
    stack: list = [[None, 0]]  # open collections: [anchor, expanded values so far]
    try:
        for event in yaml.parse(text, Loader=loader):
            count += 1
            if count > MAX_DOCUMENT_NODES:
                return count
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                stack.append([event.anchor, 1])
                continue
            if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)) and len(stack) > 1:
                anchor, size = stack.pop()
            elif isinstance(event, yaml.ScalarEvent):
                anchor, size = event.anchor, 1
            elif isinstance(event, yaml.AliasEvent):
                anchor, size = None, sizes.get(event.anchor, 1)
            else:
                continue
            if anchor is not None:
                sizes[anchor] = size
            stack[-1][1] += size
            if stack[-1][1] > MAX_EXPANDED_NODES:
                raise too_large(where, f"its YAML aliases expand to more than {MAX_EXPANDED_NODES:,} values")
    except yaml.YAMLError:
        return count  # the real load reports where the syntax is wrong
    return count


def check_nodes(text: str, fmt: str, where: str) -> None:
    """MAX_DOCUMENT_NODES before the parser builds anything."""
    if fmt == "toml":
        count = text.count("=") + text.count("[") + text.count("{")
    else:
        brackets = text.count("{") + text.count("[")
        if brackets > MAX_DOCUMENT_NODES:
            raise too_large(where, f"the document has more than {MAX_DOCUMENT_NODES:,} values")
        if brackets > MAX_NESTING:
            check_nesting(text, where)
        if text.lstrip().startswith(("{", "[")):   # JSON, or YAML flow style: the same characters count
            count = brackets + text.count(",")
        else:
            count = _yaml_events(text, where)
    if count > MAX_DOCUMENT_NODES:
        raise too_large(where, f"the document has more than {MAX_DOCUMENT_NODES:,} values")


def check_nesting(text: str, where: str) -> None:
    """Flow brackets nested deeper than MAX_NESTING: libyaml takes quadratic time over them
    (20,000 levels: 10 s; 100,000: minutes, and its loader crashes the process), so they are
    refused before any parser runs. Brackets inside strings count too (an upper bound)."""
    import re

    depth = 0
    for m in re.finditer(r"[\[\]{}]", text):
        if m.group() in "[{":
            depth += 1
            if depth > MAX_NESTING:
                raise ApiError("invalid_request", f"{where}: the document is nested more than {MAX_NESTING} levels deep.")
        elif depth:
            depth -= 1


def _count_label(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def check_operation_count(n: int, where: str) -> None:
    if n > MAX_OPERATIONS:
        raise over(where, f"{_count_label(n, 'operation')}, over the limit of {MAX_OPERATIONS:,} per service")


def check_param_count(n: int, where: str) -> None:
    if n > MAX_PARAMS:
        raise over(where, f"{_count_label(n, 'parameter')}, over the limit of {MAX_PARAMS:,} per operation")


def check_toml_shape(d: Any, where: str) -> None:
    """Operations and params of a TOML definition, counted before any is built."""
    if not isinstance(d, dict):
        return
    ops = d.get("operations")
    if isinstance(ops, list):
        check_operation_count(len(ops), where)
        for i, op in enumerate(ops, 1):
            params = op.get("params") if isinstance(op, dict) else None
            if isinstance(params, list):
                check_param_count(len(params), f"{where} operation {i}")
    triggers = d.get("triggers")
    if isinstance(triggers, list):
        if len(triggers) > MAX_OPERATIONS:
            raise over(where, f"{_count_label(len(triggers), 'trigger')}, over the limit of {MAX_OPERATIONS:,} per service")


def count_openapi_operations(paths: dict, resolve: Callable[[Any], tuple[object, str | None]]) -> int:
    """Methods under paths (path items behind a local $ref included), before any is built."""
    n = 0
    for raw_item in paths.values():
        item, _ = resolve(raw_item)
        if isinstance(item, dict):
            n += sum(1 for m in HTTP_METHODS if isinstance(item.get(m), dict))
    return n


class SchemaBudget:
    """Steps the schema walkers may take: per operation and for the whole document."""

    def __init__(self, where: str):
        self.where = where
        self.label = ""
        self.left = MAX_SCHEMA_STEPS
        self.document_left = MAX_DOCUMENT_SCHEMA_STEPS

    def begin(self, label: str) -> None:
        self.label = label
        self.left = MAX_SCHEMA_STEPS

    def spend(self) -> None:
        self.left -= 1
        self.document_left -= 1
        if self.left < 0:
            raise over(self.where, f"operation {self.label[:120]} expands its schemas ($ref, allOf) beyond "
                                   f"{MAX_SCHEMA_STEPS:,} steps")
        if self.document_left < 0:
            raise over(self.where, f"the document's schemas expand beyond {MAX_DOCUMENT_SCHEMA_STEPS:,} steps")
