"""Disk writes started early, while a first load still fills the ledger.

A first load writes the whole ledger (about 270 MB for a million URLs) into the page
cache, where it waits for the commit's fsync: a third of a second of waiting at the end
of a five-second build. Flushing the file system every quarter second on a thread of
its own puts most of it on disk while the load goes on.

The file system is flushed (`syncfs` of the ledger's folder), not the ledger file:
closing a descriptor of the ledger that SQLite did not open would release SQLite's
POSIX locks on it. Linux only; elsewhere, and on any error, the commit does it all.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

log = logging.getLogger(__name__)

_INTERVAL = 0.25


def _syncfs() -> Callable[[int], int] | None:
    """Return libc's `syncfs`, or None where there is none."""
    import ctypes  # here: only a first load needs it

    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    call: Callable[[int], int] | None = getattr(libc, "syncfs", None)
    return call


@contextlib.contextmanager
def early_writeback(folder: Path) -> Iterator[None]:
    """Flush the file system holding `folder` every quarter second while the block runs."""
    syncfs = _syncfs()
    if syncfs is None:
        yield
        return
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    stop = threading.Event()

    def flush() -> None:
        while not stop.wait(_INTERVAL):
            if syncfs(fd) != 0:
                # The commit's own fsync reports what matters.
                from ctypes import get_errno

                log.debug("%s: syncfs failed (%s)", folder, os.strerror(get_errno()))
                return

    thread = threading.Thread(target=flush, name="ledger-writeback", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        os.close(fd)
