"""Disk writes started early, while a first load still fills the ledger.

A first load writes the whole ledger (about 190 MB for a million URLs) into the page
cache, where it waits for the commit's fsync: a third of a second of waiting at the end
of a five-second build. Flushing the ledger file every quarter second on a thread of its
own puts most of it on disk while the load goes on.

The ledger file alone is flushed, not its file system (`syncfs`, before): that also
wrote the index build's temporary sort files (as large as the URL index, deleted a
moment later) and whatever else the machine had written meanwhile. It is flushed
through a descriptor of its own, kept open until the ledger closes: closing a descriptor
of the ledger that SQLite did not open releases SQLite's POSIX locks on it. Where there
is no `fdatasync` (macOS), and on any error, the commit does it all.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from sitemapd.core import logs

log = logs.Logger(__name__)

_INTERVAL = 0.25
# Once the rows are in (`hurry`): the URL index built next writes its pages in its last
# moments, which the commit would otherwise flush all at once.
_HURRIED = 0.05


class EarlyWriteback:
    """Flushes a ledger file every quarter second while `running`; `close` once the
    ledger's connections are closed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._interval = _INTERVAL

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Flush the file every quarter second while the block runs."""
        sync = getattr(os, "fdatasync", None)
        if sync is None:
            yield
            return
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDONLY)
            except OSError as exc:  # the commit's own fsync reports what matters
                log.debug("%s: no early write-back (%s)", self.path, exc)
                yield
                return
        fd = self._fd
        stop = threading.Event()
        self._interval = _INTERVAL

        def flush() -> None:
            while not stop.wait(self._interval):
                try:
                    sync(fd)
                except OSError as exc:
                    log.debug("%s: fdatasync failed (%s)", self.path, exc)
                    return

        thread = threading.Thread(target=flush, name="ledger-writeback", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def hurry(self) -> None:
        """Flush more often from now on, while running: the load's rows are in."""
        self._interval = _HURRIED

    def close(self) -> None:
        """Close the descriptor: call only once SQLite's own are closed."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
