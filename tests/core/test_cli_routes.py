"""Every `/v1/...` path the CLI and the backends send exists in the route table, with that method.

Collected statically from src/workspacectl/cli and src/workspacectl/backend: each string (or
f-string, or "..." + value) that starts with /v1/. Where the call names its method (a first argument
"GET", "POST", ...; or all_pages/download, which GET) the route must exist with that method;
otherwise (a path kept in a variable or a table) the path must exist with some method.
"""
from __future__ import annotations

import ast
from pathlib import Path

from workspacectl.engine import registry

SRC = Path(__file__).resolve().parents[2] / "src" / "workspacectl"
METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE"}
GETTERS = {"all_pages", "download"}


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
    return text.split("?", 1)[0]


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


def sent_paths() -> list[tuple[str, str | None, str]]:
    """(path, method or None, where) for every /v1 path in the CLI and the backends."""
    found: list[tuple[str, str | None, str]] = []
    trees = {str(file.relative_to(SRC)): ast.parse(file.read_text(encoding="utf-8"))
             for folder in ("cli", "backend") for file in sorted((SRC / folder).rglob("*.py"))}
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
            for i, arg in enumerate(args):
                path = path_text(arg, helpers)
                if path is None:
                    continue
                method = None
                if i > 0 and isinstance(args[i - 1], ast.Constant) and args[i - 1].value in METHODS:
                    method = args[i - 1].value
                elif name in GETTERS:
                    method = "GET"
                found.append((path, method, f"{where}:{arg.lineno}"))
                seen.update(id(n) for n in ast.walk(arg))
        for node in ast.walk(tree):
            path = path_text(node) if id(node) not in seen else None
            if path is not None:
                found.append((path, None, f"{where}:{node.lineno}"))
    return found


def wrong_paths(sent: list[tuple[str, str | None, str]]) -> list[str]:
    registry.load_all()
    wrong = []
    for path, method, where in sent:
        if path == "/v1/":   # `wsctl api` refuses a path outside /v1/
            continue
        if method is not None:
            route, _, _ = registry.match(method, path)
            if route is None or (route.method, route.path) not in registry.HANDLERS:
                wrong.append(f"{where}: {method} {path}")
        elif not any(registry.match(m, path)[0] for m in METHODS):
            wrong.append(f"{where}: {path} (no method has this path)")
    return wrong


def test_every_path_the_cli_sends_is_a_route_with_that_method():
    sent = sent_paths()
    assert len([s for s in sent if s[1]]) >= 60, sent   # the collector still finds the calls
    assert wrong_paths(sent) == []


def test_a_wrong_path_or_method_is_found():
    tree = ast.parse('be.request("GET", cred_path(cid, "/tokens"))\n'
                     'def cred_path(cred_id, suffix=""):\n    return f"/v1/credentials/{cred_id}{suffix}"')
    helpers = path_helpers(tree)
    assert path_text(tree.body[0].value.args[1], helpers) == "/v1/credentials/x1/tokens"
    sent = [("/v1/credentials/x1/tokens", "POST", "a"), ("/v1/auth/whoami", "DELETE", "b"),
            ("/v1/credentialz", None, "c"), ("/v1/credentials/x1/token", "POST", "d")]
    assert wrong_paths(sent) == ["a: POST /v1/credentials/x1/tokens", "b: DELETE /v1/auth/whoami",
                                 "c: /v1/credentialz (no method has this path)"]
