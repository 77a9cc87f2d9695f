"""Progress of long work (a first scan, a long change-log drain), and stopping it.

The engine passes every item it applies through `Progress.count`, which tells a reporter
how many pages went by, and at what rate, every few seconds; and, once asked to stop,
raises Interrupted so that the transaction is rolled back and nothing is half-applied.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from sitemapd.config import Config
from sitemapd.config.sources import DirectorySource
from sitemapd.core import logs
from sitemapd.core.globs import Selection
from sitemapd.core.observation import Changes, Item, ListChunk, Observation, Seen
from sitemapd.errors import Interrupted

log = logs.Logger("sitemapd.progress")

LOG_EVERY = 10.0  # seconds between INFO lines of progress
STATUS_EVERY = 1.0  # seconds between STATUS= messages to systemd


class Progress:
    """Counts the pages that go by and calls `report(pages, per_second)` at most every
    `every` seconds; raises Interrupted once `stop` is set."""

    def __init__(
        self,
        report: Callable[[int, float], None],
        every: float = LOG_EVERY,
        stop: threading.Event | None = None,
    ) -> None:
        self.report = report
        self.every = every
        self.stop = stop
        self.pages = 0
        self.started = time.monotonic()

    def count(self, items: Iterable[Item]) -> Iterator[Item]:
        """Yield `items`, counting pages; raises Interrupted when asked to stop."""
        last = time.monotonic()
        for item in items:
            if self.stop is not None and self.stop.is_set():
                raise Interrupted(f"stopped after reading {self.pages} pages; nothing applied")
            if isinstance(item, ListChunk):
                counted = len(item.lines or ())
            elif isinstance(item, Changes):
                counted = item.upserts
            else:
                counted = int(isinstance(item, Observation | Seen))
            if counted:
                self.pages += counted
                now = time.monotonic()
                if now - last >= self.every:
                    self.report(self.pages, self.pages / (now - self.started))
                    last = now
            yield item


def log_report(pages: int, rate: float) -> None:
    """Report progress as an INFO line."""
    log.info("scanning: %d pages read (%.0f/s)", pages, rate)


def every_so_often(
    report: Callable[[int, float], None], seconds: float
) -> Callable[[int, float], None]:
    """Return `report`, called at most every `seconds` (the first call goes through)."""
    last = [-seconds]

    def throttled(pages: int, rate: float) -> None:
        now = time.monotonic()
        if now - last[0] >= seconds:
            last[0] = now
            report(pages, rate)

    return throttled


def estimate(config: Config) -> int:
    """Return how many files the directory sources' patterns match now (a walk, no
    reads): the length of a progress bar."""
    total = 0
    for source in config.content_sources:
        if not isinstance(source, DirectorySource):
            continue
        pages = Selection(source.include, source.exclude)
        for folder, dirs, files in os.walk(source.root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            relative = os.path.relpath(folder, source.root)
            prefix = "" if relative == "." else relative.replace(os.sep, "/") + "/"
            total += sum(1 for name in files if not name.startswith(".") and prefix + name in pages)
    return total
