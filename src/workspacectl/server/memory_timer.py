"""The memory agent on a timer: a daemon thread of `wsctl serve` folding every owner's pending
notes each interval (--memory-interval, else WSCTL_MEMORY_INTERVAL, else 300 s; 0 turns it off).

Several server processes on one workspace each run a timer; that is safe because each batch of
a fold is one BEGIN IMMEDIATE transaction that re-reads the pending notes, and short, so the
timer never holds the workspace for long (engine/memory/agent.py).

The same thread runs housekeeping (engine/housekeeping.maybe_sweep: at most once an hour per
workspace, whichever process claims it) after each run; with the memory agent off (0) it still
ticks every DEFAULT_INTERVAL seconds for housekeeping alone.
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
    from workspacectl.engine.memory.agent import fold_all_pending

    for result in fold_all_pending(ws.conn()):
        if result["folded"] or result["dropped"]:
            log.info("memory agent: %s %s folded %d, dropped %d, version %d", result["ownerType"],
                     result["membershipId"] or "", len(result["folded"]), len(result["dropped"]), result["version"])


def _housekeep(ws) -> None:
    from workspacectl.engine.housekeeping import maybe_sweep

    counts = maybe_sweep(ws)
    if counts and any(counts.values()):
        log.info("housekeeping: %s", ", ".join(f"{k} {v}" for k, v in counts.items()))


def _loop(ws, interval: float, fold: bool, stop: threading.Event) -> None:
    jobs = ([(_run_once, "memory agent")] if fold else []) + [(_housekeep, "housekeeping")]
    while not stop.wait(interval):
        for job, name in jobs:
            try:
                job(ws)
            except ApiError as e:
                log.warning("%s: %s", name, e.message)
            except Exception:  # keep the timer alive (e.g. the database locked past the busy timeout)
                log.exception("%s run failed; retrying in %.0f s", name, interval)


def start_memory_timer(ws, interval: float) -> threading.Event:
    """Start the timer thread; answers the event that stops it. interval 0: the memory agent is
    off and the thread ticks every DEFAULT_INTERVAL seconds for housekeeping only."""
    stop = threading.Event()
    tick = interval if interval > 0 else DEFAULT_INTERVAL
    threading.Thread(target=_loop, args=(ws, tick, interval > 0, stop), name="wsctl-timer", daemon=True).start()
    return stop
