"""The threads that run engine calls in a server process: as few as keep the work moving.

Engine calls block (SQLite, a provider's OAuth refresh), so the event loop hands them to
threads; but with the GIL, threads only add throughput while a call waits outside Python. A
plain pool of 40 threads spread 16 concurrent requests over 16 threads, and each hand-off (a
request waking a thread, the process's write lock passing between them, each waking thread then
waiting for the GIL) cost context switches: under wrk, one worker, ~19 switches per token issue
against ~2 on one thread, and the CPU per token fell from ~850 to ~450 µs with one thread.

So calls run on CORE_THREADS thread(s) (`core`: on PostgreSQL, where a call mostly waits for round
trips with the GIL free, more: PgWorkspace.engine_threads; a core thread is started only when a
call comes while every thread is busy, so a server with one request at a time keeps one thread
and one database session), taking queued calls one after another without sleeping
in between; a thread is added (up to MAX_THREADS) only when calls wait while none has finished
for STALL_SECONDS, i.e. every thread is stuck in something slow (a provider refresh, a large
import), so a slow call never holds up the others for longer than that. An added thread ends
as soon as it finds the queue empty. Calls are taken in the order they came (FIFO).
"""
from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

CORE_THREADS = 1
MAX_THREADS = 40
STALL_SECONDS = 0.02
_STOP = None   # a queue item that ends the thread taking it


T = TypeVar("T")
_Item = tuple[Callable[[Any, "BaseException | None"], None], Callable[[], Any]]   # (done(result, error), call)


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    """On the event loop: hand a call's outcome to its awaiting request (unless it was cancelled)."""
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def _call(item: _Item) -> None:
    done, fn = item
    try:
        result = fn()
    except BaseException as e:
        done(None, e)
    else:
        done(result, None)


class EnginePool:
    def __init__(self, core: int = CORE_THREADS, most: int = MAX_THREADS, stall: float = STALL_SECONDS,
                 name: str = "wsctl-engine", on_thread_exit: Callable[[], None] | None = None) -> None:
        self._core, self._most, self._stall = core, most, stall
        self._name, self._on_thread_exit = name, on_thread_exit
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()   # C: a put wakes one waiting thread, no more
        self._lock = threading.Lock()   # thread counts
        self._threads = 0    # alive
        self._starting = 0   # started, not yet at the queue: the watcher adds no more meanwhile
        self._started = 0    # threads ever started (names)
        self._finished = 0   # calls finished so far: the watcher's sign of progress
        self._idle = 0       # threads waiting for a call (a core thread is added only when none is)
        self._awake = threading.Event()   # set while the watcher polls; a submit sets it when cleared
        self._watcher: threading.Thread | None = None
        self._shutdown = False
        self._stopped = threading.Event()   # the watcher's sleep ends at once on shutdown

    @property
    def thread_count(self) -> int:
        with self._lock:
            return self._threads

    async def run(self, fn: Callable[[], T]) -> T:
        """fn() on a pool thread; its result or exception, on the event loop. No concurrent
        Future in between: the thread answers the loop directly (call_soon_threadsafe)."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()

        def done(result: Any, error: BaseException | None) -> None:
            loop.call_soon_threadsafe(_settle, future, result, error)

        def call() -> T | None:
            return None if future.cancelled() else fn()   # a request cancelled while queued: not run

        self._put((done, call))
        return await future

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """fn(*args, **kwargs) on a pool thread, as a concurrent Future (for callers off the loop)."""
        future: Future[T] = Future()

        def done(result: Any, error: BaseException | None) -> None:
            if not future.set_running_or_notify_cancel():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

        self._put((done, lambda: fn(*args, **kwargs)))
        return future

    def shutdown(self) -> None:
        """Threads end once the calls already queued have run (they are daemons: a call stuck in a
        provider does not hold up the process's exit)."""
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            for _ in range(self._threads):
                self._queue.put(_STOP)
        self._stopped.set()
        self._awake.set()

    def _put(self, item: _Item) -> None:
        if self._shutdown:
            raise RuntimeError("cannot schedule new calls after shutdown")
        self._queue.put(item)
        if self._threads < self._core and not self._idle:
            with self._lock:   # a core thread only when every thread is busy: as many as calls in flight
                if self._threads < self._core and not self._idle:
                    self._spawn()
        if not self._awake.is_set():   # the watcher sleeps until there is work to watch
            if self._watcher is None:
                with self._lock:
                    if self._watcher is None:
                        self._watcher = threading.Thread(target=self._watch, name=f"{self._name}-watch",
                                                         daemon=True)
                        self._watcher.start()
            self._awake.set()

    def _spawn(self) -> None:   # with the lock held
        self._threads += 1
        self._starting += 1
        self._started += 1
        threading.Thread(target=self._run, name=f"{self._name}_{self._started}", daemon=True).start()

    def _watch(self) -> None:
        """Add a thread when calls wait and no call has finished for a whole STALL_SECONDS."""
        while not self._shutdown:
            if self._queue.empty():
                self._awake.clear()
                if self._queue.empty():   # a put after the clear sets it again: no lost wake-up
                    self._awake.wait()
                continue
            seen = self._finished
            self._stopped.wait(self._stall)
            with self._lock:
                if (not self._queue.empty() and not self._starting and self._finished == seen
                        and self._threads < self._most and not self._shutdown):
                    self._spawn()

    def _run(self) -> None:
        try:
            with self._lock:
                self._starting -= 1
            while (item := self._take()) is not _STOP:
                _call(item)   # its frame, and the request's objects with it, gone before the next wait
                item = None   # hold no request's objects while waiting for the next
                self._finished += 1   # only this watcher's heuristic reads it: a lost update is harmless
        finally:
            if self._on_thread_exit is not None:
                self._on_thread_exit()

    def _take(self) -> _Item | None:
        """The next call; _STOP when this thread should end (an added thread ends as soon as it
        finds no work: a waiting extra thread would be woken for the next call instead of the
        busy one, and the hand-offs would be back)."""
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            with self._lock:
                if self._threads > self._core:
                    self._threads -= 1
                    return _STOP
        with self._lock:
            self._idle += 1
        try:
            item = self._queue.get()
        finally:
            with self._lock:
                self._idle -= 1
        if item is _STOP:
            with self._lock:
                self._threads -= 1
        return item
