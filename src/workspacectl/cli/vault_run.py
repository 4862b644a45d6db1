"""`wsctl vault run`: a child process with secrets in its environment and masked in its output.

- No shell: the command's words go to exec as given (pass `bash -c '…'` to get one).
- The child's exit code is ours; a child killed by signal N makes us exit 128+N, as a shell does.
- SIGINT, SIGTERM and SIGHUP sent to wsctl are passed on to the child. A Ctrl-C typed at the
  terminal already reaches the child (same foreground process group), so SIGINT is not sent a
  second time while we are that group's foreground.
- Masking: the child's stdout and stderr are pipes read by two threads; every occurrence of a
  secret value becomes ``***``. A chunk that ends with the start of a secret keeps that start back
  until the next chunk decides it, so a secret split across writes or reads is still masked.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

MASK = b"***"
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP")
READ_SIZE = 65536


class Masker:
    """Streaming replacement of secret byte strings with ``***``."""

    def __init__(self, secrets: list[str]):
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


def _pump(fd: int, out, masker: Masker | None) -> None:
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


def _write(out, data: bytes) -> None:
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


def run_command(argv: list[str], env: dict[str, str], secrets: list[str], masking: bool = True) -> int:
    """Run argv with env (our environment plus the injected variables); answers the exit code."""
    child_env = {**os.environ, **env}
    pipe = subprocess.PIPE if masking else None
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        proc = subprocess.Popen(argv, env=child_env, stdout=pipe, stderr=pipe, close_fds=True)
    except FileNotFoundError:
        print(f"error: command not found: {argv[0]}", file=sys.stderr)
        return 127
    except PermissionError:
        print(f"error: permission denied: {argv[0]}", file=sys.stderr)
        return 126
    except OSError as e:
        print(f"error: could not run {argv[0]}: {e.strerror or e}", file=sys.stderr)
        return 126

    def forward(signum, _frame):
        if signum == signal.SIGINT and _terminal_foreground():
            return  # the terminal sent it to the whole group, the child included
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {}
    for name in FORWARDED:
        sig = getattr(signal, name, None)
        if sig is not None:
            previous[sig] = signal.signal(sig, forward)
    threads = []
    try:
        if masking:
            for src, dst in ((proc.stdout, sys.stdout.buffer), (proc.stderr, sys.stderr.buffer)):
                t = threading.Thread(target=_pump, args=(os.dup(src.fileno()), dst, Masker(secrets)), daemon=True)
                src.close()
                t.start()
                threads.append(t)
        code = proc.wait()
        for t in threads:
            t.join()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 128 - code if code < 0 else code
