"""`wsctl keys`: personal and platform API keys (the secret is shown once)."""
from __future__ import annotations

from typing import Annotated, List, Literal, Optional

import typer

from workspacectl.cli import choices
from workspacectl.cli.choices import scope_list
from workspacectl.cli.context import backend
from workspacectl.cli.output import JsonOpt, emit, info, list_table

app = typer.Typer(no_args_is_help=True)

COLUMNS = [("id", "ID"), ("kind", "KIND"), ("name", "NAME"), ("scopes", "SCOPES"), ("memberId", "MEMBER"),
           ("createdAt", "CREATED"), ("expiresAt", "EXPIRES"), ("revokedAt", "REVOKED")]


@app.command("list")
def list_(ctx: typer.Context, json: JsonOpt = False):
    """List your keys (an owner or admin sees everyone's)."""
    list_table(ctx, "/v1/keys", "keys", COLUMNS, "No keys.", json)


@app.command("create")
def create(
    ctx: typer.Context,
    kind: Annotated[Literal["platform", "personal"], typer.Option("--kind", help="platform (vault:*, docs:read) or personal (projects/memory/skills/triggers).")],
    scope: Annotated[List[str], typer.Option("--scope", "-s", click_type=scope_list(), help="A scope; repeat or comma-separate for several.")],
    name: Annotated[str, typer.Option("--name", help="A name to recognise the key by.")] = "",
    expires: Annotated[Optional[str], typer.Option("--expires", help="Expiry: an ISO timestamp or a duration such as 30d, 12h.")] = None,
    json: JsonOpt = False,
):
    """Make an API key. The secret is printed once; store it now."""
    scopes = [s for item in scope for s in item.replace(",", " ").split()]
    body = {"kind": kind, "scopes": scopes, "name": name}
    if expires:
        body["expiresAt"] = _expiry(expires)
    answer = backend(ctx).request("POST", "/v1/keys", body=body)

    def render(b):
        print(b["secret"])
        info(f"Key {b['id']} ({b['kind']}: {', '.join(b['scopes'])}). This secret is shown once; store it now.")

    emit(ctx, answer, render, json_flag=json)


@app.command("revoke")
def revoke(ctx: typer.Context, key_id: Annotated[str, typer.Argument(metavar="KEY", click_type=choices.key(),
                                                                       help="Key id (key_…) or name.")],
           json: JsonOpt = False):
    """Revoke a key at once."""
    from urllib.parse import quote

    from workspacectl.cli.refs import resolve

    key_id = resolve(ctx, "key", key_id)
    backend(ctx).request("DELETE", f"/v1/keys/{quote(key_id, safe='')}")
    emit(ctx, None, lambda _: info(f"Revoked {key_id}."), json_flag=json)


def _expiry(text: str) -> str:
    import re

    from workspacectl import clock

    m = re.fullmatch(r"(\d+)([smhdw])", text.strip())
    if not m:
        return text
    seconds = int(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[m.group(2)]
    return clock.later(seconds)
