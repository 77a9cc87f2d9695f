"""Making a folder's entries durable: a rename into it, or a file made in it, survives a
power loss only once the folder itself is flushed. And a file replaced or deleted, freed
off the caller's path."""

from __future__ import annotations

import atexit
import contextlib
import os
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sitemapd.core.workers import Workers

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
    or deletes it, and free it after on the let-go thread.

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
            _let_go(fd)


def _let_go(fd: int) -> None:
    """Close `fd` on the let-go thread, started by the first file let go and kept (the
    process waits for it at exit). A thread started for each file waited for the
    interpreter lock while another thread ran Python: up to 5-8 ms a start, several a
    build, some of them on the store's thread while the next shard rendered."""
    global _LET_GO  # one per process, made when first needed
    if _LET_GO is None:
        from sitemapd.core.workers import Workers

        _LET_GO = Workers(1, "sitemapd-let-go")
        atexit.register(_LET_GO.close)
    try:
        _LET_GO.submit(partial(os.close, fd))
    except RuntimeError:  # the interpreter is exiting, and so is the let-go thread
        os.close(fd)


def _forget_let_go() -> None:
    """Forget the let-go thread in a forked child, where it does not run."""
    global _LET_GO  # the parent's: its thread is not the child's
    _LET_GO = None


_LET_GO: Workers | None = None
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_let_go)


def _held(path: Path) -> int | None:
    """Return a descriptor holding the file at `path`, or None when there is none or it
    cannot be held."""
    if _HOLD is None:
        return None
    try:
        return os.open(path, _HOLD | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
