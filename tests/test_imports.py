"""Import hygiene (STYLE: import lazily on the command path): local commands and --help never
load the HTTP stack, and `python -m workspacectl` works."""
from __future__ import annotations

import json
import subprocess
import sys

from workspacectl import __version__

from tests.conftest import OWNER, base_env, run_wsctl

HTTP_STACK = ("httpx", "httpcore", "fastapi", "starlette", "uvicorn")

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
    assert not set(answer["loaded"]) & set(HTTP_STACK)  # nor by importing the CLI itself


def test_python_m_workspacectl_version(tmp_path):
    assert run_wsctl(["--version"], base_env(tmp_path / "home")).out == f"wsctl {__version__}\n"
