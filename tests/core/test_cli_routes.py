"""Every `/v1/...` path the CLI, the backends and the agent door send is a declared route, with that
method, and the query parameters and body fields they spell are ones the route declares.

Collected statically from src/workspacectl/cli, backend, mcp_door and formats: each string (or
f-string, or "..." + value) that starts with /v1/. Where the call names its method (a first argument
"GET", "POST", ...; or all_pages/all_rows/list_table/download, which GET) the route must be declared
with that method (registry.DECLARED: the @route declarations, which the route index and
/v1/openapi.json are derived from); otherwise (a path kept in a variable or a table) the path must
exist with some method. Where such a call spells its query (`query={"name": ...}` or `?name=` in
the path) or its JSON body (`body={"field": ...}`) as a literal, each name must be one the route
declares (`query=`, or a property of its closed `body=` schema), so the CLI and the API reference
cannot drift apart.
"""
from __future__ import annotations

import ast
from pathlib import Path

from workspacectl.engine import registry

SRC = Path(__file__).resolve().parents[2] / "src" / "workspacectl"
METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}
GETTERS = {"all_pages", "all_rows", "list_table", "download"}
FOLDERS = ("cli", "backend", "mcp_door", "formats")


def path_text(node: ast.AST, helpers: dict | None = None) -> str | None:
    """The path a node spells, each interpolated value as one segment 'x1' (a `suffix` value as
    {suffix}); a call of a path helper as its template. None if not a /v1 path."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = "".join(v.value if isinstance(v, ast.Constant) else
                       "{suffix}" if isinstance(v.value, ast.Name) and v.value.id == "suffix" else "x1"
                       for v in node.values)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = path_text(node.left)
        text = None if left is None else left + "x1"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in (helpers or {}):
        template, at = helpers[node.func.id]
        given = node.args[at] if at is not None and len(node.args) > at else next(
            (k.value for k in node.keywords if k.arg == "suffix"), None)
        if isinstance(given, ast.JoinedStr):
            suffix = "".join(v.value if isinstance(v, ast.Constant) else "x1" for v in given.values)
        else:
            suffix = given.value if isinstance(given, ast.Constant) else ""
        text = template.replace("{suffix}", suffix)
    else:
        return None
    if text is None or not text.startswith("/v1/"):
        return None
    return text


def path_helpers(tree: ast.Module) -> dict[str, tuple[str, int | None]]:
    """Functions answering one /v1 f-string (cred_path(id, suffix="")): name -> (template, the
    position of their `suffix` parameter)."""
    out = {}
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and len(fn.body) >= 1 and isinstance(fn.body[-1], ast.Return):
            text = path_text(fn.body[-1].value) if fn.body[-1].value is not None else None
            if text is not None:
                names = [a.arg for a in fn.args.args]
                out[fn.name] = (text, names.index("suffix") if "suffix" in names else None)
    return out


def literal_keys(node: ast.AST | None) -> frozenset[str] | None:
    """The constant keys of a dict literal (spread parts skipped), also as either branch of
    `{...} if x else None`; None when the node spells no dict."""
    if isinstance(node, ast.IfExp):
        keys = [k for k in (literal_keys(node.body), literal_keys(node.orelse)) if k is not None]
        return frozenset().union(*keys) if keys else None
    if isinstance(node, ast.Dict):
        return frozenset(k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
    return None


def sent_paths() -> list[tuple[str, str | None, str]]:
    """(path, method or None, where) for every /v1 path sent (without its query string)."""
    return [(path, method, where) for path, method, where, _query, _body in sent_calls()]


def sent_calls() -> list[tuple[str, str | None, str, frozenset[str] | None, frozenset[str] | None]]:
    """(path, method or None, where, query names, body fields) for every /v1 path in the CLI, the
    backends and the agent door; the names are those spelled as literals (None: none spelled)."""
    found: list[tuple[str, str | None, str, frozenset[str] | None, frozenset[str] | None]] = []
    trees = {str(file.relative_to(SRC)): ast.parse(file.read_text(encoding="utf-8"))
             for folder in FOLDERS for file in sorted((SRC / folder).rglob("*.py"))}
    own = {where: path_helpers(tree) for where, tree in trees.items()}
    # a helper another module imports (cli/specialist/refs.project_path): known everywhere when its
    # name means one template; a module's own helper of that name comes first
    templates: dict[str, set] = {}
    for helpers in own.values():
        for name, spec in helpers.items():
            templates.setdefault(name, set()).add(spec)
    shared = {name: next(iter(specs)) for name, specs in templates.items() if len(specs) == 1}
    for where, tree in trees.items():
        helpers = {**shared, **own[where]}
        seen: set[int] = set()   # nodes already read (as a call's path, or a part of an f-string)
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                seen.update(id(v) for v in node.values)
            if isinstance(node, ast.FunctionDef) and node.name in helpers:
                seen.update(id(n) for n in ast.walk(node))
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            args = list(node.args)
            keywords = {k.arg: k.value for k in node.keywords}
            for i, arg in enumerate(args):
                text = path_text(arg, helpers)
                if text is None:
                    continue
                path, _, inline = text.partition("?")
                method = None
                if i > 0 and isinstance(args[i - 1], ast.Constant) and args[i - 1].value in METHODS:
                    method = args[i - 1].value
                elif name in GETTERS:
                    method = "GET"
                query = literal_keys(keywords.get("query"))
                if inline:
                    query = (query or frozenset()) | {part.split("=", 1)[0] for part in inline.split("&") if part}
                found.append((path, method, f"{where}:{arg.lineno}", query, literal_keys(keywords.get("body"))))
                seen.update(id(n) for n in ast.walk(arg))
        for node in ast.walk(tree):
            text = path_text(node) if id(node) not in seen else None
            if text is not None:
                found.append((text.split("?", 1)[0], None, f"{where}:{node.lineno}", None, None))
    return found


def body_fields(schema: dict | None) -> set[str] | None:
    """The fields a declared body takes (of every oneOf branch); None when it takes any (open)."""
    if schema is None:
        return set()
    if "oneOf" in schema:
        branches = [body_fields(s) for s in schema["oneOf"]]
        return None if any(b is None for b in branches) else set().union(*branches)
    if schema.get("additionalProperties", True) is not False:
        return None
    return set(schema.get("properties", {}))


def wrong_fields(sent: list[tuple[str, str | None, str, frozenset[str] | None, frozenset[str] | None]]) -> list[str]:
    """Query names and body fields sent that the matched route does not declare."""
    registry.load_all()
    wrong = []
    for path, method, where, query, body in sent:
        if method is None:
            continue
        route, _, _ = registry.match(method, path)
        declared = registry.DECLARED.get((route.method, route.path)) if route else None
        if declared is None:
            continue   # wrong_paths reports it
        names = {q["name"] for q in declared.query}
        for name in sorted((query or set()) - names):
            wrong.append(f"{where}: {method} {route.path} does not declare query parameter {name!r}")
        fields = body_fields(declared.body)
        for field in sorted((body or set()) - fields if fields is not None else set()):
            wrong.append(f"{where}: {method} {route.path} does not declare body field {field!r}")
    return wrong


def wrong_paths(sent: list[tuple[str, str | None, str]]) -> list[str]:
    registry.load_all()
    wrong = []
    for path, method, where in sent:
        if path == "/v1/":   # `wsctl api` refuses a path outside /v1/
            continue
        if path.endswith("/"):   # a prefix ("/v1/credentials/" + id): a route's path continues it
            if not any(registry.match(m, path + "x1")[0] for m in METHODS):
                wrong.append(f"{where}: {path}... (no route continues this path)")
            continue
        if method is not None:
            route, _, _ = registry.match(method, path)
            if route is None or (route.method, route.path) not in registry.DECLARED:
                wrong.append(f"{where}: {method} {path}")
        elif not any(registry.match(m, path)[0] for m in METHODS):
            wrong.append(f"{where}: {path} (no method has this path)")
    return wrong


def test_every_path_the_cli_sends_is_a_route_with_that_method():
    sent = sent_paths()
    assert len([s for s in sent if s[1]]) >= 60, sent   # the collector still finds the calls
    assert {where.split("/", 1)[0] for _, _, where in sent} >= {"cli", "backend", "mcp_door", "formats"}
    assert wrong_paths(sent) == []


def test_every_query_parameter_and_body_field_the_cli_spells_is_declared():
    calls = sent_calls()
    assert len([c for c in calls if c[1] and c[3]]) >= 10, calls   # the collector still finds queries
    assert len([c for c in calls if c[1] and c[4]]) >= 10, calls   # and bodies
    assert wrong_fields(calls) == []


def test_a_wrong_path_or_method_is_found():
    tree = ast.parse('be.request("GET", cred_path(cid, "/tokens"))\n'
                     'def cred_path(cred_id, suffix=""):\n    return f"/v1/credentials/{cred_id}{suffix}"')
    helpers = path_helpers(tree)
    assert path_text(tree.body[0].value.args[1], helpers) == "/v1/credentials/x1/tokens"
    sent = [("/v1/credentials/x1/tokens", "POST", "a"), ("/v1/auth/whoami", "DELETE", "b"),
            ("/v1/credentialz", None, "c"), ("/v1/credentials/x1/token", "POST", "d"),
            ("/v1/credentials/x1/proxy/", None, "e"), ("/v1/credentials/x1/proxi/", None, "f")]
    assert wrong_paths(sent) == ["a: POST /v1/credentials/x1/tokens", "b: DELETE /v1/auth/whoami",
                                 "c: /v1/credentialz (no method has this path)",
                                 "f: /v1/credentials/x1/proxi/... (no route continues this path)"]


def test_an_undeclared_query_parameter_or_body_field_is_found():
    tree = ast.parse('be.request("GET", "/v1/credentials?servise=x", query={"limit": "1", **q})\n'
                     'be.request("POST", f"/v1/credentials/{cid}/token", body={"reason": r, "why": w})\n'
                     'be.request("PUT", f"/v1/vault/credentials/{cid}/data", body={"anyField": v})\n')
    calls = [c.value for c in tree.body]
    assert literal_keys(calls[0].keywords[0].value) == {"limit"}
    sent = [("/v1/credentials", "GET", "a", frozenset({"limit", "servise"}), None),
            ("/v1/credentials/x1/token", "POST", "b", None, frozenset({"reason", "why"})),
            ("/v1/vault/credentials/x1/data", "PUT", "c", None, frozenset({"anyField"}))]   # an open body
    assert wrong_fields(sent) == ["a: GET /v1/credentials does not declare query parameter 'servise'",
                                  "b: POST /v1/credentials/{id}/token does not declare body field 'why'"]
