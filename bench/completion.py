"""Name completion (`wsctl complete-values KIND PREFIX`, what a shell runs on <TAB>): with the
completion cache warm (cli/common/completion_cache.py) and cold, locally and against a server.

    python bench/completion.py [--runs 20] [--names 200]

A workspace gets --names specialists. For each door (local: WSCTL_WORKSPACE, the engine
in-process; remote: `wsctl serve` on the same workspace, WSCTL_SERVER + WSCTL_TOKEN):
- cold: the cache dropped before each run (what the first <TAB> after a change pays: Typer, the
  workspace or one HTTP call);
- warm: the cache filled by one run first (what every <TAB> within its minute pays).
Our modules are byte-compiled first, as an install leaves them. Next to them, the interpreter alone (`python -c pass`) on the same load. Each line: median and p95
wall time and median CPU time (user + system of the process; a loaded machine moves it less) of
--runs runs, alternated with the others so all see the same load. Target: warm
<= 100 ms on both doors (issue 26). Nothing is asserted.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._harness import WSCTL, Scratch, int_options, local_env, make_workspace, median, pct, remote_env, run_cli
from bench.cli_startup import COMPILE


def main() -> None:
    opts = int_options(__doc__, {"--runs": 20, "--names": 200})
    # byte-compiled first, as an installed wheel is (PYTHONDONTWRITEBYTECODE=1 would make every run
    # compile from source): bench/cli_startup.py does the same
    subprocess.run([sys.executable, "-c", COMPILE], check=True)
    with Scratch("wsctl-bench-completion-") as s:
        ws_path, token, _ = make_workspace(s.tmp)
        env_local = local_env(s.tmp, ws_path)
        from workspacectl.engine.dispatch import Engine
        from workspacectl.engine.workspaces import open_workspace

        with open_workspace(str(ws_path)) as ws:
            engine = Engine(ws)
            for i in range(opts.names):
                r = engine.handle("POST", "/v1/projects", None, {"name": f"spec-{i:04d}"}, token)
                assert r.status == 201, r.body
        server = s.serve(ws_path)
        env_remote = {**remote_env(s.tmp, server.url, token), "WSCTL_HOME": str(s.tmp / "remote-home")}
        doors = {"local": env_local, "remote": env_remote}
        args = ["complete-values", "specialist", "spec-01"]
        timings: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        for _ in range(2):   # warm-up: byte-compiled modules, the server's first requests
            for env in doors.values():
                run_cli(args, env)
        for _ in range(opts.runs):
            bare = run_cli(["-c", "pass"], {}, wsctl=[sys.executable])
            timings.setdefault("python -c pass", []).append(bare.wall)
            cpu.setdefault("python -c pass", []).append(bare.cpu)
            for door, env in doors.items():
                shutil.rmtree(Path(env["WSCTL_HOME"]) / "cache", ignore_errors=True)
                cold = run_cli(args, env)
                timings.setdefault(f"{door} cold", []).append(cold.wall)
                cpu.setdefault(f"{door} cold", []).append(cold.cpu)
                warm = run_cli(args, env)
                assert warm.out == cold.out and warm.out.count("\n") == 100, warm.out[:200]   # spec-0100..0199
                timings.setdefault(f"{door} warm", []).append(warm.wall)
                cpu.setdefault(f"{door} warm", []).append(warm.cpu)
        print(f"complete-values specialist (of {opts.names}), {opts.runs} runs, wsctl = {' '.join(WSCTL)}")
        for name, values in timings.items():
            print(f"  {name:16s} median {median(values) * 1000:6.1f} ms   p95 {pct(values, 95) * 1000:6.1f} ms"
                  f"   CPU median {median(cpu[name]) * 1000:6.1f} ms")


if __name__ == "__main__":
    main()
