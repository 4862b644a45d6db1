"""`wsctl vault run --watch`: when to restart the command, from the event feed (GET /v1/events).

The Watcher is the restart callback of vault_run.run_command: each call reads the feed's events
about the injected credentials after the cursor it keeps. A reconnect, a refresh or a change of
fields (`credential.updated`; with --var-names credential a rename too, which renames the
variables) means new values: they are issued (audited, with the run's reason) and answered, and
the command restarts with them. A credential broken or deleted is said on stderr once; the
command keeps running with what it has (nothing newer can be issued).

The cursor is taken after each issue, so a refresh that issue itself caused does not restart the
command again. A feed that cannot be read (the server restarting, the network) is said once and
tried again at the next interval; the command keeps running meanwhile.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from workspacectl.backend.base import Backend

RESTARTS = ("credential.reconnected", "credential.refreshed", "credential.updated")
WARNS = ("credential.broken", "credential.deleted")


class Watcher:
    def __init__(self, be: Backend, cred_ids: list[str], issue: Callable[[], tuple[dict[str, str], list[str]]],
                 renames_matter: bool = False) -> None:
        self.be, self.issue = be, issue
        types = RESTARTS + WARNS + (("credential.renamed",) if renames_matter else ())
        self.restarts = set(RESTARTS) | ({"credential.renamed"} if renames_matter else set())
        self.query = {"subject": ",".join(cred_ids), "type": ",".join(types)}
        self.cursor = self._newest()
        self.failing = False

    def _newest(self) -> str:
        return self.be.request("GET", "/v1/events", query={**self.query, "order": "desc", "limit": "1"})["cursor"]

    def _new_events(self) -> list[dict]:
        events: list[dict] = []
        while True:
            body = self.be.request("GET", "/v1/events", query={**self.query, "cursor": self.cursor, "limit": "500"})
            events += body["events"]
            self.cursor = body["cursor"]
            if not body.get("nextCursor"):
                return events

    def _say(self, message: str) -> None:
        print(f"wsctl: {message}", file=sys.stderr, flush=True)

    def __call__(self) -> tuple[dict[str, str], list[str]] | None:
        try:
            events = self._new_events()
        except ApiError as refused:
            if not self.failing:
                self._say(f"could not read the event feed ({refused.message}); trying again, the command keeps running.")
            self.failing = True
            return None
        self.failing = False
        for e in events:
            if e["type"] in WARNS:
                data = e.get("data") or {}
                state = ("was deleted" if e["type"] == "credential.deleted" else
                         f"is {data.get('status', 'broken')} ({data.get('reason', 'no reason given')})")
                self._say(f"credential {e['subjectId']} {state}; the command keeps its current values.")
        if not any(e["type"] in self.restarts for e in events):
            return None
        try:
            renewed = self.issue()
        except ApiError as refused:
            self._say(f"a credential changed but new values could not be issued ({refused.message}); the command keeps "
                      "running with its current values.")
            return None
        try:
            self.cursor = self._newest()
        except ApiError:
            pass
        return renewed
