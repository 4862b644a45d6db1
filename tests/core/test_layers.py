"""The layers hold: `lint-imports` checks the contracts in pyproject.toml ([tool.importlinter])."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept():
    exe = Path(sys.executable).parent / "lint-imports"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run([str(exe), "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert "BROKEN" not in p.stdout and " kept, 0 broken" in p.stdout, p.stdout[-2000:]


def import_circles(graph) -> set[frozenset]:
    """The strongly connected components of more than one module (imports inside functions count;
    imports only for type checking do not run, so they do not)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: set[frozenset] = set()
    for root in modules:   # Tarjan's algorithm, iteratively (no recursion limit)
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.add(m)
                    if m == node:
                        break
                if len(component) > 1:
                    circles.add(frozenset(component))
    return circles


def test_no_import_circle_between_our_modules():
    """Two modules that need each other share a third, below both, named for what it holds (as
    skills/records.py, catalog/definition_values.py, server/pages.py, cli/common/state.py): an import moved
    inside a function still counts here."""
    import grimp

    sys.path.insert(0, str(ROOT / "src"))
    circles = import_circles(grimp.build_graph("workspacectl", cache_dir=None, exclude_type_checking_imports=True))
    assert circles == set(), sorted(sorted(c) for c in circles)


def test_the_circle_finder_finds_a_circle():
    class Graph:
        modules = {"a", "b", "c", "d"}
        imports = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, m):
            return self.imports[m]

    assert import_circles(Graph()) == {frozenset({"a", "b", "c"})}
