"""The memory agent on a timer: a daemon thread of `wsctl serve` folding every owner's pending
notes each interval (--memory-interval, else WSCTL_MEMORY_INTERVAL, else 300 s; 0 turns it off).

Every server process on a workspace (each worker of `wsctl serve --workers N`, separate servers)
starts the thread, but a tick runs the jobs only in the process holding the LEASE
(engine/leases.py): it acquires or renews the lease each tick, for LEASE_TICKS ticks (at least
LEASE_MIN_SECONDS), so when its holder stops cleanly (the lease is released) or dies (it
expires), the next tick of another process takes over. Folding stays safe even when two did
run it (each batch is one BEGIN IMMEDIATE transaction that re-reads the pending notes).

The same thread runs housekeeping (engine/doors.housekeeping: at most once an hour per
workspace) after each run; with the memory agent off (0) it still ticks every DEFAULT_INTERVAL
seconds for housekeeping alone.
"""
from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING

from workspacectl.engine import doors
from workspacectl.engine.doors import refusals_answered
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.doors import Workspace

DEFAULT_INTERVAL = 300.0
LEASE = "server-timer"
LEASE_TICKS = 3
LEASE_MIN_SECONDS = 30.0
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


def _run_once(ws: Workspace) -> None:
    for result in doors.fold_all_pending(ws):
        if result["folded"] or result["dropped"]:
            log.info("memory agent: %s %s folded %d, dropped %d, version %d", result["ownerType"],
                     result["membershipId"] or "", len(result["folded"]), len(result["dropped"]), result["version"])


def _housekeep(ws: Workspace) -> None:
    counts = doors.housekeeping(ws)
    if counts and any(counts.values()):
        log.info("housekeeping: %s", ", ".join(f"{k} {v}" for k, v in counts.items()))


def _holds_lease(ws: Workspace, holder: str, ttl: float, held: bool) -> bool:
    try:
        with refusals_answered():
            now_held = doors.acquire_lease(ws, LEASE, holder, ttl)
    except ApiError as e:   # the database locked past the busy timeout, or refusing writes: skip this tick
        log.warning("timer: could not take or renew the %s lease (%s); retrying next tick", LEASE, e.message)
        return False
    except Exception:
        log.exception("timer: could not take or renew the %s lease; retrying next tick", LEASE)
        return False
    if now_held != held:
        log.info("timer: this process %s the memory agent and housekeeping", "now runs" if now_held else "no longer runs")
    return now_held


def _loop(ws: Workspace, interval: float, fold: bool, stop: threading.Event, holder: str) -> None:
    jobs = ([(_run_once, "memory agent")] if fold else []) + [(_housekeep, "housekeeping")]
    ttl = max(LEASE_TICKS * interval, LEASE_MIN_SECONDS)
    held = False
    try:
        while not stop.wait(interval):
            held = _holds_lease(ws, holder, ttl, held)
            if not held:
                continue
            for job, name in jobs:
                try:
                    with refusals_answered():   # locked past the busy timeout, a store refusing writes
                        job(ws)
                except ApiError as e:
                    log.warning("%s: %s", name, e.message)
                except Exception:  # keep the timer alive
                    log.exception("%s run failed; retrying in %.0f s", name, interval)
    finally:
        ws.close()   # the timer thread's connection


class Timer:
    """The running timer thread of this process; stop() ends it and hands the lease on."""

    def __init__(self, ws: Workspace, interval: float) -> None:
        self.ws = ws
        self.holder = doors.new_holder()
        self.stop_event = threading.Event()
        tick = interval if interval > 0 else DEFAULT_INTERVAL
        self.thread = threading.Thread(target=_loop, args=(ws, tick, interval > 0, self.stop_event, self.holder),
                                       name="wsctl-timer", daemon=True)
        self.thread.start()

    def stop(self, wait: float = 10.0) -> None:
        self.stop_event.set()
        self.thread.join(wait)   # a job in progress ends first (a fold batch is short)
        try:
            doors.release_lease(self.ws, LEASE, self.holder)
        except Exception as e:  # shutting down (the workspace may be gone): the lease expires on its own
            log.warning("timer: could not release the %s lease (%s); it expires on its own", LEASE, e)
        finally:
            self.ws.close()   # the connection the release took on this (shutdown) thread


def start_memory_timer(ws: Workspace, interval: float) -> Timer:
    """Start the timer thread. interval 0: the memory agent is off and the thread ticks every
    DEFAULT_INTERVAL seconds for housekeeping only."""
    return Timer(ws, interval)
