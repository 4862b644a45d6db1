"""`wsctl vault run`: a child process with secrets in its environment and masked in its output.

- No shell: the command's words go to exec as given (pass `bash -c '…'` to get one).
- The child's exit code is ours; a child killed by signal N makes us exit 128+N, as a shell does.
- SIGINT, SIGTERM and SIGHUP sent to wsctl are passed on to the child. A Ctrl-C typed at the
  terminal already reaches the child (same foreground process group), so SIGINT is not sent a
  second time while we are that group's foreground.
- Masking: the child's stdout and stderr are pipes read by two threads; every occurrence of a
  secret value becomes ``***``. A chunk that ends with the start of a secret keeps that start back
  until the next chunk decides it, so a secret split across writes or reads is still masked.
- The terminal is kept: with masking on, each of stdout and stderr that is a terminal for wsctl
  is a pseudo-terminal for the child (its own pty, so the two streams stay apart), sized like
  ours and resized with it; the child line-buffers and colours as it would on the terminal.
  stdin is the child's as it is ours. The pty passes bytes as written (no CR added).
- The child never outlives wsctl: on Linux it is started with PR_SET_PDEATHSIG (SIGKILL when
  wsctl dies, even by SIGKILL), and everywhere a watchdog process forked from wsctl holds the
  read end of a pipe whose write end only wsctl holds: when wsctl goes without saying the child
  finished, the pipe reads end-of-file and the watchdog kills the child (the fallback where
  PDEATHSIG does not exist or is dropped, as on exec of a setuid program). Only the child itself
  is killed: processes it started in the background are its own to stop.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import BinaryIO, TextIO

PR_SET_PDEATHSIG = 1  # linux/prctl.h

MASK = b"***"
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP")
READ_SIZE = 65536


class Masker:
    """Streaming replacement of secret byte strings with ``***``."""

    def __init__(self, secrets: list[str]) -> None:
        values = {s.encode() for s in secrets if s}
        self.secrets = sorted(values, key=len, reverse=True)  # longest first: a secret inside another
        self.pending = b""

    def feed(self, chunk: bytes) -> bytes:
        """Masked bytes safe to write now; a possible secret prefix at the end is kept back."""
        buf = self._replace(self.pending + chunk)
        keep = self._held_suffix(buf)
        self.pending = buf[len(buf) - keep:] if keep else b""
        return buf[:len(buf) - keep]

    def flush(self) -> bytes:
        out, self.pending = self.pending, b""
        return out  # a prefix that never completed is not a secret

    def _replace(self, buf: bytes) -> bytes:
        for s in self.secrets:
            if s in buf:
                buf = buf.replace(s, MASK)
        return buf

    def _held_suffix(self, buf: bytes) -> int:
        """Length of the longest end of `buf` that is a proper prefix of some secret."""
        best, n = 0, len(buf)
        for s in self.secrets:
            i = buf.find(s[:1], max(0, n - (len(s) - 1)))
            while i != -1 and n - i > best:
                if s.startswith(buf[i:]):
                    best = n - i
                    break
                i = buf.find(s[:1], i + 1)
        return best


def _pump(fd: int, out: BinaryIO, masker: Masker | None) -> None:
    try:
        while True:
            try:
                chunk = os.read(fd, READ_SIZE)
            except InterruptedError:
                continue
            except OSError:
                break
            if not chunk:
                break
            data = masker.feed(chunk) if masker else chunk
            if data:
                _write(out, data)
        if masker:
            tail = masker.flush()
            if tail:
                _write(out, tail)
    finally:
        os.close(fd)


def _write(out: BinaryIO, data: bytes) -> None:
    try:
        out.write(data)
        out.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass  # our reader went away; keep draining so the child is not blocked


def _terminal_foreground() -> bool:
    """True when our process group owns the terminal (Ctrl-C then reaches the child by itself)."""
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        try:
            if stream is not None and stream.isatty():
                return os.tcgetpgrp(stream.fileno()) == os.getpgrp()
        except (OSError, ValueError):
            continue
    return False


def _death_signal_setter() -> Callable[[], None] | None:
    """A function for the child's pre-exec: die with wsctl (Linux prctl), or None elsewhere.
    libc is loaded here, before the fork; the child only calls into it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # wsctl died between the fork and the prctl
            os._exit(1)

    return preexec


DONE = b"d"  # what wsctl writes to the watchdog once it has reaped the child itself


def start_watchdog(child_pid: int) -> int:
    """Fork a watchdog that kills child_pid when wsctl goes away without writing DONE. Answers
    the pipe's write end (wsctl's alone; close it after writing DONE)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the watchdog: no Python cleanup, no buffered output, only the pipe
        try:
            for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP, signal.SIGTSTP,
                        signal.SIGTTIN, signal.SIGTTOU, signal.SIGPIPE):
                signal.signal(sig, signal.SIG_IGN)
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            os.closerange(3, r)
            os.closerange(r + 1, 65536)
            said = b""
            while True:
                try:
                    chunk = os.read(r, 16)
                except InterruptedError:
                    continue
                if not chunk:
                    break
                said += chunk
            if DONE not in said:
                try:
                    os.kill(child_pid, signal.SIGKILL)
                except OSError:
                    pass
        finally:
            os._exit(0)
    os.close(r)
    os.set_inheritable(w, False)
    # reap the watchdog without waiting on it (it exits once our end of the pipe closes)
    threading.Thread(target=_reap, args=(pid,), daemon=True).start()
    return w


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _open_pty(like: TextIO) -> tuple[int, int] | None:
    """(master, slave) of a new pty sized like the terminal `like`, output passed as written."""
    try:
        import pty
        import termios

        master, slave = pty.openpty()
    except (ImportError, OSError):
        return None
    try:
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.OPOST  # no \n -> \r\n: the bytes reach our terminal as the child wrote them
        termios.tcsetattr(slave, termios.TCSANOW, attrs)
    except (OSError, termios.error):
        pass
    _copy_size(like, master)
    os.set_inheritable(master, False)
    return master, slave


def _copy_size(src: TextIO, dst_fd: int) -> None:
    try:
        import fcntl
        import termios

        size = fcntl.ioctl(src.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(dst_fd, termios.TIOCSWINSZ, size)
    except (OSError, ValueError, ImportError):
        pass


def _is_tty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError):
        return False


class _Child:
    """One run of the command: its process, the pipes or ptys its output is read from, the pump
    threads masking it, and the watchdog that kills it if wsctl dies."""

    def __init__(self, proc: subprocess.Popen, threads: list[threading.Thread], ptys: list, watchdog: int | None) -> None:
        self.proc, self.threads, self.ptys, self.watchdog = proc, threads, ptys, watchdog

    def reap(self, code: int) -> None:
        """After the process ended: tell the watchdog, drain the output."""
        if self.watchdog is not None:
            try:
                os.write(self.watchdog, DONE)
            except OSError:
                pass
        for t in self.threads:
            t.join()

    def close(self) -> None:
        if self.watchdog is not None:
            os.close(self.watchdog)
            self.watchdog = None


def _start(argv: list[str], env: dict[str, str], secrets: list[str], masking: bool) -> _Child | int:
    """Start the command with env (our environment plus the injected variables); answers the child,
    or the exit code when it could not be started (127 not found, 126 not runnable)."""
    child_env = {**os.environ, **env}
    sys.stdout.flush()
    sys.stderr.flush()
    # per stream: (what the child writes to, what we read, where it goes); all None when not masking
    streams: list[tuple[int, int, BinaryIO] | tuple[None, None, None]] = []
    ptys = []
    for ours in (sys.stdout, sys.stderr):
        if not masking:
            streams.append((None, None, None))
            continue
        made = _open_pty(ours) if _is_tty(ours) else None
        if made:
            ptys.append((ours, made[0]))
            streams.append((made[1], made[0], ours.buffer))
        else:
            r, w = os.pipe()
            os.set_inheritable(r, False)
            streams.append((w, r, ours.buffer))
    child_ends = [s[0] for s in streams]
    try:
        proc = subprocess.Popen(argv, env=child_env, stdout=child_ends[0], stderr=child_ends[1], close_fds=True,
                                preexec_fn=_death_signal_setter())
    except (FileNotFoundError, PermissionError, OSError) as e:
        for child_end, ours_end, _ in streams:
            for fd in (child_end, ours_end):
                if fd is not None:
                    os.close(fd)
        if isinstance(e, FileNotFoundError):
            print(f"error: command not found: {argv[0]}", file=sys.stderr)
            return 127
        if isinstance(e, PermissionError):
            print(f"error: permission denied: {argv[0]}", file=sys.stderr)
            return 126
        print(f"error: could not run {argv[0]}: {e.strerror or e}", file=sys.stderr)
        return 126
    for fd in child_ends:
        if fd is not None:
            os.close(fd)  # the child holds them now; the pty reads EIO / the pipe EOF once it is done
    watchdog = start_watchdog(proc.pid) if hasattr(os, "fork") else None
    threads: list[threading.Thread] = []
    for _, ours_end, dst in streams:
        if ours_end is None:
            continue
        t = threading.Thread(target=_pump, args=(ours_end, dst, Masker(secrets)), daemon=True)
        t.start()
        threads.append(t)
    return _Child(proc, threads, ptys, watchdog)


STOP_SECONDS = 10.0   # --watch: how long a child has to exit after SIGTERM before SIGKILL
Restart = Callable[[], "tuple[dict[str, str], list[str]] | None"]


def run_command(argv: list[str], env: dict[str, str], secrets: list[str], masking: bool = True,
                restart: Restart | None = None, interval: float = 5.0) -> int:
    """Run argv with env (our environment plus the injected variables); answers the exit code.

    restart (`vault run --watch`): asked every `interval` seconds while the child runs; when it
    answers (env, secrets) the child gets SIGTERM (SIGKILL after STOP_SECONDS), and once it has
    exited the command starts again with the new variables. The child ending on its own ends wsctl
    with its exit code, as without --watch."""
    # The forwarding handlers go in before the child starts: a SIGTERM that arrives between the
    # start and the handlers would otherwise end wsctl and, through the death signal, the child.
    started: list[subprocess.Popen] = []
    early: list[int] = []
    children: list[_Child] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT and _terminal_foreground():
            return  # the terminal sent it to the whole group, the child included
        if not started:
            early.append(signum)   # sent as soon as the child exists
            return
        try:
            started[-1].send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {}
    for name in FORWARDED:
        sig = getattr(signal, name, None)
        if sig is not None:
            previous[sig] = signal.signal(sig, forward)

    def resize(_signum: int, _frame: FrameType | None) -> None:
        for ours, master in children[-1].ptys if children else []:
            _copy_size(ours, master)

    if masking and hasattr(signal, "SIGWINCH"):
        previous[signal.SIGWINCH] = signal.signal(signal.SIGWINCH, resize)
    try:
        while True:
            child = _start(argv, env, secrets, masking)
            if isinstance(child, int):
                return child
            children.append(child)
            started.append(child.proc)
            for signum in early:
                forward(signum, None)
            early.clear()
            try:
                code, renewed = _wait(child.proc, restart, interval)
                child.reap(code)
            finally:
                child.close()
            if renewed is None:
                return 128 - code if code < 0 else code
            env, secrets = renewed
            print("wsctl: a credential changed; the command was restarted with its new values.", file=sys.stderr,
                  flush=True)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _wait(proc: subprocess.Popen, restart: Restart | None,
          interval: float) -> tuple[int, tuple[dict[str, str], list[str]] | None]:
    """(exit code, None) when the child ends by itself; (exit code, (env, secrets)) when `restart`
    asked for a new run and the child was stopped for it."""
    if restart is None:
        return proc.wait(), None
    while True:
        try:
            return proc.wait(interval), None
        except subprocess.TimeoutExpired:
            pass
        renewed = restart()
        if renewed is None:
            continue
        try:
            proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            code = proc.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
        return code, renewed
