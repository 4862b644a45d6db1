"""Long work over HTTP with its phases (issue 12): a `/v1` request sent with
`Accept: application/x-ndjson` hears what the engine reports while it works (Ctx.report: a
catalog import's read, resolve and index) as one JSON object per line:

    {"progress": {"phase": "resolve", "done": 40, "total": 120}}
    ...
    {"status": 201, "body": {...the route's JSON answer, or its error body...}}

The answer starts only when the first phase is reported, so work that reports nothing (every
route but a few), and every error found before the first phase (authentication, scope, a bad
body), is answered exactly as without the header: its own status and JSON body. Once lines have
started the status is 200 and the last line carries the real status and body. Lines of one
phase are sent at most every MIN_GAP seconds (a phase change always goes out at once).
docs/api.md §1 "Progress" is the contract.
"""
from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from workspacectl.engine.doors import Response
from workspacectl.errors import ApiError

if TYPE_CHECKING:
    from starlette.types import Send

    from workspacectl.server.engine_pool import EnginePool

MIN_GAP = 0.1
log = logging.getLogger("wsctl.server")
_DONE = object()


def line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


async def answer(pool: EnginePool, send: Send, call: Callable[..., Response],
                 reply: Callable[[Response], Awaitable[None]]) -> None:
    """Run call(progress=...) on the engine pool; progress lines as they come, or reply(resp)
    when no phase was reported before the answer."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    last_phase: list[str | None] = [None]
    last_at = [0.0]

    def progress(phase: str, done: int | None = None, total: int | None = None) -> None:   # an engine thread
        now = time.monotonic()
        if phase == last_phase[0] and now - last_at[0] < MIN_GAP and done != total:
            return
        last_phase[0], last_at[0] = phase, now
        loop.call_soon_threadsafe(queue.put_nowait, {"phase": phase, "done": done, "total": total})

    work = asyncio.ensure_future(pool.run(functools.partial(call, progress=progress)))
    work.add_done_callback(lambda _: queue.put_nowait(_DONE))
    started = False
    while (event := await queue.get()) is not _DONE:
        if not started:
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"application/x-ndjson"), (b"cache-control", b"no-store"),
                (b"x-accel-buffering", b"no")]})
            started = True
        await send({"type": "http.response.body", "body": line({"progress": event}), "more_body": True})
    if not started:
        await reply(work.result())   # an unexpected error is raised here, handled as on any request
        return
    try:
        resp: Response = work.result()
        last_line = {"status": resp.status, "body": resp.body}
    except Exception:   # a bug after the status went out: the contract's 500 body, in the stream
        log.exception("unhandled error in a progress stream")
        last_line = {"status": 500, "body": ApiError("internal", "Internal error; see the server log.").body()}
    await send({"type": "http.response.body", "body": line(last_line), "more_body": False})
