"""Exclusive flocks on files that name their holder (the state folder's lock,
`ledger/lock.py`; the output folder's, `publish/folderlock.py`), and whether a lock's
descriptor still holds the file at its path, or another's the file at a path."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path


class RecordError(OSError):
    """The holder's record could not be written into a lock file."""


def hold(path: Path, record: bytes, flags: int = 0) -> int | None:
    """Return a descriptor holding an exclusive flock on the file at `path` (created with
    its folder if missing, opened with `flags` besides), `record` written over its start;
    None when another process holds it.

    Raises OSError when the file cannot be created (its `filename` the path in the way),
    RecordError when the record cannot be written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | flags, 0o644)
    # A few tries a millisecond apart: `held_elsewhere` holds a lock for an instant.
    for wait in (0.001, 0.002, None):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if wait is None:
                os.close(fd)
                return None
            time.sleep(wait)
    try:
        # Written over in place, not emptied first: emptying the file costs ext4 a journal
        # commit (about 5 ms, in every build).
        os.pwrite(fd, record, 0)
        if os.fstat(fd).st_size > len(record):
            os.ftruncate(fd, len(record))
    except OSError as exc:
        os.close(fd)
        raise RecordError(exc.errno, exc.strerror) from exc
    return fd


def held_elsewhere(path: Path) -> bool:
    """True when another open file holds a flock on the file at `path` (taken shared for
    an instant to see; a missing file is held by nobody)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def same_file(fd: int, path: Path) -> bool:
    """True when the file open at `fd` is the one at `path` now: not deleted, nor replaced
    under that name, nor out of reach."""
    held = os.fstat(fd)
    try:
        now = os.stat(path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)
