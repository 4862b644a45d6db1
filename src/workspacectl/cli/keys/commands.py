"""`wsctl keys`: personal and platform API keys (the secret is shown once)."""
from __future__ import annotations

from typing import Annotated, Any, Literal

import typer

from workspacectl.cli.common import choices
from workspacectl.cli.common.choices import scope_list
from workspacectl.cli.common.context import backend
from workspacectl.cli.common.output import JsonOpt, emit, info, table, visible

app = typer.Typer(no_args_is_help=True)

COLUMNS = [("id", "ID"), ("kind", "KIND"), ("name", "NAME"), ("scopes", "SCOPES"), ("credentials", "CREDENTIALS"),
           ("memberId", "MEMBER"), ("createdAt", "CREATED"), ("expiresAt", "EXPIRES"), ("revokedAt", "REVOKED")]


@app.command("list")
def list_(ctx: typer.Context, json: JsonOpt = False) -> None:
    """List your keys (an owner or admin sees everyone's). CREDENTIALS: what a platform key is
    limited to (names where you can see them, else ids), `all` when it is not limited."""
    from workspacectl.cli.common.context import all_pages

    body = all_pages(ctx, "/v1/keys", "keys")
    emit(ctx, body, lambda b: table(_shown_limits(ctx, b["keys"]), COLUMNS, "No keys."), json_flag=json)


def _shown_limits(ctx: typer.Context, keys: list[dict]) -> list[dict]:
    """The keys with their credential limit as the table shows it: the credentials' names (one
    lookup, only when a key is limited), an id for one you cannot see, `all` for no limit."""
    names: dict = {}
    if any(k.get("credentials") for k in keys):
        from workspacectl.cli.common.context import all_pages
        from workspacectl.errors import ApiError

        try:
            names = {c["id"]: c["name"] for c in all_pages(ctx, "/v1/credentials", "credentials")["credentials"]}
        except ApiError:
            names = {}
    out = []
    for k in keys:
        limit = k.get("credentials")
        shown = [visible(names.get(c, c)) for c in limit] if isinstance(limit, list) else (
            "all" if k.get("kind") == "platform" else "")
        out.append({**k, "credentials": shown})
    return out


@app.command("create")
def create(
    ctx: typer.Context,
    kind: Annotated[Literal["platform", "personal"], typer.Option("--kind", help="platform (vault:*, docs:read) or personal (projects/memory/skills/triggers).")],
    scope: Annotated[list[str], typer.Option("--scope", "-s", click_type=scope_list(), help="A scope; repeat or comma-separate for several.")],
    name: Annotated[str, typer.Option("--name", help="A name to recognise the key by.")] = "",
    expires: Annotated[str | None, typer.Option("--expires", help="Expiry: an ISO timestamp or a duration such as 30d, 12h.")] = None,
    credential: Annotated[list[str] | None, typer.Option(
        "--credential", metavar="CREDENTIAL", click_type=choices.credential(),
        help="Limit a platform key to this credential (id or name); repeat for several. Any other "
             "credential does not exist for the key.")] = None,
    json: JsonOpt = False,
) -> None:
    """Make an API key. The secret is printed once; store it now.

    \b
    Examples:
      wsctl keys create --kind platform --scope vault:token --credential stripe-live --name ci-deploy
      wsctl keys create --kind personal --scope vault:read,docs:read --expires 30d
    """
    scopes = [s for item in scope for s in item.replace(",", " ").split()]
    body: dict = {"kind": kind, "scopes": scopes, "name": name}
    if expires:
        body["expiresAt"] = _expiry(expires)
    if credential:
        from workspacectl.cli.common.refs import resolve_all
        from workspacectl.errors import ApiError

        if kind != "platform":   # before any lookup: the engine says the same (400)
            raise ApiError("invalid_request", "--credential limits a platform key to named credentials; a "
                           "personal key reaches no credential. Drop --credential, or use --kind platform.")
        body["credentials"] = resolve_all(ctx, "credential", credential)
    answer = backend(ctx).request("POST", "/v1/keys", body=body)

    def render(b: Any) -> None:
        print(b["secret"])
        limit = f"; only {len(b['credentials'])} credential(s): {visible(', '.join(credential or []))}" \
            if b.get("credentials") else ""
        info(f"Key {b['id']} ({b['kind']}: {', '.join(b['scopes'])}{limit}). This secret is shown once; "
             "store it now.")

    emit(ctx, answer, render, json_flag=json)


@app.command("revoke")
def revoke(ctx: typer.Context, key_id: Annotated[str, typer.Argument(metavar="KEY", click_type=choices.key(),
                                                                       help="Key id (key_…) or name.")],
           json: JsonOpt = False) -> None:
    """Revoke a key at once.

    \b
    Examples:
      wsctl keys revoke ci-deploy
      wsctl keys revoke key_01j9z3v8kq2m7x4c5b6n
    """
    from urllib.parse import quote

    from workspacectl.cli.common.refs import resolve

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
