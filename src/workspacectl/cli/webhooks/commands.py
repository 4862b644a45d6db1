"""`wsctl webhooks`: signed webhook subscriptions to the event feed (owner or admin)."""
from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import typer

from workspacectl.cli.common.context import backend
from workspacectl.cli.common.output import JsonOpt, emit, fields, info, list_table

app = typer.Typer(no_args_is_help=True)

COLUMNS = [("id", "ID"), ("url", "URL"), ("events", "EVENTS"), ("createdBy", "CREATED BY"), ("createdAt", "CREATED")]
DELIVERY_COLUMNS = [("id", "ID"), ("eventType", "EVENT"), ("status", "STATUS"), ("attempts", "ATTEMPTS"),
                    ("lastStatus", "HTTP"), ("lastError", "ERROR"), ("lastAttemptAt", "LAST ATTEMPT"),
                    ("nextAttemptAt", "NEXT ATTEMPT")]
WebhookId = Annotated[str, typer.Argument(metavar="ID", help="The subscription's id (wh_…).")]


def _path(webhook_id: str, suffix: str = "") -> str:
    """(`suffix`, by that name, is how tests/core/test_cli_routes.py reads a path helper.)"""
    return f"/v1/webhooks/{quote(webhook_id, safe='')}{suffix}"


@app.command("add")
def add(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(help="Where to send the events: an http(s) URL.")],
    event: Annotated[list[str] | None, typer.Option("--event", help="An event type (credential.broken), a family (credential.*) or * for all (the default); repeat or comma-separate.")] = None,
    json: JsonOpt = False,
) -> None:
    """Subscribe a URL to events. The signing secret (whsec_…) is printed once; store it now.

    \b
    Examples:
      wsctl webhooks add https://hooks.example.com/wsctl
      wsctl webhooks add https://hooks.example.com/vault --event 'credential.*'
    """
    types = [t for item in (event or ["*"]) for t in item.replace(",", " ").split()]
    answer = backend(ctx).request("POST", "/v1/webhooks", body={"url": url, "events": types})

    def render(b: Any) -> None:
        print(b["secret"])
        info(f"Webhook {b['id']} sends {', '.join(b['events'])} to {b['url']}, signed per Standard Webhooks "
             "with the secret above (shown once; store it now).")

    emit(ctx, answer, render, json_flag=json)


@app.command("list")
def list_(ctx: typer.Context, json: JsonOpt = False) -> None:
    """List the webhook subscriptions."""
    list_table(ctx, "/v1/webhooks", "webhooks", COLUMNS, "No webhooks.", json)


@app.command("remove")
def remove(ctx: typer.Context, webhook_id: WebhookId, json: JsonOpt = False) -> None:
    """Remove a subscription, its pending deliveries and its delivery log.

    \b
    Examples:
      wsctl webhooks remove wh_01j9z4a2b3c4d5e6f7g8
    """
    backend(ctx).request("DELETE", _path(webhook_id))
    emit(ctx, None, lambda _: info(f"Removed {webhook_id}."), json_flag=json)


@app.command("test")
def test(ctx: typer.Context, webhook_id: WebhookId, json: JsonOpt = False) -> None:
    """Send a signed webhook.test event to the subscription now and show the outcome.

    \b
    Examples:
      wsctl webhooks test wh_01j9z4a2b3c4d5e6f7g8
    """
    answer = backend(ctx).request("POST", _path(webhook_id, "/test"))

    def render(d: Any) -> None:
        fields([("delivery", d["id"]), ("status", d["status"]), ("http", d["lastStatus"]),
                ("error", d["lastError"]), ("next attempt", d["nextAttemptAt"])])

    emit(ctx, answer, render, json_flag=json)


@app.command("deliver")
def deliver(ctx: typer.Context, json: JsonOpt = False) -> None:
    """Send the due deliveries now, from this process (no `wsctl serve` needed; e.g. from cron)."""
    answer = backend(ctx).request("POST", "/v1/webhooks/deliver")
    emit(ctx, answer, lambda b: info(f"Delivered {b['delivered']}; {b['pending']} to retry later, "
                                     f"{b['failed']} given up."), json_flag=json)


@app.command("deliveries")
def deliveries(ctx: typer.Context, webhook_id: WebhookId, json: JsonOpt = False) -> None:
    """A subscription's delivery log, newest first: status, attempts, last HTTP status or error.

    \b
    Examples:
      wsctl webhooks deliveries wh_01j9z4a2b3c4d5e6f7g8 --limit 20
    """
    list_table(ctx, _path(webhook_id, "/deliveries"), "deliveries", DELIVERY_COLUMNS, "No deliveries.", json)
