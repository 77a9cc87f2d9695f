"""The state-directory lock: one sitemapd process (daemon or build) per ledger."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from sitemapd.core.flock import RecordError, hold, same_file
from sitemapd.errors import LockError, StateError


class StateLock:
    """An exclusive `flock` on `<state_dir>/sitemapd.ledger.lock` holding the owner's pid."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "sitemapd.ledger.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock; raises LockError naming the pid of the process that holds it,
        StateError when the state directory cannot be written (read-only, full)."""
        # One size for every pid: the record is written over the last holder's.
        record = f"{os.getpid():<15}\n".encode()
        try:
            fd = hold(self.path, record)
        except RecordError as exc:
            raise StateError(f"cannot write {self.path} ({exc.strerror})") from exc
        except OSError as exc:
            raise StateError(f"cannot create {self.path} ({exc.strerror})") from exc
        if fd is None:
            try:
                holder = self.path.read_bytes()[:32].decode(errors="replace").strip()
            except OSError:
                holder = ""
            raise LockError(
                f"state directory {self.path.parent} is in use by sitemapd pid "
                f"{holder or 'unknown'}"
            )
        self._fd = fd

    def lost(self) -> str | None:
        """Return why the lock no longer guards the state directory (its file was deleted
        or replaced: another process could take a fresh one), or None while it does."""
        assert self._fd is not None
        if not same_file(self._fd, self.path):
            return f"the state folder {self.path.parent} was deleted or replaced while running"
        return None

    def holder(self) -> int | None:
        """Return the pid of the process holding the lock (0 when it cannot be read), or
        None when none does."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 32).decode(errors="replace").strip()
            return int(text) if text.isdigit() else 0
        finally:
            os.close(fd)  # also drops a lock taken just to look
        return None

    def release(self) -> None:
        """Release the lock (closing the descriptor drops the flock)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> StateLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
