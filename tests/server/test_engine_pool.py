"""server/engine_pool.py, the threads behind the lean /v1 path: calls keep to one thread while it
finishes them, a stuck call gets another thread so the rest still run, and threads added that
way end once the queue is empty. Orders and states are checked, never durations (WAIT is only a
bound for a loaded machine). Through a server: tests/vault/test_refresh_concurrency.py
(a write answered while a token request waits on its provider)."""
from __future__ import annotations

import threading

import pytest

from tests.conftest import wait_until
from workspacectl.server.engine_pool import EnginePool

WAIT = 60
NEVER = 3600.0   # a stall this long never happens within a test: the pool cannot grow


def test_results_and_exceptions_come_back():
    pool = EnginePool()
    try:
        assert pool.submit(lambda a, b=0: a + b, 2, b=3).result(WAIT) == 5
        with pytest.raises(ZeroDivisionError):
            pool.submit(lambda: 1 / 0).result(WAIT)
        assert pool.submit(str, 7).result(WAIT) == "7"   # the thread survived the exception
    finally:
        pool.shutdown()


def test_calls_wait_their_turn_on_one_thread_in_order():
    pool = EnginePool(core=1, stall=NEVER)
    gate = threading.Event()
    ran: list[tuple[int, str]] = []
    try:
        first = pool.submit(lambda: (gate.wait(WAIT), ran.append((0, threading.current_thread().name))))
        later = [pool.submit(lambda i=i: ran.append((i, threading.current_thread().name))) for i in range(1, 21)]
        assert not any(f.done() for f in later)   # queued behind the first, no second thread
        gate.set()
        for f in [first, *later]:
            f.result(WAIT)
        assert [i for i, _ in ran] == list(range(21))
        assert len({name for _, name in ran}) == 1
        assert pool.thread_count == 1
    finally:
        gate.set()
        pool.shutdown()


def test_a_stuck_call_gets_company_which_leaves_when_the_queue_is_empty():
    exits: list[str] = []
    pool = EnginePool(core=1, stall=0.01, on_thread_exit=lambda: exits.append(threading.current_thread().name))
    gate = threading.Event()
    try:
        stuck = pool.submit(lambda: (gate.wait(WAIT), threading.current_thread().name)[1])
        quick = pool.submit(lambda: threading.current_thread().name)
        helper = quick.result(WAIT)           # answered while the first call is still stuck
        assert not stuck.done()
        wait_until(lambda: exits == [helper], "the added thread did not end with the queue empty")
        assert pool.thread_count == 1
        gate.set()
        assert stuck.result(WAIT) != helper
        assert pool.submit(lambda: threading.current_thread().name).result(WAIT) == stuck.result()
    finally:
        gate.set()
        pool.shutdown()


def test_threads_are_bounded():
    pool = EnginePool(core=1, most=3, stall=0.01)
    gate = threading.Event()
    started = threading.Semaphore(0)

    def stuck():
        started.release()
        gate.wait(WAIT)

    try:
        futures = [pool.submit(stuck) for _ in range(6)]
        for _ in range(3):
            assert started.acquire(timeout=WAIT)
        assert not started.acquire(timeout=0.3)   # a fourth would need a fourth thread
        assert pool.thread_count == 3
        gate.set()
        for f in futures:
            f.result(WAIT)
    finally:
        gate.set()
        pool.shutdown()


def test_shutdown_refuses_new_calls_and_ends_the_threads():
    exits: list[str] = []
    pool = EnginePool(on_thread_exit=lambda: exits.append("x"))
    pool.submit(int).result(WAIT)
    pool.shutdown()
    with pytest.raises(RuntimeError):
        pool.submit(int)
    wait_until(lambda: pool.thread_count == 0 and exits == ["x"], "the pool's thread did not end")


def test_run_answers_on_the_event_loop():
    """The server's path: the call's result or exception comes back to the awaiting request."""
    import asyncio

    pool = EnginePool()

    async def main():
        assert await pool.run(lambda: 41 + 1) == 42
        with pytest.raises(KeyError):
            await pool.run(lambda: {}["missing"])
        return await asyncio.gather(*(pool.run(lambda i=i: i * i) for i in range(10)))

    try:
        assert asyncio.run(main()) == [i * i for i in range(10)]
    finally:
        pool.shutdown()
