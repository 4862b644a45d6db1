"""The threads that run engine calls in a server process: as few as keep the work moving.

Engine calls block (SQLite, a provider's OAuth refresh), so the event loop hands them to
threads; but with the GIL, threads only add throughput while a call waits outside Python. A
plain pool of 40 threads spread 16 concurrent requests over 16 threads, and each hand-off (a
request waking a thread, the process's write lock passing between them, each waking thread then
waiting for the GIL) cost context switches: under wrk, one worker, ~19 switches per token issue
against ~2 on one thread, and the CPU per token fell from ~850 to ~450 µs with one thread.

So calls run on CORE_THREADS thread(s), taking queued calls one after another without sleeping
in between; a thread is added (up to MAX_THREADS) only when calls wait while none has finished
for STALL_SECONDS, i.e. every thread is stuck in something slow (a provider refresh, a large
import), so a slow call never holds up the others for longer than that. An added thread ends
as soon as it finds the queue empty. Calls are taken in the order they came (FIFO).
"""
from __future__ import annotations

import collections
import threading
from concurrent.futures import Executor, Future

CORE_THREADS = 1
MAX_THREADS = 40
STALL_SECONDS = 0.02


def _call(future: Future, fn, args, kwargs) -> None:
    if future.set_running_or_notify_cancel():
        try:
            result = fn(*args, **kwargs)
        except BaseException as e:
            future.set_exception(e)
        else:
            future.set_result(result)


class EnginePool(Executor):
    def __init__(self, core: int = CORE_THREADS, most: int = MAX_THREADS, stall: float = STALL_SECONDS,
                 name: str = "wsctl-engine", on_thread_exit=None):
        self._core, self._most, self._stall = core, most, stall
        self._name, self._on_thread_exit = name, on_thread_exit
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)      # idle threads wait here
        self._watching = threading.Condition(self._lock)  # the stall watcher waits here
        self._queue: collections.deque = collections.deque()
        self._threads = 0    # alive
        self._idle = 0       # waiting for work
        self._starting = 0   # started, not yet at the queue: the watcher adds no more meanwhile
        self._finished = 0   # calls finished so far: the watcher's sign of progress
        self._started = 0    # threads ever started (names)
        self._watcher: threading.Thread | None = None
        self._watcher_asleep = False
        self._shutdown = False

    @property
    def thread_count(self) -> int:
        with self._lock:
            return self._threads

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future: Future = Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new calls after shutdown")
            self._queue.append((future, fn, args, kwargs))
            if self._idle:
                self._work.notify()
            elif self._threads < self._core:
                self._spawn()
            elif self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name=f"{self._name}-watch", daemon=True)
                self._watcher.start()
            elif self._watcher_asleep:
                self._watching.notify()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while self._queue:
                    self._queue.popleft()[0].cancel()
            self._work.notify_all()
            self._watching.notify_all()
        # Threads are daemons: a call stuck in a provider does not hold up the process's exit.

    def _spawn(self) -> None:   # with the lock held
        self._threads += 1
        self._starting += 1
        self._started += 1
        threading.Thread(target=self._run, name=f"{self._name}_{self._started}", daemon=True).start()

    def _watch(self) -> None:
        """Add a thread when calls wait and no call has finished for a whole STALL_SECONDS."""
        with self._lock:
            while not self._shutdown:
                if not self._queue or self._idle:
                    self._watcher_asleep = True
                    self._watching.wait()
                    self._watcher_asleep = False
                    continue
                seen = self._finished
                self._watching.wait(self._stall)
                if (self._queue and not self._idle and not self._starting and self._finished == seen
                        and self._threads < self._most):
                    self._spawn()

    def _run(self) -> None:
        try:
            item = self._take(0, starting=1)
            while item is not None:
                _call(*item)
                item = None   # hold no request's objects while waiting for the next
                item = self._take(1)
        finally:
            if self._on_thread_exit is not None:
                self._on_thread_exit()

    def _take(self, finished: int, starting: int = 0):
        """Count the call just finished; the next call, or None when this thread should end (an
        added thread ends as soon as it finds no work: a waiting extra thread would be woken for
        the next call instead of the busy one, and the hand-offs would be back)."""
        with self._lock:
            self._finished += finished
            self._starting -= starting
            while not self._queue:
                if self._shutdown or self._threads > self._core:
                    self._threads -= 1
                    return None
                self._idle += 1
                self._work.wait()
                self._idle -= 1
            return self._queue.popleft()
