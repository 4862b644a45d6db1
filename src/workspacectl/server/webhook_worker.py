"""Webhook deliveries from `wsctl serve`: a daemon thread of every server process sending the due
deliveries each interval (WSCTL_WEBHOOK_INTERVAL seconds, default 2; 0 turns it off).

Every worker of `wsctl serve --workers N` and every replica on one workspace runs the thread;
there is no process-wide lease: each delivery row is claimed with its own lease
(engine/events/delivery.py), so they share the work, never send one delivery at once, and a
dying process's claimed deliveries are taken by another (or by itself restarted) once their
lease expires. A tick sends until nothing is due (in batches), then waits for the next one.
"""
from __future__ import annotations

import logging
import os
import sqlite3
import threading
from typing import TYPE_CHECKING

from workspacectl.engine import doors
from workspacectl.engine.doors import refusals_answered
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.engine.doors import Workspace

DEFAULT_INTERVAL = 2.0
INTERVAL_ENV = "WSCTL_WEBHOOK_INTERVAL"
log = logging.getLogger("wsctl.webhooks")


def resolve_interval() -> float:
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:  # also refuses NaN
        raise ApiError("invalid_request", f"{INTERVAL_ENV} must be a number of seconds from 0 (off) to 3600.")
    return value


def _loop(ws: Workspace, interval: float, stop: threading.Event, holder: str) -> None:
    try:
        while not stop.wait(interval):
            try:
                with refusals_answered():
                    while not stop.is_set() and doors.deliver_due(ws, holder) == doors.DELIVERY_BATCH:
                        pass
            except ApiError as e:   # a busy or refusing store: the next tick tries again
                log.warning("webhooks: %s", e.message)
            except (sqlite3.Error, OSError) as e:   # a workspace gone or unreadable: one line, as the memory timer says it
                log.warning("webhook deliveries failed (%s); retrying in %.1f s", e, interval)
            except Exception:  # a bug: its traceback, and keep the thread alive
                log.exception("webhook deliveries failed; retrying in %.1f s", interval)
    finally:
        ws.close()


class WebhookWorker:
    def __init__(self, ws: Workspace, interval: float) -> None:
        self.ws = ws
        self.stop_event = threading.Event()
        self.thread: threading.Thread | None = None
        if interval > 0:
            self.thread = threading.Thread(target=_loop, args=(ws, interval, self.stop_event, doors.new_holder()),
                                           name="wsctl-webhooks", daemon=True)
            self.thread.start()

    def stop(self, wait: float = 15.0) -> None:
        """Ends the thread after the attempt in flight (its lease would otherwise hold the delivery)."""
        self.stop_event.set()
        if self.thread is not None:
            self.thread.join(wait)


def start_webhook_worker(ws: Workspace) -> WebhookWorker:
    return WebhookWorker(ws, resolve_interval())
