"""Shared plumbing for the benches: a fresh workspace made by `wsctl init`, a session for its
owner, the CLI run as a real subprocess (wall time and its own peak RSS from wait4), and the
peak RSS of a running process (/proc/<pid>/status VmHWM, reset through clear_refs)."""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests.conftest import WSCTL, _owner_and_token, base_env, start_server  # noqa: E402

MiB = 1 << 20


def int_options(doc: str, defaults: dict[str, int], paths: tuple[str, ...] = ()) -> argparse.Namespace:
    """A bench's command line: its docstring as --help, each `--flag N` with its default, and each
    of `paths` as an optional `--flag PATH` (None when not given)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, default in defaults.items():
        ap.add_argument(flag, type=int, default=default)
    for flag in paths:
        ap.add_argument(flag, type=Path, default=None)
    return ap.parse_args()


def make_workspace(tmp: Path) -> tuple[Path, str, dict]:
    """(workspace path, owner session token, owner record) of a new workspace under tmp."""
    ws_path = tmp / "ws"
    subprocess.run([*WSCTL, "init", "--workspace", str(ws_path), "--name", "Bench", "--owner-name", "Bench Owner",
                    "--owner-email", "bench@example.com"], env=base_env(tmp / "init-home"), check=True,
                   capture_output=True)
    owner, token = _owner_and_token(ws_path)
    return ws_path, token, owner


class Scratch:
    """A temp folder for one bench run and the servers started in it; both are gone at exit."""

    def __init__(self, prefix: str):
        self.tmp = Path(tempfile.mkdtemp(prefix=prefix))
        self._servers: list = []

    def serve(self, ws_path: Path, env: dict | None = None):
        server = start_server(ws_path, env or base_env(self.tmp / "srv-home"), log=self.tmp / "server.log")
        self._servers.append(server)
        return server

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc) -> None:
        for server in self._servers:
            server.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


def keyed_home(prefix: str, **extra: str) -> tuple[Path, str]:
    """A fresh temp folder and a new workspace key for an in-process bench: this process's WSCTL_HOME
    (tmp/home), WSCTL_MASTER_KEY and a keyring that is never asked, plus `extra` variables."""
    import base64

    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    key = base64.b64encode(os.urandom(32)).decode()
    os.environ.update({"WSCTL_HOME": str(tmp / "home"), "WSCTL_MASTER_KEY": key,
                       "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", **extra})
    return tmp, key


def local_env(tmp: Path, ws_path: Path) -> dict:
    return {**base_env(tmp / "cli-home"), "WSCTL_WORKSPACE": str(ws_path)}


def remote_env(tmp: Path, url: str, token: str) -> dict:
    return {**base_env(tmp / "cli-home"), "WSCTL_SERVER": url, "WSCTL_TOKEN": token}


@dataclass
class Run:
    wall: float
    maxrss: int   # bytes, the CLI process's own peak RSS
    out: str
    err: str
    cpu: float = 0.0   # seconds of user + system CPU of the CLI process itself (wait4)


def run_cli(args, env: dict, cwd: Path | None = None, check: bool = True, wsctl: list | None = None) -> Run:
    """Run `wsctl ARGS` and measure it: wall time and the child's own ru_maxrss (wait4).
    wsctl: the command line of another wsctl (another version), instead of this one's."""
    import tempfile

    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.perf_counter()
        p = subprocess.Popen([*(wsctl or WSCTL), *map(str, args)], env=env, cwd=cwd, stdout=fo, stderr=fe)
        _, status, usage = os.wait4(p.pid, 0)   # reap it ourselves: rusage of this child only
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    r = Run(wall, usage.ru_maxrss * 1024, out.decode(errors="replace"), err.decode(errors="replace"),
            usage.ru_utime + usage.ru_stime)
    if check and p.returncode != 0:
        raise SystemExit(f"wsctl {' '.join(map(str, args))} exited {p.returncode}:\n{r.err[-2000:]}")
    return r


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its live children (the workers), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pids = [pid]
    try:
        pids += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def vm_hwm(pid: int) -> int:
    """Peak resident set size of a live process, bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def vm_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def reset_hwm(pid: int) -> bool:
    """Reset a process's peak RSS to its current RSS (Linux: write 5 to clear_refs)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def mib(n: float) -> str:
    return f"{n / MiB:.0f} MiB"


def pct(values: list[float], p: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def median(values: list[float]) -> float:
    return statistics.median(values)


def wrk(url: str, seconds: float, connections: int, script: Path | None = None) -> subprocess.Popen:
    """wrk (-t2, --latency) against url for `seconds` (at least 1) with `connections`, a Lua
    script if given; its stdout is the report to parse."""
    args = ["wrk", "-t", "2", "-c", str(connections), "-d", f"{max(1, round(seconds))}s", "--latency"]
    if script:
        args += ["-s", str(script)]
    return subprocess.Popen([*args, url], stdout=subprocess.PIPE, text=True)


def pg_bench_env(prefix: str) -> tuple[Path, str]:
    """A temp folder and a fresh workspace key for a PostgreSQL bench, set in this process's
    environment (WSCTL_HOME, WSCTL_MASTER_KEY, WSCTL_BLOB_DIR, no OS keyring): (folder, key)."""
    import base64

    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    key = base64.b64encode(os.urandom(32)).decode()
    os.environ.update({"WSCTL_HOME": str(tmp / "home"), "WSCTL_MASTER_KEY": key,
                       "WSCTL_BLOB_DIR": str(tmp / "pg-blobs"),
                       "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"})
    return tmp, key


def wrk_summary(out: str) -> dict:
    """What wrk printed, as numbers: rps, requests, p50 and p99 in ms (with --latency; NaN
    without), errors (non-2xx/3xx answers) and socket timeouts."""
    def ms(label: str) -> float:
        m = re.search(rf"\s{label}%\s+([\d.]+)(us|ms|s)", out)
        if not m:
            return float("nan")
        v, unit = float(m.group(1)), m.group(2)
        return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    timeouts = re.search(r"timeout (\d+)", out)
    return {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "requests": int(re.search(r"(\d+) requests in", out).group(1)),
            "p50": ms("50"), "p99": ms("99"),
            "errors": int(non2xx.group(1)) if non2xx else 0,
            "timeouts": int(timeouts.group(1)) if timeouts else 0}
