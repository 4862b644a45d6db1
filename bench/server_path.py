"""The server's request path under load: /healthz, an authenticated whoami and an audited token
issue for an apiKey credential, driven by wrk against a real `wsctl serve`, with 1 and 2 workers.

    python bench/server_path.py [--duration 8] [--connections 16] [--threads 2] [--rounds 2]
                                [--workers 1 2]

Prints requests/s, latency percentiles (p50, p90, p99) and the server's CPU per request (user +
system of the server and its workers, from /proc: steadier than requests/s on a shared machine)
per row, and the ratios to /healthz of the same round; rounds alternate the order of the three
paths so a busy machine hurts each alike. At the end
every token wrk received (its 2xx count) is checked against the access-log rows the server wrote
for that round's credential (a new one per round): no token without its audit row. wrk must be on PATH (Debian: `apt-get
install wrk`); without it the bench says so and exits 0.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from bench._harness import cpu_seconds, make_workspace  # noqa: E402
from tests.conftest import base_env, start_server  # noqa: E402
from tests.vault_helpers import APIKEY_TOML, install_service, make_credential  # noqa: E402

LUA = """
wrk.method = "{method}"
wrk.headers["Authorization"] = "Bearer {token}"
{body}
"""
PATHS = ("healthz", "whoami", "token")


def wrk_script(tmp: Path, name: str, method: str, token: str, body: str | None) -> Path:
    path = tmp / f"{name}.lua"
    lines = ""
    if body is not None:
        lines = (f'wrk.body = [[{body}]]\n'
                 'wrk.headers["Content-Type"] = "application/json"')
    path.write_text(LUA.format(method=method, token=token, body=lines))
    return path


_UNIT = {"us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def _ms(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    return float(m.group(1)) * _UNIT[m.group(2)]


def parse_wrk(out: str) -> dict:
    """wrk --latency output -> {rps, requests, non2xx, errors, p50, p90, p99} (latencies in ms)."""
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    pcts = dict(re.findall(r"^\s+(50|90|99)%\s+(\S+)", out, re.M))
    return {"rps": rps, "requests": requests, "non2xx": int(non2xx.group(1)) if non2xx else 0,
            "errors": sum(map(int, errors.groups())) if errors else 0,
            **{f"p{k}": _ms(v) for k, v in pcts.items()}}


def run_wrk(url: str, script: Path, args, server_pid: int) -> dict:
    cmd = ["wrk", "-t", str(args.threads), "-c", str(args.connections), "-d", f"{args.duration}s",
           "--latency", "-s", str(script), url]
    before = cpu_seconds(server_pid)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    result = parse_wrk(out)
    result["cpu_us"] = (cpu_seconds(server_pid) - before) / max(1, result["requests"]) * 1e6
    return result


def issued_rows(ws_path: Path, cred: str) -> int:
    """Access-log rows marked issued for the credential (one credential per round)."""
    from workspacectl.engine.store.vault import count_access_log
    from workspacectl.engine.workspaces.folder import Workspace

    conn = Workspace(ws_path).conn()
    try:
        return count_access_log(conn, cred, "issued")
    finally:
        conn.close()


def new_credential(ws_path: Path, owner_id: str) -> str:
    return make_credential(ws_path, owner_id, "keysvc", {"apiKey": "sk-bench"},
                           fields={"instanceUrl": "https://keysvc.example"})["id"]


def bench_workers(workers: int, ws_path: Path, token: str, owner_id: str, tmp: Path, args) -> list[dict]:
    server = start_server(ws_path, base_env(tmp / "srv-home"), log=tmp / f"server-{workers}.log",
                          args=(*(("--workers", workers) if workers != 1 else ()), "--memory-interval", 0))
    rows = []
    try:
        for rnd in range(args.rounds):
            reason = f"bench w{workers} r{rnd}"
            cred = new_credential(ws_path, owner_id)
            scripts = {
                "healthz": (f"{server.url}/healthz", wrk_script(tmp, "healthz", "GET", token, None)),
                "whoami": (f"{server.url}/v1/auth/whoami", wrk_script(tmp, "whoami", "GET", token, None)),
                "token": (f"{server.url}/v1/credentials/{cred}/token",
                          wrk_script(tmp, "token", "POST", token, f'{{"reason": "{reason}"}}')),
            }
            order = PATHS if rnd % 2 == 0 else tuple(reversed(PATHS))
            results = {}
            for name in order:
                url, script = scripts[name]
                results[name] = run_wrk(url, script, args, server.proc.pid)
            received = results["token"]["requests"] - results["token"]["non2xx"]
            rows_written = issued_rows(ws_path, cred)
            results["token"]["received"], results["token"]["audited"] = received, rows_written
            rows.append({"workers": workers, "round": rnd, **results})
    finally:
        server.stop()
    print_quick_counts(workers, server.log)
    return rows


def quick_counts(log_text: str) -> tuple[dict, dict, dict]:
    """The `quick path counts {...}` lines each server process logs when it stops (server/api_path.py
    LeanApi.close, engine/db/quick.py QuickWriter.summary), summed over the processes: per route,
    how its calls ended; the WAL checkpoints per mode; the longest wait on the loop and checkpoint
    per mode (ms, the longest of the processes)."""
    calls: dict = {}
    checkpoints: dict = {}
    longest: dict = {}
    for m in re.finditer(r"quick path counts (\{.*\})$", log_text, re.M):
        data = json.loads(m.group(1))
        for label, outcomes in data["calls"].items():
            mine = calls.setdefault(label, {})
            for outcome, n in outcomes.items():
                mine[outcome] = mine.get(outcome, 0) + n
        for mode, n in data["checkpoints"].items():
            checkpoints[mode] = checkpoints.get(mode, 0) + n
        for what, ms in data.get("longest_ms", {}).items():
            longest[what] = max(longest.get(what, 0), ms)
    return calls, checkpoints, longest


def print_quick_counts(workers: int, log: Path) -> None:
    calls, checkpoints, longest = quick_counts(log.read_text(errors="replace"))
    if not calls:
        print(f"{workers} worker(s): no quick path counts in the server log")
        return
    for label, outcomes in sorted(calls.items()):
        pool = {k.removeprefix("pool: "): n for k, n in outcomes.items() if k.startswith("pool: ")}
        total = outcomes.get("loop", 0) + outcomes.get("busy", 0) + sum(pool.values())
        print(f"{workers} worker(s) {label}: {total} calls, {outcomes.get('loop', 0)} on the event loop "
              f"({outcomes.get('waited', 0)} after waiting for the write lock), {sum(pool.values())} to the "
              f"engine pool ({sum(pool.values()) / max(1, total):.1%}{': ' if pool else ''}"
              f"{', '.join(f'{k} {n}' for k, n in sorted(pool.items()))}), {outcomes.get('busy', 0)} busy (409)")
    print(f"{workers} worker(s) WAL checkpoints: " + (", ".join(f"{k} {n}" for k, n in sorted(checkpoints.items())) or "none")
          + "; longest ms: " + (", ".join(f"{k} {v}" for k, v in sorted(longest.items())) or "-"))


def report(rows: list[dict]) -> bool:
    ok = True
    print(f"{'workers':>7} {'round':>5} {'path':<8} {'req/s':>8} {'ratio':>6} {'p50 ms':>8} {'p90 ms':>8} "
          f"{'p99 ms':>8} {'CPU us/req':>10} {'non-2xx':>7} {'sock err':>8}")
    for r in rows:
        base = r["healthz"]["rps"]
        for name in PATHS:
            x = r[name]
            print(f"{r['workers']:>7} {r['round']:>5} {name:<8} {x['rps']:>8.0f} {x['rps'] / base:>6.2f} "
                  f"{x['p50']:>8.2f} {x['p90']:>8.2f} {x['p99']:>8.2f} {x['cpu_us']:>10.0f} {x['non2xx']:>7} {x['errors']:>8}")
            if x["non2xx"]:
                ok = False
        t = r["token"]
        # wrk stops with requests in flight: the server may have issued (and logged) a few tokens
        # wrk never read. A token received without its row would show as audited < received.
        line = f"{'':>14}tokens received {t['received']}, audit rows {t['audited']}"
        if t["audited"] < t["received"]:
            ok = False
            line += "  <-- MISSING AUDIT ROWS"
        print(line)
    print()
    means = {}
    for workers in sorted({r["workers"] for r in rows}):
        mine = [r for r in rows if r["workers"] == workers]
        mean = {n: statistics.fmean(r[n]["rps"] for r in mine) for n in PATHS}
        ratio = {n: statistics.fmean(r[n]["rps"] / r["healthz"]["rps"] for r in mine) for n in PATHS}
        cpu = {n: statistics.fmean(r[n]["cpu_us"] for r in mine) for n in PATHS}
        means[workers] = mean
        print(f"{workers} worker(s), mean of {len(mine)} rounds: healthz {mean['healthz']:.0f}/s; "
              f"whoami {mean['whoami']:.0f}/s ({ratio['whoami']:.2f}x); token {mean['token']:.0f}/s "
              f"({ratio['token']:.2f}x); CPU us/req healthz {cpu['healthz']:.0f}, whoami {cpu['whoami']:.0f}, "
              f"token {cpu['token']:.0f}")
    if 1 in means and len(means) > 1:
        for workers in sorted(w for w in means if w != 1):
            print(f"{workers} workers / 1 worker: " + ", ".join(
                f"{n} {means[workers][n] / means[1][n]:.2f}x" for n in PATHS))
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=int, default=8, help="seconds per wrk run")
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2, help="wrk threads")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds per worker count")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    if shutil.which("wrk") is None:
        print("bench/server_path.py: wrk is not installed (Debian: apt-get install wrk); nothing measured.")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="wsctl-bench-server-"))
    try:
        os.environ.update({"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring",
                           "WSCTL_HOME": str(tmp / "home")})
        ws_path, token, owner = make_workspace(tmp)
        install_service(ws_path, APIKEY_TOML.format(base="http://127.0.0.1:9"))
        print(f"wrk -t{args.threads} -c{args.connections} -d{args.duration}s, {os.cpu_count()} CPUs, "
              f"{args.rounds} alternating rounds per worker count")
        rows = []
        for workers in args.workers:
            rows += bench_workers(workers, ws_path, token, owner["id"], tmp, args)
        return 0 if report(rows) else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
