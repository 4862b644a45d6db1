"""server_path.py's three paths, two versions of the code side by side: a server running an earlier
revision's src/ and one running this tree's, on one workspace, wrk runs alternated per path and
per round (the order flips each round), so a busy machine hurts both alike.

    python bench/server_path_ab.py --before a70cf19 [--duration 4] [--rounds 3]

Prints each run's requests/s and the server's CPU per request (user + system from /proc), then
the medians per version, and checks every token each version's server gave wrk has its audit row
(one credential per version). The earlier revision is taken with `git archive` into a temporary
folder and put first on the server's PYTHONPATH; its schema must match this tree's.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench._harness import make_workspace  # noqa: E402
from bench.server_path import PATHS, issued_rows, new_credential, run_wrk, wrk_script  # noqa: E402
from tests.conftest import base_env, start_server  # noqa: E402
from tests.vault_helpers import APIKEY_TOML, install_service  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="git revision of the earlier code")
    ap.add_argument("--duration", type=int, default=4, help="seconds per wrk run")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2, help="wrk threads")
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        print("bench/server_path_ab.py: wrk is not installed (Debian: apt-get install wrk); nothing measured.")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="wsctl-bench-ab-"))
    servers = {}
    try:
        before_src = tmp / "before"
        before_src.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "src"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(before_src)], input=archive.stdout, check=True)
        os.environ.update({"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", "WSCTL_HOME": str(tmp / "home")})
        ws_path, token, owner = make_workspace(tmp)
        install_service(ws_path, APIKEY_TOML.format(base="http://127.0.0.1:9"))
        versions = {f"before ({args.before})": str(before_src / "src"), "this tree": ""}
        creds = {}
        for name, pythonpath in versions.items():
            env = {**base_env(tmp / f"home-{len(servers)}"), "PYTHONPATH": pythonpath}
            servers[name] = start_server(ws_path, env, log=tmp / f"server-{len(servers)}.log",
                                         args=("--memory-interval", 0))
            creds[name] = new_credential(ws_path, owner["id"])
        print(f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s, {os.cpu_count()} CPUs, {args.rounds} rounds")
        results: dict = {}
        for rnd in range(args.rounds):
            order = list(servers) if rnd % 2 == 0 else list(reversed(servers))
            for path in PATHS:
                for name in order:
                    url = servers[name].url + {"healthz": "/healthz", "whoami": "/v1/auth/whoami",
                                               "token": f"/v1/credentials/{creds[name]}/token"}[path]
                    body = '{"reason": "bench ab"}' if path == "token" else None
                    script = wrk_script(tmp, f"{path}-{len(results)}", "POST" if path == "token" else "GET", token, body)
                    r = run_wrk(url, script, args, servers[name].proc.pid)
                    results.setdefault((name, path), []).append(r)
                    print(f"round {rnd} {name:<22} {path:<8} {r['rps']:>7.0f}/s  CPU {r['cpu_us']:>5.0f} us/req"
                          f"  non-2xx {r['non2xx']}", flush=True)
        ok = True
        print("\nmedians:")
        for name in servers:
            med = {p: (statistics.median(x["cpu_us"] for x in results[(name, p)]),
                       statistics.median(x["rps"] for x in results[(name, p)])) for p in PATHS}
            base_cpu, base_rps = med["healthz"]
            print(f"{name:<22} " + "; ".join(
                f"{p} {cpu:.0f} us/req {rps:.0f}/s" + ("" if p == "healthz" else
                                                       f" (ratio by req/s {rps / base_rps:.2f}x, by CPU {base_cpu / cpu:.2f}x)")
                for p, (cpu, rps) in med.items()))
            received = sum(x["requests"] - x["non2xx"] for x in results[(name, "token")])
            rows = issued_rows(ws_path, creds[name])
            print(f"{'':<22} tokens received {received}, audit rows {rows}"
                  + ("" if rows >= received else "  <-- MISSING AUDIT ROWS"))
            ok = ok and rows >= received and not any(x["non2xx"] for p in PATHS for x in results[(name, p)])
        return 0 if ok else 1
    finally:
        for s in servers.values():
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
