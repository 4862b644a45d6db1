"""Import hygiene (STYLE: import lazily on the command path): local commands and --help never
load the HTTP stack, and `python -m workspacectl` works."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import OWNER, base_env, run_wsctl
from workspacectl import __version__

HTTP_STACK = ("httpx", "httpcore", "fastapi", "starlette", "uvicorn")
# The server's event loop (engine/db/quick.py and the HTTP layer): ~25 modules a local command does without.
SERVER_ONLY = ("asyncio", "ssl", "concurrent")

# Runs several commands in one interpreter, as `wsctl` would run each, and reports after each
# one the top-level packages it imported, its exit code and its output; then all packages loaded.
PROBE = r"""
import contextlib, io, json, sys
from workspacectl.cli.main import main

report = []
for argv in json.loads(sys.argv[1]):
    before = set(sys.modules)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main(argv)
            code = None
        except SystemExit as e:
            code = e.code
    new = sorted({m.split(".")[0] for m in set(sys.modules) - before})
    report.append({"argv": argv, "code": code, "out": out.getvalue(), "imported": new})
print(json.dumps({"runs": report, "loaded": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def test_help_and_local_commands_do_not_import_the_http_stack(workspace, home):
    commands = [["--help"], ["members", "list"], ["vault", "list", "--json"]]
    env = {**base_env(home), "WSCTL_WORKSPACE": str(workspace)}
    p = subprocess.run([sys.executable, "-c", PROBE, json.dumps(commands)], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    answer = json.loads(p.stdout)
    report = answer["runs"]
    assert [r["code"] for r in report] == [0, 0, 0], report
    assert "members" in report[0]["out"] and OWNER["email"] in report[1]["out"]
    assert json.loads(report[2]["out"])["credentials"] == []
    for r in report:
        assert not set(r["imported"]) & set(HTTP_STACK), (r["argv"], sorted(set(r["imported"]) & set(HTTP_STACK)))
        assert "numpy" not in r["imported"], r["argv"]     # only search and catalog import load it
        assert not set(r["imported"]) & set(SERVER_ONLY), (r["argv"], sorted(set(r["imported"]) & set(SERVER_ONLY)))
    assert not set(answer["loaded"]) & set(HTTP_STACK)  # nor by importing the CLI itself


def test_python_m_workspacectl_version(tmp_path):
    assert run_wsctl(["--version"], base_env(tmp_path / "home"), fresh=True).out == f"wsctl {__version__}\n"


# The engine's areas are its wing packages (engine/<area>/). Modules every area shares (registry,
# dispatch, db, workspace, validate, pagination, housekeeping, store/...) sit at engine/'s top level
# and are in none; formats/ (the tar reader/writer, skill bundle format, env text) is below them all.
WINGS = ("identity", "vault", "catalog", "projects", "memory", "skills", "openapi")
# Opening a workspace checks that the built-in catalog is loaded (a new version may ship more).
OPENED_BY_EVERY_COMMAND = {"workspacectl.engine.catalog.builtins"}


def area_of(module: str) -> str | None:
    """The wing a module belongs to (a wing's bare package __init__ holds only a docstring: none)."""
    parts = module.split(".")
    if module in OPENED_BY_EVERY_COMMAND:
        return None
    if len(parts) >= 4 and parts[:2] == ["workspacectl", "engine"] and parts[2] in WINGS:
        return parts[2]
    return None

# One command in a fresh interpreter, as `wsctl` runs it; then the workspacectl modules it loaded.
ONE_COMMAND = r"""
import contextlib, io, json, sys
from workspacectl.cli.main import main

with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(json.loads(sys.argv[1]))
    except SystemExit as e:
        code = e.code
print(json.dumps({"code": code, "modules": sorted(m for m in sys.modules if m.startswith("workspacectl."))}))
"""


def test_a_local_command_loads_its_own_area_only(workspace, home):
    from workspacectl.engine.route_index import ROUTE_INDEX

    env = {**base_env(home), "WSCTL_WORKSPACE": str(workspace)}
    run_wsctl(["members", "list"], env)   # the hourly housekeeping runs here, not in the probes below
    commands = {("vault", "list", "--json"): ("vault", {"workspacectl.engine.vault.routes"}),
                ("members", "list", "--json"): ("identity", {"workspacectl.engine.identity.members",
                                                                "workspacectl.engine.identity.auth"}),  # login codes
                ("skill", "list", "--json"): ("skills", {"workspacectl.engine.skills.routes"}),
                ("specialist", "list", "--json"): ("projects", {"workspacectl.engine.projects.routes"}),
                ("catalog", "integrations", "--json"): ("catalog", {"workspacectl.engine.catalog.routes"})}
    for argv, (area, route_modules) in commands.items():
        p = subprocess.run([sys.executable, "-c", ONE_COMMAND, json.dumps(argv)], env=env, capture_output=True,
                           text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        report = json.loads(p.stdout)
        assert report["code"] == 0, (argv, p.stderr)
        loaded = set(report["modules"])
        assert loaded & {module for _scope, module in ROUTE_INDEX.values()} == route_modules, argv
        foreign = sorted(m for m in loaded if area_of(m) not in (None, area))
        assert foreign == [], (argv, foreign)
        cli_groups = {m for m in loaded if m.startswith("workspacectl.cli.")} - {
            "workspacectl.cli.app", "workspacectl.cli.main", "workspacectl.cli.init", "workspacectl.cli.serve",
            "workspacectl.cli.api", "workspacectl.cli.common", "workspacectl.cli.common.context",
            "workspacectl.cli.common.state", "workspacectl.cli.common.config", "workspacectl.cli.common.paths",
            "workspacectl.cli.common.output", "workspacectl.cli.common.secrets_store",
            # shared by every group: --json FIELDS/--jq/--limit, choice types, the top-level completion/man,
            # the command class (metavars, usage line)
            "workspacectl.cli.common.scripting", "workspacectl.cli.common.choices", "workspacectl.cli.completion",
            "workspacectl.cli.common.usage"}
        # of the groups (cli/<group>/), only the command's own
        assert {m.split(".")[2] for m in cli_groups} == {argv[0]}, (argv, sorted(cli_groups))


def test_a_local_catalog_search_does_not_import_numpy(workspace, home):
    """numpy costs ~90 ms of CPU to import: a one-shot search over a small catalog does without."""
    env = {**base_env(home), "WSCTL_WORKSPACE": str(workspace)}
    assert run_wsctl(["catalog", "search", "send a message"], env).code == 0   # builds the index and vectors
    p = subprocess.run([sys.executable, "-c", PROBE, json.dumps([["catalog", "search", "post a message"]])],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    run = json.loads(p.stdout)["runs"][0]
    assert run["code"] == 0 and run["out"].strip(), run
    assert "numpy" not in run["imported"], run["imported"]


def test_a_command_line_builds_only_the_commands_it_names():
    """Typer builds a command by evaluating its function's annotations (strings here, compiled and
    evaluated twice): `wsctl vault list` builds `list` (with its --jq/--limit/--all) and none of
    vault's other commands, nor the top-level init/serve/api, nor another group."""
    import typer

    from workspacectl.cli.app import _Unloaded, build_app

    root = typer.main.get_command(build_app())
    assert all(isinstance(c, _Unloaded) for c in root.commands.values())
    vault = root.get_command(None, "vault")
    listed = vault.get_command(None, "list")
    assert not isinstance(listed, _Unloaded)
    assert {"json", "jq", "limit", "all"} <= {p.name for p in listed.params}
    assert sorted(n for n, c in vault.commands.items() if not isinstance(c, _Unloaded)) == ["list"]
    assert sorted(n for n, c in root.commands.items() if not isinstance(c, _Unloaded)) == ["vault"]


def test_a_command_listing_reads_as_the_built_commands_would():
    """`wsctl GROUP --help` lists the placeholders: each listed one says what the built command
    says, and the same ones are hidden."""
    import typer

    from workspacectl.cli.app import _Unloaded, build_app

    def walk(group):
        for name in list(group.commands):
            before = group.commands[name]
            built = group.get_command(None, name)
            if isinstance(before, _Unloaded):
                assert not isinstance(built, _Unloaded)
                assert before.hidden == built.hidden, name
                for width in (() if before.hidden else (20, 45, 70, 200)):   # a hidden one is not listed
                    assert before.get_short_help_str(width) == built.get_short_help_str(width), (name, width)
            if getattr(built, "commands", None) is not None:
                yield from walk(built)
            yield name

    assert len(list(walk(typer.main.get_command(build_app())))) > 100
