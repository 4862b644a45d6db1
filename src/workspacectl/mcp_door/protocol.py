"""The MCP SDK's low-level server around the tool and resource tables, over stdio (`wsctl mcp`) or
streamable HTTP (`/mcp` on `wsctl serve`, server/mcp_http.py). The only module that imports the SDK.

A refusal comes back as a tool error (`isError`), its text the CLI's line (`error: <message>`)
and its structured content `{error: {status, code, message}, exitCode}`: the same codes and messages
as `wsctl` prints and exits with. A resource that cannot be read is a JSON-RPC error naming why.
"""
from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from workspacectl import __version__
from workspacectl.errors import EXIT_CODES, ApiError
from workspacectl.mcp_door import Client, resources, tools

if TYPE_CHECKING:
    import mcp_types as types
    from mcp.server import Server
    from mcp.server.context import ServerRequestContext
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager

    Ctx = ServerRequestContext[Any, Any]

INSTRUCTIONS = (
    "wsctl gives you a workspace's integration catalog, vault, skills, memory and specialists. To call a "
    "third-party API: catalog_search for the operation, catalog_operation for its reference, "
    "vault_list_credentials for a credential of its service, then vault_issue_token (with a reason) and call "
    "the API yourself, or vault_proxy (with a reason) to call it through the workspace. Memory changes only "
    "through memory_propose. Every token and proxied call is audited with your reason."
)
RETURNS_SECRET = "wsctl/returnsSecret"
RESOURCE_NOT_FOUND = -32002   # the MCP specification's code for a resource that is not there

Run = Callable[[Callable[[], Any]], Awaitable[Any]]


async def inline(work: Callable[[], Any]) -> Any:
    """Run the work on the event loop's own thread (stdio: one client, and the local backend's
    SQLite connection belongs to this thread)."""
    return work()


def refusal_text(e: ApiError) -> str:
    """The CLI's own line for the same refusal (cli/main.py prints `error: ` + with_hint())."""
    return f"error: {e.with_hint()}"


def build_server(client_of: Callable[[], Client], run: Run = inline) -> Server[Any]:
    """A low-level MCP server whose handlers call through `client_of()` (the caller's door, read
    on the event loop, so a per-request caller set in a context variable is seen), running each
    tool's work through `run` (inline, or on a thread)."""
    import mcp_types as types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    listed_tools = [types.Tool(name=t.name, title=t.title, description=t.description, input_schema=t.input_schema(),
                               annotations=types.ToolAnnotations(title=t.title, read_only_hint=t.read_only,
                                                                 destructive_hint=t.destructive,
                                                                 idempotent_hint=t.idempotent,
                                                                 open_world_hint=t.open_world),
                               _meta={RETURNS_SECRET: t.returns_secret})
                    for t in tools.TOOLS]

    async def list_tools(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed_tools)

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        client = client_of()
        try:
            body = await run(lambda: tools.run_tool(client, params.name, params.arguments))
        except ApiError as e:
            structured = {"error": e.body()["error"], "exitCode": EXIT_CODES.get(e.code, 1)}
            return types.CallToolResult(content=[types.TextContent(text=refusal_text(e))],
                                        structured_content=structured, is_error=True)
        structured = body if isinstance(body, dict) else {"result": body}
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(body, ensure_ascii=False, indent=1))],
                                    structured_content=structured)

    async def list_resources(ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        client = client_of()
        try:
            found = await run(lambda: resources.listed(client))
        except ApiError as e:
            raise MCPError(-32603, refusal_text(e)) from None
        return types.ListResourcesResult(resources=[
            types.Resource(uri=r.uri, name=r.name, description=r.description, mime_type=r.mime_type) for r in found])

    async def list_templates(ctx: Ctx, params: types.PaginatedRequestParams | None) \
            -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=t.uri, name=t.name, description=t.description, mime_type=t.mime_type)
            for t in resources.TEMPLATES])

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        client = client_of()
        uri = str(params.uri)
        try:
            text, mime = await run(lambda: resources.read(client, uri))
        except ApiError as e:
            raise MCPError(RESOURCE_NOT_FOUND if e.code == "not_found" else -32603, refusal_text(e),
                           {"code": e.code, "status": e.status}) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

    return Server("wsctl", version=__version__, title="workspacectl", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
                  on_list_resource_templates=list_templates, on_read_resource=read_resource)


def serve_stdio(client: Client) -> None:
    """Serve one MCP client on stdin/stdout until it closes them."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(lambda: client)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def http_handler(client_of: Callable[[], Client], run: Run) \
        -> tuple[StreamableHTTPASGIApp, StreamableHTTPSessionManager]:
    """(ASGI app, session manager) answering MCP's streamable HTTP: stateless (every POST stands
    alone, so each is authenticated on its own, and any replica answers any request) with JSON
    answers. The session manager must be running (`async with manager.run()`) while it serves."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(app=build_server(client_of, run), json_response=True, stateless=True)
    return StreamableHTTPASGIApp(manager), manager
