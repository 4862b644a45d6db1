"""CLI start-up against a bare Typer app, side by side, and which modules each command loads.

    python bench/cli_startup.py [--pairs 15] [--before OTHER/.venv/bin/python]

The yardstick is a bare two-command Typer app's `--help` on the same interpreter (what any Typer
CLI pays before doing anything). For each wsctl command, --pairs runs alternate the bare app and
the command (after one warm-up each), so both see the same machine load; the ratio printed is
the median of the per-pair ratios, next to each side's median wall time. Local commands run
against a fresh workspace (WSCTL_WORKSPACE; the engine in-process).

With defaults, Typer formats help with rich when rich is installed (it is in this venv), so the
bare app's `--help` imports rich; wsctl sets rich_markup_mode=None. The "plain" column is the
same bare app with rich_markup_mode=None, the stricter yardstick, run in the same rounds.

Then each command runs once in a probe that lists the modules it left in sys.modules (importtime
misses modules loaded through importlib.import_module): the count of workspacectl modules, the
engine route modules among them (engine/route_index.py), and whether the heavy third-party
packages were loaded. Nothing is asserted here; tests/cli/test_imports.py holds the import rules.

--before takes the interpreter of another install of wsctl (an older commit's worktree and its own
venv): each round then also runs that version's command, against its own workspace made by its
own `wsctl init`, so "after ÷ before" (the median of per-round ratios) compares two versions on
the same load. Its modules are probed the same way. Next to it, the CPU time (user + system, from
wait4) of each side, median over the rounds (warm-up left out), which a loaded machine moves less.

Each side's workspacectl is byte-compiled first (as pip does when it installs a wheel, and as
Python does at a first import), so PYTHONDONTWRITEBYTECODE=1 in the environment (some shells and
images set it) does not make every run compile our modules from source: that was ~40 % of a local
command's CPU, more for the version with more source, and no user pays it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import WSCTL, base_env, int_options, local_env, make_workspace, median

COMMANDS = [("wsctl --help", ["--help"], False),
            ("local vault list --json", ["vault", "list", "--json"], True),
            ("local members list --json", ["members", "list", "--json"], True),
            ('local catalog search "send a message"', ["catalog", "search", "send a message"], True),
            ("local skill list", ["skill", "list"], True)]
HEAVY = ("httpx", "fastapi", "uvicorn", "starlette", "cryptography", "rich")
TARGET = {"local vault list --json": 1.3}

BARE_APP = '''
import typer

app = typer.Typer(**({"rich_markup_mode": None} if "--plain" in __import__("sys").argv else {}))


@app.command()
def hello(name: str = "world"):
    """Say hello."""
    print(f"hello {name}")


@app.command()
def bye(name: str = "world"):
    """Say goodbye."""
    print(f"bye {name}")


app(args=[a for a in __import__("sys").argv[1:] if a != "--plain"])
'''

PROBE = r'''
import json, sys
from workspacectl.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
try:
    from workspacectl.engine.route_index import ROUTE_INDEX
    route_modules = {module for _scope, module in ROUTE_INDEX.values()}
except ImportError:
    try:   # a version from before the route index (engine/route_modules.py)
        from workspacectl.engine.route_modules import ROUTE_MODULES
        route_modules = set(ROUTE_MODULES.values())
    except ImportError:   # a version from before lazy routes (to measure a baseline)
        from workspacectl.engine.dispatch import ROUTE_MODULES as names
        route_modules = {"workspacectl.engine." + n for n in names}
mods = set(sys.modules)
print("\n" + json.dumps({"workspacectl": sorted(m for m in mods if m.startswith("workspacectl")),
                         "routes": sorted(mods & route_modules),
                         "tops": sorted({m.split(".")[0] for m in mods})}))
'''


COMPILE = "import compileall, os, workspacectl; compileall.compile_dir(os.path.dirname(workspacectl.__file__), quiet=1)"

CPU: dict[tuple[str, ...], list[float]] = {}   # argv -> CPU seconds (user + system) of each run


def wall(argv: list[str], env: dict) -> float:
    """Wall seconds of one run; its CPU seconds (from wait4: this child only) go to CPU[argv]."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    took = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise subprocess.CalledProcessError(p.returncode, argv)
    CPU.setdefault(tuple(argv), []).append(usage.ru_utime + usage.ru_stime)
    return took


def loaded(args: list[str], env: dict, python: str = sys.executable) -> dict:
    p = subprocess.run([python, "-c", PROBE, *args], env=env, capture_output=True, text=True, timeout=120)
    return json.loads(p.stdout.rstrip().rsplit("\n", 1)[-1])


def modules_text(mods: dict) -> str:
    heavy = ",".join(m for m in HEAVY if m in mods["tops"]) or "none"
    routes = ",".join(r.removeprefix("workspacectl.engine.") for r in mods["routes"]) or "-"
    return f"{len(mods['workspacectl'])} / {routes} / {heavy}"


def main() -> int:
    args = int_options(__doc__, {"--pairs": 15}, paths=("--before",))
    before = str(args.before) if args.before else None
    tmp = Path(tempfile.mkdtemp(prefix="wsctl-bench-startup-"))
    for python in (sys.executable, before) if before else (sys.executable,):
        subprocess.run([python, "-c", COMPILE], check=True, capture_output=True)
    try:
        ws_path, _, _ = make_workspace(tmp)
        env_local = local_env(tmp, ws_path)
        env_bare = base_env(tmp / "bare-home")
        env_before = env_local
        if before:
            old_ws = tmp / "before" / "ws"
            subprocess.run([before, "-m", "workspacectl", "init", "--workspace", str(old_ws), "--name", "Bench",
                            "--owner-name", "Bench Owner", "--owner-email", "bench@example.com"],
                           env=base_env(tmp / "before" / "init-home"), check=True, capture_output=True)
            env_before = local_env(tmp / "before", old_ws)
        bare = tmp / "bare_app.py"
        bare.write_text(BARE_APP)
        bare_argv = [sys.executable, str(bare), "--help"]
        print(f"{args.pairs} pairs per command; {os.cpu_count()} CPUs; {sys.version.split()[0]}"
              + (f"; before = {before}" if before else "") + "\n")
        print(f"{'command':<40} {'ratio':>6} {'plain':>6} {'wsctl':>7} {'bare':>7} {'plain':>7}"
              + (f" {'before':>7} {'÷before':>7}" if before else "")
              + "  target   modules: workspacectl / route modules / heavy")
        for label, cmd, local in COMMANDS:
            env = env_local if local else env_bare
            old_env = env_before if local else env_bare
            wall(bare_argv, env)
            wall([*bare_argv, "--plain"], env)
            wall([*WSCTL, *cmd], env)   # warm-up (pyc, page cache, the workspace's first open)
            if before:
                wall([before, "-m", "workspacectl", *cmd], old_env)
            ours, theirs, plains, olds, ratios, plain_ratios, old_ratios = [], [], [], [], [], [], []
            for _ in range(args.pairs):
                b = wall(bare_argv, env)
                w = wall([*WSCTL, *cmd], env)
                if before:
                    o = wall([before, "-m", "workspacectl", *cmd], old_env)
                    olds.append(o)
                    old_ratios.append(w / o)
                pl = wall([*bare_argv, "--plain"], env)
                theirs.append(b)
                ours.append(w)
                plains.append(pl)
                ratios.append(w / b)
                plain_ratios.append(w / pl)
            target = f"<= {TARGET[label]}" if label in TARGET else ""
            then = f" {median(olds) * 1000:5.0f}ms {median(old_ratios):6.2f}x" if before else ""
            if before:   # CPU time moves less with the machine's load than wall time
                cpu_new = median(CPU[tuple([*WSCTL, *cmd])][1:])
                cpu_old = median(CPU[tuple([before, "-m", "workspacectl", *cmd])][1:])
                then += f" (CPU {cpu_new * 1000:.0f} / {cpu_old * 1000:.0f} ms = {cpu_new / cpu_old:.2f}x)"
            print(f"{label:<40} {median(ratios):5.2f}x {median(plain_ratios):5.2f}x {median(ours) * 1000:5.0f}ms "
                  f"{median(theirs) * 1000:5.0f}ms {median(plains) * 1000:5.0f}ms{then}  {target:<7}  "
                  f"{modules_text(loaded(cmd, env))}"
                  + (f"  (before: {modules_text(loaded(cmd, old_env, before))})" if before else ""))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
