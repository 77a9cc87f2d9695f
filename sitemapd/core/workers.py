"""Threads that run the calls given them, in the order given, and each call's result once
it ran: what a build hands to threads (storing shards, reading manifests ahead, spooling
a first load, freeing replaced files).

`concurrent.futures` does the same, but importing it loads `logging` with traceback,
tokenize, linecache and textwrap: about 24 M instructions, 5% of a build that changes
one line of a list and shows no record.
"""

from __future__ import annotations

import _thread
import threading
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Pending(Generic[T]):
    """A call given to `Workers`, and its outcome once a thread ran it."""

    __slots__ = ("_call", "_done", "_error", "_value")

    def __init__(self, call: Callable[[], T]) -> None:
        self._call: Callable[[], T] | None = call
        self._done = _thread.allocate_lock()
        self._done.acquire()  # released once the call ran
        self._value: T | None = None
        self._error: BaseException | None = None

    def run(self, idle: threading.Semaphore) -> None:
        """Run the call (on a worker), keeping what it returned or raised; `idle` is
        released before the outcome is given, so that a call submitted once the outcome
        is known finds the worker idle and starts no other thread."""
        call, self._call = self._call, None  # what it holds is freed once it ran
        try:
            assert call is not None, "run twice"
            self._value = call()
        except BaseException as exc:  # raised where the result is asked for
            self._error = exc
        finally:
            idle.release()
            self._done.release()

    def result(self) -> T:
        """Wait for the call to have run; return what it returned, or raise what it
        raised."""
        with self._done:
            pass
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # T, set by run()


class Workers:
    """At most `count` threads named after `name`, started as calls come that no idle
    thread takes, each running the calls in the order given until `close`.

    They are daemon threads: a pool left open never keeps the process from exiting (the
    let-go pool, open for the process's life, is closed at exit by its owner).
    """

    def __init__(self, count: int, name: str) -> None:
        self._count, self._name = count, name
        self._calls: SimpleQueue[Pending[Any] | None] = SimpleQueue()
        self._threads: list[threading.Thread] = []
        # Released by a thread each time it has run a call: idle until it takes the next.
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._closed = False

    def submit(self, call: Callable[[], T]) -> Pending[T]:
        """Have a thread run `call`; return its pending outcome. Raises RuntimeError
        once closed."""
        pending = Pending(call)
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name}: closed")
            self._calls.put(pending)
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._count:
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}-{len(self._threads)}", daemon=True
                )
                thread.start()
                self._threads.append(thread)
        return pending

    def _work(self) -> None:
        """Run calls until the closing None."""
        while (pending := self._calls.get()) is not None:
            pending.run(self._idle)

    def close(self) -> None:
        """Let the calls given run, then end the threads and wait for them."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._calls.put(None)
        for thread in threads:
            thread.join()

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
