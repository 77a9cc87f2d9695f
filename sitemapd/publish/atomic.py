"""Files replaced so that no reader sees a partial one: written and synced to a temp file
beside their name, then renamed; temps a crash left behind are swept."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

from sitemapd.core.durable import freeing, fsync_dir
from sitemapd.errors import PublishError

_TEMP_PREFIX = ".sitemapd-tmp-"


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> os.stat_result:
    """Replace `path` with `data` so that no reader ever sees a partial file; return the
    new file's status. Raises PublishError.

    `mode` keeps an existing file's permissions; new files get 0o666 minus the umask. A
    symlink at `path` is replaced, never followed.
    """
    staged = Staged(path, data, mode)
    staged.place()
    return staged.status


class Unsynced:
    """A new temp file beside `path`, written piece by piece: neither synced nor in place
    (`Staged` syncs it). Its length is the bytes written."""

    def __init__(self, path: Path, mode: int | None = None) -> None:
        """Create the temp file of `path` (see `atomic_write`); raises PublishError."""
        self.path = path
        try:
            self.fd, self.temp = _create_temp(path)
        except OSError as exc:
            raise PublishError(f"cannot write {path} ({exc.strerror})") from exc
        self._written = 0
        try:
            if mode is not None:
                os.fchmod(self.fd, mode)
        except OSError as exc:
            self._failed(exc)

    def __len__(self) -> int:
        return self._written

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Append `data`; raises PublishError (the temp file removed)."""
        view = memoryview(data)
        size = len(view)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:
            self._failed(exc)
        self._written += size

    def synced(self) -> os.stat_result:
        """Sync and close the file; return its status. Raises PublishError (the temp file
        removed)."""
        try:
            os.fsync(self.fd)
            status = os.fstat(self.fd)
            fd, self.fd = self.fd, -1
            os.close(fd)
        except OSError as exc:
            self._failed(exc)
        return status

    def discard(self) -> None:
        """Close and remove the temp file."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.temp.unlink(missing_ok=True)

    def _failed(self, exc: OSError) -> NoReturn:
        self.discard()
        raise PublishError(f"cannot write {self.path} ({exc.strerror})") from exc


class Staged:
    """Bytes written and synced to a temp file beside their path, not yet in place."""

    def __init__(
        self, path: Path, data: bytes | bytearray | Unsynced, mode: int | None = None
    ) -> None:
        """Write and fsync the temp file of `data` for `path` (see `atomic_write`), or
        sync the temp file `data` was written to; raises PublishError."""
        self.path = path
        if isinstance(data, Unsynced):
            written = data
        else:
            written = Unsynced(path, mode)
            written.write(data)
        self.temp = written.temp
        self.status = written.synced()

    def place(self) -> None:
        """Rename the temp file to its path and fsync the folder; raises PublishError
        (the temp file removed)."""
        # The file replaced is freed on a thread of its own.
        with freeing(self.path):
            try:
                # rename() replaces whatever is at the path, a symlink included, and
                # follows nothing.
                os.replace(self.temp, self.path)
                fsync_dir(self.path.parent)
            except OSError as exc:
                self.discard()
                raise PublishError(f"cannot write {self.path} ({exc.strerror})") from exc

    def discard(self) -> None:
        """Remove the temp file (none once placed)."""
        self.temp.unlink(missing_ok=True)


class Placing:
    """A `LocalStore.put` begun: its bytes synced to a temp file (`staged`), or found
    stored already (with stamp `stamp`)."""

    def __init__(self, staged: Staged | None, stamp: int = 0) -> None:
        self.staged = staged
        self.stamp = stamp

    def place(self) -> tuple[int, bool]:
        """Put the bytes in place; return what `Store.put` returns. Raises PublishError."""
        if self.staged is None:
            return self.stamp, False
        self.staged.place()
        return self.staged.status.st_mtime_ns, True

    def discard(self) -> None:
        """Give the write up: its temp file is removed."""
        if self.staged is not None:
            self.staged.discard()


def _create_temp(path: Path) -> tuple[int, Path]:
    """Create a new, empty temp file beside `path`; return its descriptor and path.

    Anyone else who can write to the folder could plant a symlink at a name they can
    guess: the name is random and the file is created exclusively, never through a link.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        # The pid last: remove_leftover_temps keeps a running sitemapd's temps.
        # Eight random bytes as `secrets.token_hex(8)` makes them, without loading it (and
        # hashlib, hmac, base64 and random) for a build's first write.
        temp = path.with_name(f"{_TEMP_PREFIX}{path.name}-{os.urandom(8).hex()}-{os.getpid()}")
        try:
            return os.open(temp, flags, 0o666), temp
        except FileExistsError:
            continue


def remove_leftover_temps(folder: Path) -> None:
    """Remove temp files that a crashed sitemapd left in `folder` (never a live one's)."""
    for path in folder.glob(_TEMP_PREFIX + "*"):
        # Loaded when a temp file is found (with ctypes and signal): seldom.
        from sitemapd.core.lifeline import running

        pid = path.name.rpartition("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and running(int(pid)):
            continue
        path.unlink(missing_ok=True)
