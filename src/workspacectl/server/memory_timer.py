"""The memory agent on a timer: a daemon thread of `wsctl serve` folding every owner's pending
notes each interval (--memory-interval, else WSCTL_MEMORY_INTERVAL, else 300 s; 0 turns it off).

Several server processes on one workspace each run a timer; that is safe because a fold is one
BEGIN IMMEDIATE transaction that re-reads the pending notes (engine/memory_agent.py).
"""
from __future__ import annotations

import logging
import os
import threading

from workspacectl.errors import ApiError

DEFAULT_INTERVAL = 300.0
INTERVAL_ENV = "WSCTL_MEMORY_INTERVAL"
log = logging.getLogger("wsctl.memory")


def resolve_interval(flag: float | None) -> float:
    """Seconds between runs: the flag, else the env var, else the default. 0 means off."""
    if flag is not None:
        value, source = flag, "--memory-interval"
    else:
        raw = os.environ.get(INTERVAL_ENV, "").strip()
        if not raw:
            return DEFAULT_INTERVAL
        try:
            value, source = float(raw), INTERVAL_ENV
        except ValueError:
            value, source = -1.0, INTERVAL_ENV
    if not 0 <= value <= 7 * 86400:  # also refuses NaN
        raise ApiError("invalid_request", f"{source} must be a number of seconds from 0 (off) to 604800.")
    return value


def _run_once(ws) -> None:
    from workspacectl.engine.memory_agent import fold_all_pending

    for result in fold_all_pending(ws.conn()):
        if result["folded"] or result["dropped"]:
            log.info("memory agent: %s %s folded %d, dropped %d, version %d", result["ownerType"],
                     result["membershipId"] or "", len(result["folded"]), len(result["dropped"]), result["version"])


def _loop(ws, interval: float, stop: threading.Event) -> None:
    while not stop.wait(interval):
        try:
            _run_once(ws)
        except ApiError as e:
            log.warning("memory agent: %s", e.message)
        except Exception:  # keep the timer alive (e.g. the database locked past the busy timeout)
            log.exception("memory agent run failed; retrying in %.0f s", interval)


def start_memory_timer(ws, interval: float) -> threading.Event | None:
    """Start the timer thread; answers the event that stops it (None when the timer is off)."""
    if interval <= 0:
        return None
    stop = threading.Event()
    threading.Thread(target=_loop, args=(ws, interval, stop), name="wsctl-memory-agent", daemon=True).start()
    return stop
