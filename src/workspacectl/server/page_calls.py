"""Engine work that a hosted page or a presigned transfer runs on a thread, answered as the API
answers it: a write the environment refused (the write lock held past the busy timeout: 409; a
full or failing store, a database out of resources or connection: 503) is raised as its ApiError,
which every page already renders, instead of escaping as a 500. The /v1 routes get the same from
Engine.call."""
from __future__ import annotations

import sqlite3

from starlette.concurrency import run_in_threadpool

from workspacectl.engine.db import refused_write


async def run_engine(fn, *args):
    """fn(*args) on a worker thread (run_in_threadpool), refused writes as their ApiError."""
    try:
        return await run_in_threadpool(fn, *args)
    except sqlite3.OperationalError as e:
        if (refused := refused_write(e)) is None:
            raise
        raise refused from None
