"""`wsctl serve --workers N`: N server processes answering on one port.

The parent binds the listening socket (cli/serve.py) and starts each worker as a fresh Python
process (`python -m workspacectl.server.workers`) that inherits the socket's descriptor and
reads its settings as JSON on stdin (never argv: a workspace may one day be a URL with a
password). The kernel hands each new connection to one of the workers accepting on the shared
socket. Each worker opens its own engine (own SQLite connections) and starts the timer thread,
whose lease lets exactly one of them run the memory agent and housekeeping
(server/memory_timer.py).

Signals: SIGTERM or SIGINT to the parent is passed to every worker as SIGTERM; each finishes its
requests in flight (at most app.GRACEFUL_SECONDS), hands its lease on and exits; the parent
then exits 0 (workers still alive after STOP_SECONDS are killed). A worker learns of its
parent's death (PR_SET_PDEATHSIG on Linux) and stops too, so a killed parent leaves no workers.

A worker that exits on its own is reported on stderr and replaced by a new process with the same
number; more than RESTART_LIMIT such exits within RESTART_WINDOW seconds mean something is wrong
with every start (a broken workspace), and the parent stops all workers and exits 1.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

STOP_SECONDS = 30.0
RESTART_LIMIT = 5
RESTART_WINDOW = 60.0
POLL_SECONDS = 0.2
PR_SET_PDEATHSIG = 1


class WorkersFailed(Exception):
    """Workers kept exiting right after they started."""


def _start(number: int, sock, settings: dict) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "workspacectl.server.workers"], stdin=subprocess.PIPE,
                            pass_fds=(sock.fileno(),), close_fds=True)
    stdin = proc.stdin
    assert stdin is not None  # stdin=PIPE
    stdin.write(json.dumps({**settings, "worker": number, "fd": sock.fileno(),
                            "parent": os.getpid()}).encode())
    stdin.close()
    return proc


def supervise(count: int, sock, workspace_path, public_url: str | None, memory_interval: float | None) -> None:
    """Run `count` workers until SIGTERM/SIGINT (then return), or raise WorkersFailed."""
    from workspacectl.engine.workspaces import open_workspace

    ws = open_workspace(str(workspace_path))   # migrations once, here: a bad workspace fails before any worker
    shown = ws.shown
    ws.conn().close()
    from workspacectl.server.app import announce

    settings = {"workspace": str(workspace_path), "publicUrl": public_url, "memoryInterval": memory_interval}
    stopping = False

    def request_stop(signum, frame):
        nonlocal stopping
        stopping = True

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGTERM, signal.SIGINT)}
    procs: dict[int, subprocess.Popen] = {}
    exits: list[float] = []
    try:
        for number in range(1, count + 1):
            procs[number] = _start(number, sock, settings)
        announce(shown, sock, count)
        while not stopping:
            time.sleep(POLL_SECONDS)
            for number, proc in list(procs.items()):
                code = proc.poll()
                if code is None or stopping:
                    continue
                now = time.monotonic()
                exits = [t for t in exits if now - t < RESTART_WINDOW] + [now]
                if len(exits) > RESTART_LIMIT:
                    print(f"wsctl serve: worker {number} (pid {proc.pid}) exited with code {code}; "
                          f"{len(exits)} exits in {RESTART_WINDOW:.0f} s, stopping", file=sys.stderr, flush=True)
                    raise WorkersFailed(f"workers keep exiting ({len(exits)} in {RESTART_WINDOW:.0f} s); "
                                        "see the log above for the cause")
                print(f"wsctl serve: worker {number} (pid {proc.pid}) exited with code {code}; starting a new one",
                      file=sys.stderr, flush=True)
                procs[number] = _start(number, sock, settings)
    finally:
        _stop_all(procs.values())
        for s, handler in previous.items():
            signal.signal(s, handler)


def _stop_all(procs) -> None:
    procs = [p for p in procs if p.poll() is None]
    for p in procs:
        try:
            p.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + STOP_SECONDS
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _die_with_parent(parent: int) -> None:
    """Linux: SIGTERM this worker when the parent dies (it would otherwise keep the port)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: a worker outlives a killed parent
        return
    if os.getppid() != parent:   # the parent died before prctl took effect
        sys.exit(0)


def worker_main() -> None:
    import socket

    settings = json.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    _die_with_parent(settings["parent"])
    sock = socket.socket(fileno=settings["fd"])
    from workspacectl.server.app import serve

    try:
        serve(settings["workspace"], sock, settings["publicUrl"], settings["memoryInterval"], worker=settings["worker"])
    except KeyboardInterrupt:   # Ctrl-C reaches the whole process group; uvicorn re-raises it once stopped
        pass


if __name__ == "__main__":
    worker_main()
