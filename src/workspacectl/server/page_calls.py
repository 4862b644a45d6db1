"""Engine work that a hosted page or a presigned transfer runs on a thread, answered as the API
answers it: a write the environment refused (the write lock held past the busy timeout: 409; a
full or failing store, a database out of resources or connection: 503) is raised as its ApiError,
which every page already renders, instead of escaping as a 500. The /v1 routes get the same from
Engine.call."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

from workspacectl.engine.doors import refusals_answered

T = TypeVar("T")


async def run_engine(fn: Callable[..., T], *args: Any) -> T:
    """fn(*args) on a worker thread (run_in_threadpool), refused writes as their ApiError."""
    def answered() -> T:
        with refusals_answered():
            return fn(*args)

    return await run_in_threadpool(answered)
