"""Making a folder's entries durable: a rename into it, or a file made in it, survives a
power loss only once the folder itself is flushed. And a file replaced or deleted, freed
off the caller's path."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

# A descriptor that holds a file without opening it for reading (Linux); elsewhere none.
_HOLD = getattr(os, "O_PATH", None)


def fsync_dir(folder: Path) -> None:
    """Flush the entries of `folder` to disk; raises OSError."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def freeing(path: Path) -> Iterator[None]:
    """Hold the file at `path` (a symlink itself, not followed) while the block replaces
    or deletes it, and free it after on a thread of its own.

    A file whose last link a rename or an unlink drops is freed inside that call, and on
    a file system that trims freed blocks at once (ext4 mounted with `discard`) the call
    waits for the disk: 2-4 ms for each file a build replaces. Held open across it, the
    file is freed when the holding descriptor is closed instead, while the caller goes on.
    The descriptor is `O_PATH` (Linux; elsewhere nothing is held): its close releases
    none of the POSIX locks SQLite holds on the same file."""
    fd = _held(path)
    try:
        yield
    finally:
        if fd is not None:
            threading.Thread(target=os.close, args=(fd,), name="sitemapd-let-go").start()


def _held(path: Path) -> int | None:
    """Return a descriptor holding the file at `path`, or None when there is none or it
    cannot be held."""
    if _HOLD is None:
        return None
    try:
        return os.open(path, _HOLD | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
