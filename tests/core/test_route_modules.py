"""engine/route_modules.py: every path of the scope table names the one module that registers
its routes, each module registers exactly the routes mapped to it, and a mismatch is an error
(at import or on first use), never a silent 404."""
from __future__ import annotations

import pytest

from workspacectl.engine import registry
from workspacectl.engine.route_modules import ROUTE_MODULES
from workspacectl.engine.scopes import ROUTE_SCOPES


def test_the_table_maps_every_path_of_the_scope_table_and_nothing_else():
    assert set(ROUTE_MODULES) == {path for _, path in ROUTE_SCOPES}
    for module in ROUTE_MODULES.values():   # full dotted names, so a rename finds them
        assert module.startswith("workspacectl.engine."), module


def test_each_module_registers_exactly_the_routes_mapped_to_it():
    registry.load_all()
    assert set(registry.HANDLERS) == set(ROUTE_SCOPES)   # every route has a handler
    by_module: dict[str, set] = {}
    for (method, path), fn in registry.HANDLERS.items():
        by_module.setdefault(fn.__module__, set()).add((method, path))
    for module in set(ROUTE_MODULES.values()):
        mapped = {key for key in ROUTE_SCOPES if ROUTE_MODULES[key[1]] == module}
        assert by_module.get(module) == mapped, module


def test_a_handler_in_a_module_the_table_does_not_name_is_refused_at_import():
    with pytest.raises(RuntimeError, match="route_modules.py names workspacectl.engine.identity.keys"):
        @registry.route("GET", "/v1/keys")
        def list_keys_elsewhere(ctx):
            return {}
    kept = registry.HANDLERS.get(("GET", "/v1/keys"))
    assert kept is None or kept.__module__ == "workspacectl.engine.identity.keys"   # nothing was registered


def test_a_route_its_module_does_not_register_is_an_error_not_a_404(monkeypatch):
    route = next(r for r in registry.ROUTES if (r.method, r.path) == ("GET", "/v1/triggers"))
    monkeypatch.delitem(registry.HANDLERS, ("GET", "/v1/triggers"), raising=False)
    monkeypatch.setitem(ROUTE_MODULES, "/v1/triggers", "workspacectl.engine.ids")   # a module without routes
    with pytest.raises(RuntimeError, match="workspacectl.engine.ids does not register GET /v1/triggers"):
        registry.handler_for(route)
    monkeypatch.setitem(ROUTE_MODULES, "/v1/triggers", "workspacectl.engine.not_written")
    with pytest.raises(ModuleNotFoundError):
        registry.handler_for(route)

