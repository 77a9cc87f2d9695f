"""The state-directory lock: one sitemapd process (daemon or build) per ledger."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from .errors import LockError


class StateLock:
    """An exclusive `flock` on `<state_dir>/sitemapd.lock` holding the owner's pid."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "sitemapd.lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock; raises LockError naming the pid of the process that holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise LockError(
                f"state directory {self.path.parent} is in use by sitemapd pid {holder}"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def holder(self) -> int | None:
        """Return the pid written by the process holding the lock, or None."""
        try:
            return int(self.path.read_text().strip())
        except (OSError, ValueError):
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
