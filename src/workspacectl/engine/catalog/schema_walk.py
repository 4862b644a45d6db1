"""JSON Schema inside one OpenAPI document: `$ref` resolution and the readable forms made of it.

`Resolver` follows local `$ref`s with cycle protection and never fetches a remote one;
`type_name`, `shape` and `sample` turn schemas into short type names, depth-limited response
shapes and example values, each bounded so a hostile document cannot make the import run away.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from workspacectl.engine.catalog.definition_values import jsonable

if TYPE_CHECKING:
    from workspacectl.engine.catalog.limits import SchemaBudget

SHAPE_DEPTH = 3
MAX_PROPERTIES = 40
SHAPE_NODES = 400
MAX_REF_HOPS = 32


class Resolver:
    """Follows `$ref`s inside one document. Remote refs answer (None, name)."""

    def __init__(self, root: dict, budget: SchemaBudget | None = None) -> None:
        self.root = root
        self.cache: dict[str, object] = {}
        self.budget = budget  # catalog_limits.SchemaBudget: every resolve is a step

    @staticmethod
    def ref_name(ref: str) -> str:
        tail = ref.split("#", 1)[1] if "#" in ref else ref
        tail = tail.rstrip("/").rsplit("/", 1)[-1] or ref.rstrip("/").rsplit("/", 1)[-1]
        return unquote(tail.replace("~1", "/").replace("~0", "~"))[:200]

    def lookup(self, ref: str) -> object:
        if not ref.startswith("#"):
            return None
        if ref in self.cache:
            return self.cache[ref]
        node: object = self.root
        for part in ref[1:].split("/"):
            if part == "":
                continue
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                node = None
                break
        self.cache[ref] = node
        return node

    def resolve(self, node: Any) -> tuple[object, str | None]:
        """(the node a chain of $refs ends at, the last ref's name); (None, name) when unresolvable."""
        if self.budget is not None:
            self.budget.spend()
        name = None
        seen: set[str] = set()
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            name = self.ref_name(ref)
            if ref in seen or len(seen) >= MAX_REF_HOPS:
                return None, name
            seen.add(ref)
            node = self.lookup(ref)
        return node, name


# --- schemas ---------------------------------------------------------------------------------

def _type_of(schema: dict) -> str | None:
    t = schema.get("type")
    if isinstance(t, list):
        names = [x for x in t if isinstance(x, str)]
        return " | ".join(names) if names else None
    return t if isinstance(t, str) else None


def type_name(r: Resolver, schema: Any, depth: int = 0) -> str:
    """A short type: 'string', 'integer', 'Customer', 'array of Customer', 'A | B'."""
    node, name = r.resolve(schema)
    if not isinstance(node, dict):
        return name or "any"
    if depth > 3:
        return name or _type_of(node) or "object"
    t = _type_of(node)
    if t == "array":
        return f"array of {type_name(r, node.get('items'), depth + 1)}"
    if name and (t in (None, "object") or "properties" in node or "allOf" in node):
        return name
    for key in ("oneOf", "anyOf"):
        alts = node.get(key)
        if isinstance(alts, list) and alts:
            return " | ".join(dict.fromkeys(type_name(r, a, depth + 1) for a in alts[:6]))
    alls = node.get("allOf")
    if isinstance(alls, list) and len(alls) == 1:
        return type_name(r, alls[0], depth + 1)
    if t:
        fmt = node.get("format")
        return f"{t} ({fmt})" if isinstance(fmt, str) and t in ("string", "integer", "number") else t
    if "properties" in node or alls:
        return name or "object"
    return name or "any"


def shape(r: Resolver, schema: Any, depth: int = 0, stack: frozenset = frozenset(), budget: list | None = None) -> Any:
    """A response shape: {field: shape}, [shape] or a type name; cycles, depth and a node budget
    end in names."""
    budget = [SHAPE_NODES] if budget is None else budget
    budget[0] -= 1
    node, name = r.resolve(schema)
    if not isinstance(node, dict):
        return name or "any"
    if (name and name in stack) or depth >= SHAPE_DEPTH or budget[0] < 0:
        return type_name(r, schema)
    stack = stack | {name} if name else stack
    t = _type_of(node)
    if t == "array" or (t is None and "items" in node):
        return [shape(r, node.get("items"), depth + 1, stack, budget)]
    props = merged_properties(r, node, stack)
    if props:
        out = {}
        for k, v in list(props.items())[:MAX_PROPERTIES]:
            out[str(k)] = shape(r, v, depth + 1, stack, budget)
        if len(props) > MAX_PROPERTIES:
            out["…"] = f"{len(props) - MAX_PROPERTIES} more fields"
        return out
    return type_name(r, schema)


def merged_properties(r: Resolver, node: dict, stack: frozenset, depth: int = 0) -> dict:
    props: dict = {}
    if depth > 6:
        return props
    own = node.get("properties")
    if isinstance(own, dict):
        props.update(own)
    all_of = node.get("allOf")
    for part in all_of if isinstance(all_of, list) else []:
        sub, name = r.resolve(part)
        if isinstance(sub, dict) and not (name and name in stack):
            for k, v in merged_properties(r, sub, stack, depth + 1).items():
                props.setdefault(k, v)
    return props


def required_of(r: Resolver, node: dict, depth: int = 0) -> set[str]:
    req = set(x for x in node.get("required") or [] if isinstance(x, str)) if isinstance(node.get("required"), list) else set()
    if depth < 6:
        all_of = node.get("allOf")
        for part in all_of if isinstance(all_of, list) else []:
            sub, _ = r.resolve(part)
            if isinstance(sub, dict):
                req |= required_of(r, sub, depth + 1)
    return req


def sample(r: Resolver, schema: Any, name: str, given: Any = None) -> Any:
    """An example value: the document's example or default, an enum value, else a placeholder."""
    if given is not None:
        return jsonable(given)
    node, _ = r.resolve(schema)
    if isinstance(node, dict):
        for key in ("example", "default"):
            if node.get(key) is not None and not isinstance(node.get(key), (dict, list)):
                return jsonable(node[key])
        examples = node.get("examples")
        if isinstance(examples, list) and examples and not isinstance(examples[0], (dict, list)):
            return jsonable(examples[0])
        enum = node.get("enum")
        if isinstance(enum, list) and enum and enum[0] is not None:
            return jsonable(enum[0])
        t = _type_of(node) or ""
        if t.startswith("integer") or t.startswith("number"):
            return 0
        if t.startswith("boolean"):
            return True
        if t.startswith("array"):
            return []
        if t.startswith("object") or "properties" in node:
            return {}
    return f"<{name}>"
