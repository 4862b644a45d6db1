"""CLI start-up: wall time of short commands, and which heavy modules they import.

    python bench/cli_startup.py [--runs 20]

Each command runs --runs times as a real `python -m workspacectl` subprocess (after one warm-up
run) against a fresh local workspace (WSCTL_WORKSPACE; the engine in-process); median, min and
max wall time. Then each runs once under `python -X importtime` and the table says whether
httpx, fastapi, uvicorn, starlette, cryptography and rich were imported, and the import time of
the workspacectl package tree as importtime reports it (least of 3 runs). Nothing is asserted.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import WSCTL, base_env, local_env, make_workspace, median, run_cli  # noqa: E402

COMMANDS = [("wsctl --help", ["--help"], False),
            ("local vault list", ["vault", "list"], True),
            ('local catalog search "send a message"', ["catalog", "search", "send a message"], True),
            ("local skill list", ["skill", "list"], True)]
HEAVY = ("httpx", "fastapi", "uvicorn", "starlette", "cryptography", "rich")


def imported(args: list[str], env: dict) -> tuple[set[str], float, float]:
    """(top-level modules imported, workspacectl tree cumulative s, all imports s) via -X importtime."""
    p = subprocess.run([sys.executable, "-X", "importtime", *WSCTL[1:], *args], env=env, capture_output=True,
                       text=True, timeout=60)
    tops, pkg_us, total_us = set(), 0, 0
    for line in p.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
        if not m:
            continue
        self_us, cumulative, indent, name = int(m.group(1)), int(m.group(2)), len(m.group(3)), m.group(4)
        tops.add(name.split(".")[0])
        total_us += self_us
        if name.startswith("workspacectl") and indent <= 1:   # a top-level import of the package tree
            pkg_us += cumulative
    return tops, pkg_us / 1e6, total_us / 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="wsctl-bench-startup-"))
    try:
        ws_path, _, _ = make_workspace(tmp)
        env_local = local_env(tmp, ws_path)
        env_bare = base_env(tmp / "bare-home")
        walls0 = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            walls0.append(time.perf_counter() - t0)
        print(f"{args.runs} runs per command; {os.cpu_count()} CPUs; bare `python -c pass` median "
              f"{median(walls0) * 1000:.0f} ms\n")
        print(f"{'command':<40} {'median':>8} {'min':>7} {'max':>7}   imports (-X importtime)")
        for label, cmd, local in COMMANDS:
            env = env_local if local else env_bare
            run_cli(cmd, env)   # warm-up (pyc, page cache, the workspace's first open)
            walls = [run_cli(cmd, env).wall for _ in range(args.runs)]
            samples = [imported(cmd, env) for _ in range(3)]   # -X importtime is noisy: the least of 3
            tops = samples[0][0]
            pkg_s, total_s = min(x[1] for x in samples), min(x[2] for x in samples)
            flags = " ".join(f"{m}={'YES' if m in tops else 'no'}" for m in HEAVY)
            print(f"{label:<40} {median(walls) * 1000:6.0f}ms {min(walls) * 1000:5.0f}ms {max(walls) * 1000:5.0f}ms"
                  f"   {flags}; imports {total_s * 1000:.0f} ms, workspacectl tree {pkg_s * 1000:.0f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
