"""Disk writes started early, while a first load still fills the ledger.

A first load writes the whole ledger (about 190 MB for a million URLs) into the page
cache, where it waits for the commit's fsync: a third of a second of waiting at the end
of a five-second build. Flushing the ledger file every quarter second on a thread of its
own puts most of it on disk while the load goes on.

Flushed pages before the last 256 MiB of the file then leave the page cache: the URL
index's build at the end reads them once more, from disk, and that costs less than
keeping them. On a virtual machine each page of memory the guest has not touched lately
costs a host fault inside the kernel's copy, and a 10M-URL load writes a 2 GB ledger:
dropped, its pages are reused by the writes that follow. 10M cold builds in turn, where
the machine's memory had lain unused: 16.4 and 16.5 s against 17.2 and 17.3 s (every
flushed page dropped, in an earlier pair: 16.9 and 17.5 s against 18.0 and 18.3 s,
system time 4.6-4.9 s against 7.0-7.6 s); right after another such build, when its
freed memory is reused anyway, 16.8 s against 16.4-16.7 s. A million URLs' ledger (190
MB) stays whole.

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
# Flushed pages are left in the page cache for this many bytes at the file's end.
_CACHED = 256 << 20
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
                _drop_flushed(fd)

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


def _drop_flushed(fd: int) -> None:
    """Let the flushed pages of the file open on `fd` before its last `_CACHED` bytes
    leave the page cache (advice: where it cannot be given, they stay)."""
    if not hasattr(os, "posix_fadvise"):  # macOS
        return
    with contextlib.suppress(OSError):
        flushed = os.fstat(fd).st_size - _CACHED
        if flushed > 0:
            os.posix_fadvise(fd, 0, flushed, os.POSIX_FADV_DONTNEED)
