"""The daemon's work queue: hints from watchers, polls and timers, taken as one batch
once events pause for the debounce (or after the longest delay)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

REFRESH, OUTBOX = "refresh", "outbox"
# The lease was taken: adopt the published lastmods, then publish everything owed.
TAKEOVER = "takeover"


@dataclass
class Batch:
    """Work taken from the queue at once: paths per source, and sources to rescan."""

    paths: dict[str, set[str]] = field(default_factory=dict)
    rescan: set[str] = field(default_factory=set)
    # Work that reads no source: REFRESH (re-render what time changes: news ageing,
    # the feed window), OUTBOX (record notification outcomes).
    tasks: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.paths or self.rescan or self.tasks)


class WorkQueue:
    """Hints from watchers and jobs, released as one batch after a quiet period."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._batch = Batch()
        self._first = self._last = 0.0

    def add_paths(self, source: str, relpaths: set[str]) -> None:
        """Queue paths of `source` to re-read."""
        with self._cond:
            self._batch.paths.setdefault(source, set()).update(relpaths)
            self._arrived()

    def add_rescan(self, source: str) -> None:
        """Queue a full reconcile of `source`."""
        with self._cond:
            self._batch.rescan.add(source)
            self._arrived()

    def add_task(self, task: str) -> None:
        """Queue work that reads no source (REFRESH, OUTBOX)."""
        with self._cond:
            self._batch.tasks.add(task)
            self._arrived()

    def _arrived(self) -> None:
        now = time.monotonic()
        self._first = self._first or now
        self._last = now
        self._cond.notify_all()

    def depth(self) -> int:
        """Return how many paths and rescans wait."""
        with self._cond:
            return sum(map(len, self._batch.paths.values())) + len(self._batch.rescan)

    def take(self, debounce: float, max_delay: float, stop: threading.Event) -> Batch:
        """Wait for work, then for `debounce` s of quiet (at most `max_delay` s); take it.

        Returns an empty batch once `stop` is set and nothing waits; while stopping,
        waiting work is taken at once.
        """
        with self._cond:
            while not self._batch and not stop.is_set():
                self._cond.wait(0.5)
            while self._batch and not stop.is_set():
                now = time.monotonic()
                quiet, age = now - self._last, now - self._first
                if quiet >= debounce or age >= max_delay:
                    break
                self._cond.wait(min(debounce - quiet, max_delay - age))
            batch, self._batch = self._batch, Batch()
            self._first = self._last = 0.0
            return batch

    def wake(self) -> None:
        """Wake a waiting `take()` (to notice `stop`)."""
        with self._cond:
            self._cond.notify_all()
