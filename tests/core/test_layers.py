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
