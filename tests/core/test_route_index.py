"""engine/route_index.py, generated from the @route declarations: it is fresh (the generator's
--check), every route in it is declared by the module it names with the scope it names, and a
declaration or an index entry that disagrees is an error (at import or on first use), never a
silent 404 or a wrong scope check."""
from __future__ import annotations

import subprocess
import sys

import pytest

from workspacectl.engine import registry, route_gen
from workspacectl.engine.route_index import ROUTE_INDEX
from workspacectl.engine.scopes import ROUTE_SCOPES, SESSION


def test_the_index_is_fresh():
    """Fails when a route was declared, removed or changed without `python -m workspacectl.engine.route_gen`."""
    p = subprocess.run([sys.executable, "-m", "workspacectl.engine.route_gen", "--check"], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr


def test_a_stale_index_is_reported_with_the_command_that_fixes_it(tmp_path, monkeypatch, capsys):
    stale = dict(ROUTE_INDEX)
    stale.pop(("GET", "/v1/keys"))
    stale[("GET", "/v1/triggers")] = (SESSION, "workspacectl.engine.catalog.triggers")
    monkeypatch.setattr(route_gen, "INDEX", tmp_path / "route_index.py")
    route_gen.INDEX.write_text(route_gen.render(stale), encoding="utf-8")
    assert route_gen.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "stale; regenerate it: python -m workspacectl.engine.route_gen" in err
    assert '+    ("GET", "/v1/keys"): ("session", "workspacectl.engine.identity.keys"),' in err
    assert '-    ("GET", "/v1/triggers"): ("session", ' in err
    assert route_gen.main([]) == 0 and route_gen.main(["--check"]) == 0   # regenerated: fresh


def test_every_indexed_route_is_declared_by_its_module_with_its_scope():
    registry.load_all()
    assert set(registry.DECLARED) == set(ROUTE_INDEX) == set(ROUTE_SCOPES)
    for key, declared in registry.DECLARED.items():
        assert ROUTE_INDEX[key] == (declared.scope, declared.module), key
        assert declared.module.startswith("workspacectl.engine."), key   # full dotted names, so a rename finds them
        assert registry.HANDLERS[key] is declared.handler


def test_a_declaration_the_index_does_not_match_is_refused_at_import():
    with pytest.raises(RuntimeError, match=r"GET /v1/keys \(scope session, in tests\.core\.test_route_index\) does "
                                           r"not match engine/route_index.py .*python -m workspacectl.engine.route_gen"):
        @registry.route("GET", "/v1/keys", scope=SESSION)
        def list_keys_elsewhere(ctx):
            return {}
    with pytest.raises(RuntimeError, match=r"GET /v1/nowhere .*\(None\); regenerate it"):
        @registry.route("GET", "/v1/nowhere", scope=SESSION)
        def undeclared(ctx):
            return {}
    kept = registry.DECLARED.get(("GET", "/v1/keys"))
    assert kept is None or kept.module == "workspacectl.engine.identity.keys"   # nothing was registered
    assert ("GET", "/v1/nowhere") not in registry.HANDLERS


def test_a_route_its_module_does_not_declare_is_an_error_not_a_404(monkeypatch):
    route = next(r for r in registry.ROUTES if (r.method, r.path) == ("GET", "/v1/triggers"))
    key = ("GET", "/v1/triggers")
    monkeypatch.delitem(registry.HANDLERS, key, raising=False)
    monkeypatch.setitem(ROUTE_INDEX, key, ("triggers:manage", "workspacectl.engine.ids"))   # a module without routes
    with pytest.raises(RuntimeError, match=r"workspacectl\.engine\.ids does not declare GET /v1/triggers"):
        registry.handler_for(route)
    monkeypatch.setitem(ROUTE_INDEX, key, ("triggers:manage", "workspacectl.engine.not_written"))
    with pytest.raises(ModuleNotFoundError):
        registry.handler_for(route)
