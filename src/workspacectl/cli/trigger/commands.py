"""`wsctl trigger`: the trigger providers (webhook, cron, poll) that can start a workflow."""
from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import typer

from workspacectl.cli.catalog.commands import utf8
from workspacectl.cli.common.context import backend
from workspacectl.cli.common.output import JsonOpt, emit, fields, list_table

app = typer.Typer(help="Trigger providers that start workflows.", no_args_is_help=True)

COLUMNS = [("triggerId", "TRIGGER"), ("type", "TYPE"), ("service", "SERVICE"), ("cadenceSeconds", "CADENCE"),
           ("requiresCredential", "CREDENTIAL"), ("name", "NAME")]


@app.command("list")
def list_(
    ctx: typer.Context,
    q: Annotated[str | None, typer.Option("-q", "--query", metavar="TEXT", help="Only providers whose name, service or description match.")] = None,
    json: JsonOpt = False,
) -> None:
    """List trigger providers.

    \b
    Examples:
      wsctl trigger list -q github
    """
    list_table(ctx, "/v1/triggers", "triggers", COLUMNS,
               "No trigger providers match.", json, query={"q": utf8(q, "-q")} if q else None)


@app.command("show")
def show(ctx: typer.Context,
         trigger_id: Annotated[str, typer.Argument(metavar="TRIGGER_ID", help="e.g. webhook, cron, github-new-issue.")],
         json: JsonOpt = False) -> None:
    """Show one trigger provider.

    \b
    Examples:
      wsctl trigger show cron
      wsctl trigger show github-new-issue
    """
    body = backend(ctx).request("GET", f"/v1/triggers/{quote(utf8(trigger_id, 'TRIGGER_ID'), safe='')}")

    def render(b: Any) -> None:
        pairs = [("triggerId", b["triggerId"]), ("type", b["type"]), ("name", b["name"]),
                 ("service", b.get("service")), ("requiresCredential", b.get("requiresCredential"))]
        if "cadenceSeconds" in b:
            pairs.append(("cadenceSeconds", b["cadenceSeconds"]))
        if b.get("config"):
            pairs.append(("config", ", ".join(f"{k}={v}" for k, v in b["config"].items())))
        pairs.append(("description", b.get("description")))
        fields(pairs)

    emit(ctx, body, render, json_flag=json)
