"""Writes engine/route_index.py from the @route declarations: `python -m workspacectl.engine.route_gen`.

A route is declared once, beside its handler (registry.route). A door must know two things before
it imports the handler's module: the scope to check (before anything is looked up) and which
module declares the route (imported on the route's first request, so a command loads only its
own wing). Those two are generated into engine/route_index.py, a plain table that imports nothing.

    python -m workspacectl.engine.route_gen           rewrite engine/route_index.py
    python -m workspacectl.engine.route_gen --check   exit 1, naming what differs, when it is stale

The declarations are collected by importing every engine module whose source holds `@route(`,
with the index check of registry.route turned off. tests/core/test_route_index.py runs --check.
"""
from __future__ import annotations

import difflib
import importlib
import sys
from pathlib import Path

ENGINE = Path(__file__).resolve().parent
INDEX = ENGINE / "route_index.py"

_HEADER = '''"""The route index, GENERATED from the @route declarations: do not edit; regenerate it with
`python -m workspacectl.engine.route_gen` (tests/core/test_route_index.py fails when it is stale).

(method, path template) -> (scope, the module declaring the route). A door checks the scope before
anything is looked up, and imports the module on the route's first request (registry.handler_for),
so a local `wsctl vault list` loads the vault wing only. Everything else about a route (its body,
answers, summary and handler) is in its declaration, beside the handler.
"""
from __future__ import annotations

ROUTE_INDEX: dict[tuple[str, str], tuple[str, str]] = {
'''
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def declaring_modules() -> list[str]:
    """Every engine module whose source declares a route."""
    names = []
    for file in sorted(ENGINE.rglob("*.py")):
        if file == Path(__file__).resolve() or "@route(" not in file.read_text(encoding="utf-8"):
            continue
        parts = file.relative_to(ENGINE).with_suffix("").parts
        names.append(".".join(("workspacectl", "engine", *parts)))
    return names


def collect() -> dict[tuple[str, str], tuple[str, str]]:
    """(method, path) -> (scope, module) of every declaration, importing the modules that hold them."""
    from workspacectl.engine import registry

    registry.CHECK_INDEX = False
    try:
        for module in declaring_modules():
            importlib.import_module(module)
    finally:
        registry.CHECK_INDEX = True
    return {key: (d.scope, d.module) for key, d in registry.DECLARED.items()}


def render(index: dict[tuple[str, str], tuple[str, str]]) -> str:
    """The text of route_index.py: routes grouped by module, by path, then in _METHODS order."""
    def order(item: tuple[tuple[str, str], tuple[str, str]]) -> tuple[str, str, int]:
        (method, path), (_scope, module) = item
        return module, path, _METHODS.index(method) if method in _METHODS else len(_METHODS)

    lines = [_HEADER]
    module = None
    for (method, path), (scope, owner) in sorted(index.items(), key=order):
        if owner != module:
            lines.append(f"    # {owner}\n")
            module = owner
        lines.append(f"    ({method!r}, {path!r}): ({scope!r}, {owner!r}),\n".replace("'", '"'))
    lines.append("}\n")
    return "".join(lines)


def main(argv: list[str]) -> int:
    text = render(collect())
    current = INDEX.read_text(encoding="utf-8") if INDEX.exists() else ""
    if "--check" in argv:
        if text == current:
            return 0
        diff = "".join(difflib.unified_diff(current.splitlines(True), text.splitlines(True),
                                            "engine/route_index.py", "from the declarations"))
        print(f"engine/route_index.py is stale; regenerate it: python -m workspacectl.engine.route_gen\n{diff}",
              file=sys.stderr)
        return 1
    if text != current:
        INDEX.write_text(text, encoding="utf-8")
        print(f"wrote {INDEX}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
