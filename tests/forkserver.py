"""Real `wsctl` processes without paying Python's start-up each time (issue 11, the CI budget).

`python -m workspacectl ...` spends ~0.3 s of CPU importing typer, rich, httpx and the engine
before it reads its first argument (~0.5 s for `wsctl serve`, which also imports fastapi and
uvicorn); the suite starts a few thousand of them. The fork server is one Python process per test
worker that has imported those modules once and forks a child for each command. The child is a
real, separate process running the real entry point exactly as `python -m workspacectl` does
(runpy's `-m` path, `sys.argv`, `sys.path[0]` = its working directory): its own environment,
working directory, stdin/stdout/stderr (the caller's pipes, files or terminal, passed as file
descriptors), its own exit code and signals (the caller sends them to its pid), and the
interpreter's own exit (modules torn down, connections and files closed, atexit run). What differs
from a fresh interpreter: the modules above are already imported when main() starts, and the
child's parent is the fork server, not the test (its exit status is relayed over a socket).

So the tests that are about the interpreter's start itself keep starting fresh ones: the start-up
and lazy-import tests (tests/cli/test_cli_startup.py, test_imports.py) and every test that starts
`[*WSCTL, ...]` with subprocess itself (terminals, signals, pipes between processes). An
environment that changes how Python starts (PYTHON*, LANG, LC_*) also gets a fresh interpreter.
WSCTL_TEST_FORKSERVER=0 turns the fork server off: every command starts a fresh interpreter.

`spawn()` answers a Popen-like object (pid, stdin/stdout/stderr, poll, wait, communicate,
send_signal, terminate, kill, returncode), or None when the fork server cannot run the command.
"""
from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

# What the fork server imports before it forks: what `wsctl serve` and a command on either
# backend import anyway (tests/cli/test_cli_startup.py keeps the lazy imports honest on fresh
# interpreters).
PRELOAD = ("workspacectl.cli.main", "workspacectl.cli.app", "workspacectl.cli.common.context", "workspacectl.cli.common.output",
           "workspacectl.cli.serve", "workspacectl.backend.local", "workspacectl.backend.remote",
           "workspacectl.engine.dispatch", "workspacectl.server.app", "typer.main", "rich.console", "rich.table",
           "rich.markdown", "httpx", "uvicorn", "uvicorn.main")


def _startup_env(env: dict) -> dict:
    """The variables Python reads while it starts (stdio encoding and buffering, sys.path, hashing,
    warnings, locale): a command whose environment differs from the fork server's on these needs a
    fresh interpreter. PYTHON_KEYRING_BACKEND is keyring's, read when used."""
    return {k: v for k, v in env.items()
            if (k.startswith("PYTHON") and k != "PYTHON_KEYRING_BACKEND") or k == "LANG" or k.startswith("LC_")}


# ---------------------------------------------------------------- the server process

def _recv_request(conn: socket.socket) -> tuple[dict, list[int]]:
    data = b""
    fds: list[int] = []
    while not data.endswith(b"\n"):
        chunk, got, _flags, _addr = socket.recv_fds(conn, 1 << 20, 8)
        if not chunk:
            raise EOFError
        data += chunk
        fds += got
    return json.loads(data), fds


def _serve(listener: socket.socket) -> tuple[dict, list[int]]:
    """Forks a child per request; answers (request, fds) in the child, never in the server."""
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:   # the waiters that are done
                pass
        except ChildProcessError:
            pass
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if os.getppid() != _PARENT:    # the test worker is gone (without closing us)
                _remove(listener.getsockname())
                os._exit(0)
            continue
        try:
            conn.settimeout(30)
            request, fds = _recv_request(conn)
        except (OSError, EOFError, ValueError):
            conn.close()
            continue
        if os.fork() == 0:   # the waiter: forks the command, relays its pid and exit status
            listener.close()
            try:
                pid = os.fork()
                if pid == 0:
                    conn.close()
                    return request, fds
                for fd in fds:
                    os.close(fd)
                conn.settimeout(None)
                conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
                _, status = os.waitpid(pid, 0)
                conn.sendall(json.dumps({"status": status}).encode() + b"\n")
            except BaseException:
                pass
            os._exit(0)
        conn.close()
        for fd in fds:
            os.close(fd)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
        os.rmdir(os.path.dirname(path))
    except OSError:
        pass


def _become(request: dict, fds: list[int]) -> None:
    """In the child: the caller's stdio, environment and working directory, then `-m workspacectl`."""
    for target, fd in enumerate(fds[:3]):
        if fd != target:
            os.dup2(fd, target)
    for fd in set(fds):
        if fd > 2:
            os.close(fd)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    streams = []
    for fd, old in ((0, sys.__stdin__), (1, sys.__stdout__), (2, sys.__stderr__)):
        # as CPython makes them (create_stdio): same encoding and errors as the server's own
        # (its start-up environment is the caller's), line buffering on a terminal, and stderr
        # always; unbuffered stdout/stderr write through
        mode = "r" if fd == 0 else "w"
        raw_unbuffered = unbuffered and fd != 0
        buf = open(fd, mode + "b", buffering=0 if raw_unbuffered else -1, closefd=False)
        line = not unbuffered and (os.isatty(fd) or fd == 2)
        streams.append(_text(buf, old, line, raw_unbuffered))
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = streams
    sys.argv = ["-m", *request["argv"]]
    sys.path[0] = os.getcwd()     # `python -m` puts the working directory first
    for sig in (signal.SIGINT,):
        signal.signal(sig, signal.default_int_handler)


def _text(buf, old, line_buffering: bool, write_through: bool):
    import io

    return io.TextIOWrapper(buf, encoding=old.encoding, errors=old.errors, newline="\n",
                            line_buffering=line_buffering, write_through=write_through)


_PARENT = 0


def server_main(path: str, kind: str) -> None:
    global _PARENT
    import importlib

    _PARENT = os.getppid()
    for name in PRELOAD:
        importlib.import_module(name)
    if kind == "serve":     # what `wsctl serve` imports first thing: every route module
        from workspacectl.engine.dispatch import load_routes

        load_routes()
    if threading.active_count() != 1:   # forking with other threads running is unsafe: refuse
        sys.exit(f"fork server: {threading.active_count()} threads after the imports")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    listener.settimeout(1.0)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    import gc

    gc.freeze()     # the imported modules stay shared with the children: no collection touches them
    request, fds = _serve(listener)
    _become(request, fds)
    import runpy

    # what `python -m workspacectl` runs; its SystemExit (or error) ends this process as the
    # interpreter ends any: connections and files closed, atexit run, the same exit code
    runpy._run_module_as_main("workspacectl", alter_argv=True)


# ---------------------------------------------------------------- the client (the test worker)

PIPE = subprocess.PIPE
_ENCODING = __import__("locale").getpreferredencoding(False)    # what subprocess decodes text= output with
DEVNULL = subprocess.DEVNULL


class ForkedProcess:
    """Popen's interface over a process the fork server started (see the module's doc)."""

    def __init__(self, args, conn: socket.socket, pid: int, stdin, stdout, stderr, text: bool):
        self.args, self._conn, self.pid = args, conn, pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.returncode: int | None = None
        self._buf = b""
        self._text = text
        self._lock = threading.Lock()

    def _read_status(self, timeout: float | None) -> bool:
        with self._lock:
            if self.returncode is not None:
                return True
            self._conn.settimeout(timeout)
            try:
                while b"\n" not in self._buf:
                    chunk = self._conn.recv(4096)
                    if not chunk:
                        raise RuntimeError(f"fork server lost process {self.pid}")
                    self._buf += chunk
            except (TimeoutError, BlockingIOError):
                return False
            status = json.loads(self._buf.split(b"\n", 1)[0])["status"]
            self.returncode = os.waitstatus_to_exitcode(status)
            self._conn.close()
            return True

    def poll(self) -> int | None:
        self._read_status(0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._read_status(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def communicate(self, input=None, timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        readers = {f: [] for f in (self.stdout, self.stderr) if f is not None}
        data = b""
        if input is not None and self.stdin is not None:
            data = input.encode() if isinstance(input, str) else input
        sel = selectors.DefaultSelector()
        try:
            for f in readers:
                sel.register(f, selectors.EVENT_READ)
            if self.stdin is not None:
                if data:
                    os.set_blocking(self.stdin.fileno(), False)
                    sel.register(self.stdin, selectors.EVENT_WRITE)
                else:
                    self.stdin.close()
            while sel.get_map():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired(self.args, timeout)
                for key, _ in sel.select(left):
                    f = key.fileobj
                    if f is self.stdin:
                        try:
                            n = os.write(f.fileno(), data[:65536])
                        except BrokenPipeError:
                            n = len(data)
                        data = data[n:]
                        if not data:
                            sel.unregister(f)
                            f.close()
                        continue
                    chunk = os.read(f.fileno(), 65536)
                    if chunk:
                        readers[f].append(chunk)
                    else:
                        sel.unregister(f)
                        f.close()
        finally:
            sel.close()
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        out = [None if f is None else b"".join(readers[f]) for f in (self.stdout, self.stderr)]
        if self._text:
            out = [None if o is None else subprocess.Popen._translate_newlines(None, o, _ENCODING, "strict") for o in out]
        return tuple(out)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for f in (self.stdin, self.stdout, self.stderr):
            if f is not None and not f.closed:
                f.close()
        self.wait()


class _Server:
    def __init__(self, kind: str):
        self.dir = tempfile.mkdtemp(prefix="wsctl-fork-")
        self.path = os.path.join(self.dir, "s")
        self.env = {k: v for k, v in _BASE_ENV.items() if not k.startswith("WSCTL_")}
        self.env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), self.path, kind], env=self.env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=None)
        line = self.proc.stdout.readline()
        self.proc.stdout.close()
        if line.strip() != b"ready":
            self.proc.wait()
            raise RuntimeError("the fork server did not start")
        self.startup = _startup_env(self.env)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        _remove(self.path)


_servers: dict[str, _Server] = {}
_BASE_ENV = dict(os.environ)    # as the test worker started, before any test changed it
_server_lock = threading.Lock()
_disabled = os.environ.get("WSCTL_TEST_FORKSERVER", "1") == "0"


def _get_server(kind: str = "cli") -> _Server | None:
    """The fork server for `wsctl serve` (its route modules imported too) or for other commands
    (which import only their own area's: tests/cli/test_imports.py)."""
    global _disabled
    with _server_lock:
        if _disabled:
            return None
        server = _servers.get(kind)
        if server is None or server.proc.poll() is not None:
            try:
                server = _servers[kind] = _Server(kind)
            except (OSError, RuntimeError):
                _disabled = True
                return None
            atexit.register(server.close)
        return server


def _fd(spec, default_fd: int, mode: str, closers: list, keep: list):
    """(fd for the child, our end as a file or None) for a Popen-style stdin/stdout/stderr spec."""
    if spec is None:
        return default_fd, None
    if spec == PIPE:
        r, w = os.pipe()
        if mode == "r":        # the child reads: we keep the write end
            closers.append(r)
            return r, open(w, "wb", buffering=0)
        closers.append(w)
        return w, open(r, "rb", buffering=0)
    if spec == DEVNULL:
        fd = os.open(os.devnull, os.O_RDWR)
        closers.append(fd)
        return fd, None
    if spec == subprocess.STDOUT:
        return None, None
    return (spec if isinstance(spec, int) else spec.fileno()), None


def spawn(args: list[str], env: dict, stdin=None, stdout=None, stderr=None, cwd=None,
          text: bool = False) -> ForkedProcess | None:
    """`python -m workspacectl *args` through the fork server, or None when it cannot start it
    (turned off, not running, or an environment that changes how Python starts)."""
    args = [str(a) for a in args]
    server = _get_server("serve" if args[:1] == ["serve"] else "cli")
    if server is None or _startup_env(env) != server.startup:
        return None
    closers: list[int] = []
    mine: list = []
    try:
        fin, pin = _fd(stdin, 0, "r", closers, mine)
        fout, pout = _fd(stdout, 1, "w", closers, mine)
        ferr, perr = _fd(stderr, 2, "w", closers, mine)
        if ferr is None:     # stderr=STDOUT
            ferr = fout
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(server.path)
            request = {"argv": [str(a) for a in args], "env": dict(env), "cwd": os.path.abspath(cwd or os.getcwd())}
            socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [fin, fout, ferr])
            buf = b""
            while b"\n" not in buf:
                chunk = conn.recv(4096)
                if not chunk:
                    raise RuntimeError("the fork server did not start the command")
                buf += chunk
        except BaseException:
            conn.close()
            for f in (pin, pout, perr):
                if f is not None:
                    f.close()
            raise
        first, _, rest = buf.partition(b"\n")
        proc = ForkedProcess(args, conn, json.loads(first)["pid"], pin, pout, perr, text)
        proc._buf = rest
        return proc
    finally:
        for fd in closers:
            os.close(fd)


if __name__ == "__main__":
    server_main(sys.argv[1], sys.argv[2])
