"""`wsctl events`: the workspace's event feed (GET /v1/events), newest first, or followed live."""
from __future__ import annotations

import sys
from typing import Annotated

import typer

from workspacectl.cli.common.context import backend
from workspacectl.cli.common.output import JsonOpt, emit, table

COLUMNS = [("timestamp", "TIME"), ("type", "TYPE"), ("subjectId", "SUBJECT"), ("actorId", "ACTOR"),
           ("detail", "DETAIL")]
DEFAULT_LIMIT = 100
MIN_INTERVAL, MAX_INTERVAL = 0.2, 300.0


def _detail(event: dict) -> str:
    data = event.get("data") or {}
    return " ".join(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in data.items())


def _row(event: dict) -> dict:
    return {**event, "actorId": event.get("actorId") or "-", "subjectId": event.get("subjectId") or "-",
            "detail": _detail(event)}


def _query(types: list[str], subject: list[str]) -> dict:
    query = {}
    if types:
        query["type"] = ",".join(t for item in types for t in item.replace(",", " ").split())
    if subject:
        query["subject"] = ",".join(subject)
    return query


def events(
    ctx: typer.Context,
    type_: Annotated[list[str] | None, typer.Option("--type", metavar="TYPE", help="Only these event types (credential.broken) or families (credential.*); repeat or comma-separate.")] = None,
    subject: Annotated[list[str] | None, typer.Option("--subject", help="Only events about this id (cred_…, key_…, um_…); repeat for several.")] = None,
    follow: Annotated[bool, typer.Option("--follow", help="Keep printing new events as they happen, until interrupted.")] = False,
    interval: Annotated[float, typer.Option("--interval", metavar="SECONDS", min=MIN_INTERVAL, max=MAX_INTERVAL, help="With --follow: seconds between polls of the feed.")] = 2.0,
    json: JsonOpt = False,
) -> None:
    """Show the workspace's event feed: what happened, newest first.

    Credentials connected, reconnected, refreshed, broken, updated, shared or deleted; keys made or
    revoked; members added; skills published; memory folded. Newest first, the latest 100 unless --limit or --all says otherwise. An owner or admin sees
    every event; another member the events of the credentials it can see. With --follow, the
    events after the newest are printed as they come (one JSON object a line with --json).

    \b
    Examples:
      wsctl events --type 'credential.*'
      wsctl events --follow --subject stripe-live
    """
    from workspacectl.cli.common.context import all_pages

    query = _query(type_ or [], subject or [])
    if follow:
        _follow(ctx, query, interval, json)
        return
    body = all_pages(ctx, "/v1/events", "events", {**query, "order": "desc"}, default_limit=DEFAULT_LIMIT)
    emit(ctx, body, lambda b: table([_row(e) for e in b["events"]], COLUMNS, "No events."), json_flag=json)


def _follow(ctx: typer.Context, query: dict, interval: float, json_lines: bool) -> None:
    """Poll the feed oldest first from its newest event, printing each new one; Ctrl-C ends it."""
    import json as jsonlib
    import time

    from workspacectl.cli.common.context import state

    be = backend(ctx)
    be.long_running()   # a feed followed until Ctrl-C
    as_json = json_lines or state(ctx).json
    cursor = be.request("GET", "/v1/events", query={**query, "order": "desc", "limit": "1"})["cursor"]
    try:
        while True:
            body = be.request("GET", "/v1/events", query={**query, "cursor": cursor, "limit": "500"})
            for e in body["events"]:
                if as_json:
                    print(jsonlib.dumps(e), flush=True)
                else:
                    print("\t".join(str(_row(e)[k]) for k, _ in COLUMNS), flush=True)
            cursor = body["cursor"]
            if not body.get("nextCursor"):
                time.sleep(interval)
    except KeyboardInterrupt:
        sys.stderr.write("\n")
