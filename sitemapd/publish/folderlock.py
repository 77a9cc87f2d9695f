"""One writer per output folder: an flock on `.sitemapd/lock-<index>` beside the files.

The state-folder lock keeps two processes off one ledger; this one keeps two ledgers
off one folder (two daemons given the same `output_dir` and different `state_dir`
would each take the other's files for damage and republish its own, every second). The
partitions of a site publish into one folder under their own index names, so each takes
its own lock. The file holds the holder's pid, host and state folder, for the error
that names them; `.sitemapd/` is never served (see examples/nginx-sitemaps.conf).
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path

from sitemapd.errors import LockError, PublishError
from sitemapd.publish.manifestfile import PRIVATE


def lock_path(folder: Path, index: str) -> Path:
    """Return the lock file of the index `index` published into `folder`."""
    return folder / PRIVATE / f"lock-{index}"


class FolderLock:
    """This process's claim to publish one index into a local folder (the publisher's
    fence there, as the lease is in a bucket)."""

    def __init__(self, folder: Path, index: str, state_dir: Path) -> None:
        self.path = lock_path(folder, index)
        self.folder = folder
        self._record = f"{os.getpid()} {socket.gethostname()} {state_dir}\n".encode()
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """True while this process holds the lock on the file now at its path (a folder
        deleted or replaced under it takes the file with it)."""
        if self._fd is None:
            return False
        try:
            now = os.stat(self.path)
        except OSError:
            return False
        held = os.fstat(self._fd)
        return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)

    def take(self) -> None:
        """Hold the lock; raises LockError naming the process that holds it, PublishError
        when the folder cannot be written."""
        if not self.keep():
            raise LockError(f"output folder {self.folder} is published by {self._holder()}")

    def keep(self) -> bool:
        """Hold the lock, taking it again if its file was deleted or replaced; return False
        when another process holds it. Raises PublishError when the folder cannot be
        written."""
        if self.held:
            return True
        self.release()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise PublishError(f"cannot create {self.path} ({exc.strerror})") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        try:
            # Written over in place: emptying the file first costs ext4 a journal commit.
            os.pwrite(fd, self._record, 0)
            if os.fstat(fd).st_size > len(self._record):
                os.ftruncate(fd, len(self._record))
        except OSError as exc:
            os.close(fd)
            raise PublishError(f"cannot write {self.path} ({exc.strerror})") from exc
        self._fd = fd
        return True

    def fence(self) -> None:
        """Make sure of the lock before the index is written; raises PublishError when
        another process holds it."""
        if not self.keep():
            raise PublishError(f"output folder {self.folder} is published by {self._holder()}")

    def release(self) -> None:
        """Give the lock up (closing the descriptor drops the flock)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _holder(self) -> str:
        """Return who holds the lock, from its file: "sitemapd pid N on HOST (state
        folder DIR)"."""
        try:
            pid, host, state = self.path.read_text().rstrip("\n").split(" ", 2)
        except (OSError, ValueError, UnicodeDecodeError):
            return "another sitemapd"
        return f"sitemapd pid {pid} on {host} (state folder {state})"
