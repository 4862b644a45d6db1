"""`wsctl serve`: the workspace over HTTP (FastAPI + uvicorn, imported only here)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from workspacectl.cli.common.context import resolve, state
from workspacectl.errors import ApiError


def serve(
    ctx: typer.Context,
    workspace: Annotated[Path | None, typer.Option("--workspace", "-w", help="Workspace folder or postgresql:// URL to serve (default: the profile's or the embedded one).")] = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on.")] = 8750,
    public_url: Annotated[str | None, typer.Option("--public-url", metavar="URL", help="Base URL clients reach this server at (for hosted links), when behind a proxy.")] = None,
    workers: Annotated[int, typer.Option("--workers", metavar="N", min=1, max=64, help="Server processes answering on the port (default 1); the memory agent and housekeeping run in one of them.")] = 1,
    memory_interval: Annotated[float | None, typer.Option("--memory-interval", metavar="SECONDS", help="Seconds between memory agent runs (default: WSCTL_MEMORY_INTERVAL or 300; 0 turns the agent off; housekeeping still runs every 300 s).")] = None,
) -> None:
    """Serve a workspace over HTTP at /v1, with the hosted sign-in and connect pages.

    \b
    Examples:
      wsctl serve --port 8080
      wsctl serve --workspace ~/acme --host 0.0.0.0 --public-url https://wsctl.acme.dev
    """
    from workspacectl.cli.common.context import ensure_workspace_path, local_location, location_arg
    from workspacectl.server.app import listen_socket
    from workspacectl.server.app import serve as run
    from workspacectl.server.memory_timer import resolve_interval

    given = location_arg(workspace) if workspace else None
    path = local_location(given) if given else None
    if path is None:
        target = resolve(state(ctx).profile_flag)
        if target.kind == "remote":
            raise typer.BadParameter("the active profile points at a server; pass --workspace DIR", param_hint="--workspace")
        path = target.location
    ensure_workspace_path(path, state(ctx).profile_flag)
    interval = resolve_interval(memory_interval)
    try:
        sock = listen_socket(host, port)
    except OSError as e:
        raise ApiError("invalid_request", f"Cannot listen on {host}:{port} ({e.strerror or e}). "
                       "Stop whatever uses that port or pick another --port / --host.") from None
    from workspacectl.cli.common import first_use

    first_use.keep()  # listening: an embedded workspace made for this server stays (and others may use it)
    if workers == 1:
        run(path, sock, public_url, memory_interval=interval)
        return
    from workspacectl.server.workers import WorkersFailed, supervise

    try:
        supervise(workers, sock, path, public_url, interval)
    except WorkersFailed as e:
        raise ApiError("internal", f"wsctl serve stopped: {e}. Check the lines above, then start it again.") from None
