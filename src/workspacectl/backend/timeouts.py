"""How long wsctl waits for a server, and what it says when a wait ends (issue 26 item 2).

One limit, SECONDS: `wsctl --timeout SECONDS ...`, else WSCTL_TIMEOUT, else 60.

- A command's calls to the server (each request, its retries and their backoff included) end
  within SECONDS from its first call: each connection must open within min(10, time left) and
  each answer come before the command's time is up. Past it the command ends, exit 8, with one
  line saying what timed out and after how long. A command that waits by design (vault run,
  vault connect --wait, events --follow, mcp, vault proxy) has no deadline of its own: each of
  its calls has SECONDS.
- A transfer (a bundle or skill upload or download, an upload whose answer streams progress) is
  bounded by progress, not by its total time: it stops only when no byte moves either way for
  SECONDS (a stalled upload times out; a slow one does not), and its time is not counted
  against the command's.
- A connection that opened and then broke is said as such (the server was reachable: it stopped or
  failed mid-request), never as a server to start.

No heavy import here: httpx's exceptions are told apart by name (backend/remote.py and
cli/skill/transfer.py call `transport_error`).
"""
from __future__ import annotations

import math
import os

from workspacectl.errors import ApiError

ENV = "WSCTL_TIMEOUT"
DEFAULT = 60.0
MAX = 86_400.0
CONNECT = 10.0                # the most a connection may take to open, whatever SECONDS is
HOW = "allow longer with --timeout SECONDS or WSCTL_TIMEOUT"

flag: float | None = None     # `wsctl --timeout SECONDS`, set by the root callback (cli/app.py)


def check(value: float, where: str) -> float:
    """A limit in seconds: above 0, at most MAX, finite; else invalid input naming where it came from."""
    if not (math.isfinite(value) and 0 < value <= MAX):
        raise ApiError("invalid_request", f"{where} must be a number of seconds above 0 and at most {MAX:.0f} "
                       f"(default {DEFAULT:.0f}), not {value:g}.")
    return value


def seconds() -> float:
    """The limit in force: --timeout, else WSCTL_TIMEOUT, else DEFAULT. A bad WSCTL_TIMEOUT is
    refused (exit 7, saying how to fix it), never guessed at."""
    if flag is not None:
        return flag
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return DEFAULT
    try:
        value = float(raw)
    except ValueError:
        raise ApiError("invalid_request", f"{ENV} must be a number of seconds above 0 and at most {MAX:.0f} "
                       f"(default {DEFAULT:.0f}), not '{raw[:40]}'; fix or unset it.") from None
    return check(value, ENV)


def seconds_or(default: float) -> float:
    """The limit the user set (--timeout, WSCTL_TIMEOUT), else `default` (a call with a shorter
    limit of its own, such as signing a profile out before it is removed)."""
    return seconds() if flag is not None or os.environ.get(ENV, "").strip() else default


def connect_seconds(limit: float) -> float:
    return min(CONNECT, limit)


def say(limit: float) -> str:
    return f"{limit:g} s"


def out_of_time(where: str, call: str, limit: float) -> ApiError:
    """The command's SECONDS ran out between two calls: `call` is not sent."""
    return ApiError("unreachable", f"The command ran out of time before {call}: its calls to {where} took "
                    f"{say(limit)} in all (a limit for the whole command). Check that the server is not overloaded, "
                    f"or {HOW}.")


def transport_error(exc: Exception, where: str, call: str, limit: float, transfer: bool = False,
                    may_have_landed: bool = False, whole_command: bool = False) -> ApiError:
    """The one line for an httpx transport failure of `call` ("GET /v1/x") to `where` ("the server
    at URL"). Exit 8 in every case; the words say what happened and what to do. whole_command:
    the command's deadline (not the call's own limit) ended the wait."""
    kind = type(exc).__name__
    if whole_command and kind in ("ConnectTimeout", "ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException"):
        return ApiError("unreachable", f"The command ran out of time waiting for {where} to answer {call}: its calls "
                        f"took {say(limit)} in all (a limit for the whole command). Check that the server is not "
                        f"overloaded or stuck, or {HOW}.")
    if kind == "ConnectTimeout":
        return ApiError("unreachable", f"Could not connect to {where} within {say(connect_seconds(limit))} ({call}). "
                        f"Check that the address is right and the server is running, or {HOW}.")
    if kind in ("ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException"):
        if transfer:
            way = "sending" if kind == "WriteTimeout" else "receiving"
            return ApiError("unreachable", f"The transfer with {where} stalled: nothing moved for {say(limit)} while "
                            f"{way} ({call}). The server stopped answering; check that it is running and not stuck, "
                            f"then run the command again (a slow transfer is fine: only a stall stops it; {HOW}).")
        return ApiError("unreachable", f"No answer from {where} to {call} within {say(limit)}: it accepted the "
                        f"connection but sent nothing back. Check that it is running and not stuck, or {HOW}.")
    if kind == "ConnectError":
        return ApiError("unreachable", f"Cannot reach {where} ({kind}). "
                        "Check --server / WSCTL_SERVER, or start it with `wsctl serve`.")
    then = ("; the request may or may not have taken effect, so check before running it again" if may_have_landed
            else ", then run the command again")
    return ApiError("unreachable", f"The connection to {where} broke during {call} ({kind}): the server was reachable "
                    f"but stopped or failed mid-request. Check that it is still running and its log{then}.")
