"""`wsctl mcp`: the workspace as Model Context Protocol tools for an AI agent (mcp_door/)."""
from __future__ import annotations

import json as json_module
import sys
from typing import Annotated

import typer

from workspacectl.cli.common.context import backend, resolve, state
from workspacectl.cli.common.output import JsonOpt, emit
from workspacectl.errors import ApiError


def mcp(
    ctx: typer.Context,
    http: Annotated[bool, typer.Option("--http", help="Print the streamable HTTP endpoint of the profile's server (its /mcp) and a client configuration for it, instead of serving stdio.")] = False,
    json: JsonOpt = False,
) -> None:
    """Serve the workspace to an AI agent as Model Context Protocol tools (stdio).

    The agent's MCP client starts `wsctl mcp` and speaks MCP on its stdin and stdout. The tools act
    as this profile's member, or as WSCTL_API_KEY / WSCTL_TOKEN when set: the same scopes, grants,
    credential limits and audit as the CLI. A server (`wsctl serve`) also answers MCP over
    streamable HTTP at /mcp, authenticated like /v1.

    \b
    Examples:
      wsctl mcp                                   # what an agent's MCP configuration runs
      WSCTL_API_KEY=... wsctl mcp                 # the tools act as that key (read from the environment)
      wsctl --profile prod mcp --http             # where the prod server answers MCP over HTTP
    """
    if http:
        _print_http(ctx, json)
        return
    if sys.stdin.isatty() and sys.stdout.isatty():
        print("wsctl mcp speaks the Model Context Protocol on stdin/stdout for an agent's MCP client; "
              "see docs/mcp.md for its configuration (Ctrl-D ends).", file=sys.stderr)
    from workspacectl.mcp_door.protocol import serve_stdio

    be = backend(ctx)
    be.long_running()   # serves the agent until it closes stdin
    serve_stdio(be)


def _print_http(ctx: typer.Context, json: bool) -> None:
    target = resolve(state(ctx).profile_flag)
    if target.kind != "remote":
        raise ApiError("invalid_request", "This profile uses a local workspace, which has no HTTP endpoint: serve it "
                       "with `wsctl serve` and point the agent at http://HOST:PORT/mcp, or use `wsctl mcp` over stdio.")
    url = f"{target.location}/mcp"
    config = {"mcpServers": {"wsctl": {"type": "http", "url": url,
                                       "headers": {"Authorization": "Bearer ${WSCTL_API_KEY}"}}}}

    def render(body: dict) -> None:
        print(body["url"])
        print("# an agent's configuration (the key comes from its environment, never written here):")
        print(json_module.dumps(body["config"], indent=2))

    emit(ctx, {"url": url, "config": config}, render, json_flag=json)
