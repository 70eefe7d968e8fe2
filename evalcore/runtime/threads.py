"""A pool of daemon threads, for work that waits on other machines (a model's reply, a database's answer).

The standard library's ThreadPoolExecutor joins its threads when the interpreter exits, whatever `shutdown` was told:
a worker told to stop while one of its jobs waits for a model's reply that takes a minute lived that minute more,
though the job had been handed back to the queue. This pool's threads are daemons: the process ends without them,
and what they finish afterwards is dropped by whoever asked (a handed-back job writes nothing). Its futures are the
standard ones, so `as_completed` and `asyncio.wrap_future` take them.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")
_Item = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonPool(Executor):
    """At most `max_workers` daemon threads, started as work comes and none is free."""

    def __init__(self, max_workers: int, name: str = "evalcore-pool") -> None:
        self.max_workers, self.name = max(1, max_workers), name
        self._work: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = threading.Semaphore(0)  # one per thread waiting for work
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Run `fn(*args, **kwargs)` on a thread of the pool: its future."""
        future: Future[T] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self.name} is shut down")
            self._work.put((future, fn, args, kwargs))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self.max_workers:
                thread = threading.Thread(target=self._serve, name=f"{self.name}-{len(self._threads)}", daemon=True)
                self._threads.append(thread)
                thread.start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Take no more work; with `cancel_futures` the work not started is cancelled; with `wait` the threads are
        joined (a thread stuck in a call keeps the caller, never the process's exit)."""
        with self._lock:
            ends = 0 if self._closed else len(self._threads)  # one None each thread ends at
            self._closed = True
            while cancel_futures:
                try:
                    item = self._work.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    ends += 1
                else:
                    item[0].cancel()
            for _ in range(ends):
                self._work.put(None)
        if wait:
            for thread in self._threads:
                thread.join()

    def _serve(self) -> None:
        while (item := self._work.get()) is not None:
            _run(*item)
            del item  # what the work held is freed before the next comes
            self._idle.release()


def _run(future: Future[Any], fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    if not future.set_running_or_notify_cancel():
        return
    try:
        result = fn(*args, **kwargs)
    except BaseException as error:  # noqa: BLE001 - the caller sees it on the future, as with the standard pool
        future.set_exception(error)
    else:
        future.set_result(result)
