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
number. Two rules stop the whole server (every worker stopped, `wsctl serve` exits 1 saying why):
START_FAILURES workers in a row that exit before they take requests (each tells the parent it
is ready through a pipe; a workspace that cannot be opened any more fails every start), or more
than RESTART_LIMIT exits within RESTART_WINDOW seconds (workers that start, then keep dying).
"""
from __future__ import annotations

import ctypes
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import socket
    from types import FrameType

STOP_SECONDS = 30.0
RESTART_LIMIT = 5
START_FAILURES = 3
RESTART_WINDOW = 60.0
POLL_SECONDS = 0.2
PR_SET_PDEATHSIG = 1


class WorkersFailed(Exception):
    """Workers kept exiting right after they started."""


class _Worker:
    """One worker process and the read end of its ready pipe (one byte once it takes requests)."""

    def __init__(self, number: int, sock: socket.socket, settings: dict, replacing: bool = False) -> None:
        read_fd, write_fd = os.pipe()
        fcntl.fcntl(read_fd, fcntl.F_SETFL, fcntl.fcntl(read_fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        try:
            self.proc = subprocess.Popen([sys.executable, "-m", "workspacectl.server.workers"],
                                         stdin=subprocess.PIPE, pass_fds=(sock.fileno(), write_fd), close_fds=True)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        self.number, self.ready_fd, self.ready, self.replacing = number, read_fd, False, replacing
        stdin = self.proc.stdin
        assert stdin is not None  # stdin=PIPE
        stdin.write(json.dumps({**settings, "worker": number, "fd": sock.fileno(), "ready": write_fd,
                                "parent": os.getpid()}).encode())
        stdin.close()

    def became_ready(self) -> bool:
        """True once, when the worker's ready byte is first read."""
        if self.ready:
            return False
        try:
            self.ready = os.read(self.ready_fd, 1) == b"1"
        except BlockingIOError:
            return False
        return self.ready

    def close(self) -> None:
        os.close(self.ready_fd)


def supervise(count: int, sock: socket.socket, workspace_path: str, public_url: str | None, memory_interval: float | None) -> None:
    """Run `count` workers until SIGTERM/SIGINT (then return), or raise WorkersFailed."""
    from workspacectl.engine.doors import open_workspace

    ws = open_workspace(str(workspace_path))   # migrations once, here: a bad workspace fails before any worker
    shown = ws.shown
    ws.close()
    from workspacectl.server.app import announce

    settings = {"workspace": str(workspace_path), "publicUrl": public_url, "memoryInterval": memory_interval}
    stopping = False

    def request_stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGTERM, signal.SIGINT)}
    workers: dict[int, _Worker] = {}
    exits: list[float] = []
    failed_starts = 0
    try:
        for number in range(1, count + 1):
            workers[number] = _Worker(number, sock, settings)
        announce(shown, sock, count)
        while not stopping:
            time.sleep(POLL_SECONDS)
            for number, w in list(workers.items()):
                if w.became_ready():
                    failed_starts = 0
                    if w.replacing:
                        print(f"wsctl serve: worker {number} (pid {w.proc.pid}) started again and takes requests",
                              file=sys.stderr, flush=True)
                code = w.proc.poll()
                if code is None or stopping:
                    continue
                w.became_ready()   # a byte written just before it died still counts
                failed_starts = 0 if w.ready else failed_starts + 1
                now = time.monotonic()
                exits = [t for t in exits if now - t < RESTART_WINDOW] + [now]
                said = f"wsctl serve: worker {number} (pid {w.proc.pid}) exited with code {code}"
                if failed_starts >= START_FAILURES:
                    print(f"{said} before it took requests; {failed_starts} in a row, stopping",
                          file=sys.stderr, flush=True)
                    raise WorkersFailed(f"workers exit before they take requests ({failed_starts} in a row); "
                                        "see the log above for the cause")
                if len(exits) > RESTART_LIMIT:
                    print(f"{said}; {len(exits)} exits in {RESTART_WINDOW:.0f} s, stopping", file=sys.stderr, flush=True)
                    raise WorkersFailed(f"workers keep exiting ({len(exits)} in {RESTART_WINDOW:.0f} s); "
                                        "see the log above for the cause")
                print(f"{said}; starting a new one", file=sys.stderr, flush=True)
                w.close()
                workers[number] = _Worker(number, sock, settings, replacing=True)
    finally:
        _stop_all([w.proc for w in workers.values()])
        for w in workers.values():
            w.close()
        for s, handler in previous.items():
            signal.signal(s, handler)


def _stop_all(procs: list[subprocess.Popen]) -> None:
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

    from workspacectl.errors import ApiError

    settings = json.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    _die_with_parent(settings["parent"])
    sock = socket.socket(fileno=settings["fd"])
    ready_fd = settings["ready"]

    def ready() -> None:   # the parent counts a worker that dies before this as a failed start
        os.write(ready_fd, b"1")
        os.close(ready_fd)

    from workspacectl.server.app import serve

    try:
        serve(settings["workspace"], sock, settings["publicUrl"], settings["memoryInterval"], worker=settings["worker"],
              on_ready=ready)
    except KeyboardInterrupt:   # Ctrl-C reaches the whole process group; uvicorn re-raises it once stopped
        pass
    except ApiError as e:       # the workspace cannot be opened (moved, removed, a wrong key): one line
        print(f"wsctl serve: worker {settings['worker']}: {e.message}", file=sys.stderr, flush=True)
        sys.exit(e.exit_code)


if __name__ == "__main__":
    worker_main()
