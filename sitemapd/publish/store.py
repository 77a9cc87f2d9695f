"""Where published files go: the interface the publisher writes through, and the local
output directory behind it.

The publisher decides what to write and in which order; a store only keeps bytes under
names. Each write returns a stamp (an integer naming the stored version) that the
ledger records, so a later publish can tell a file still as published from one edited
or lost since, without reading it.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import stat
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Protocol

from sitemapd.core import logs
from sitemapd.core.durable import fsync_dir
from sitemapd.errors import PublishError
from sitemapd.publish.atomic import (
    Placing,
    Staged,
    Unsynced,
    atomic_write,
    remove_leftover_temps,
)
from sitemapd.publish.folderlock import make_folder
from sitemapd.publish.manifestfile import Row, decode, manifest_name
from sitemapd.publish.splicefile import Spliced, spliced

log = logs.Logger("sitemapd.store")

# (digest of the rendered text, stored size, stamp), as the ledger records a published file
# (the digest: `core/docdigest.py`).
Record = tuple[str, int, int | None]


class Store(Protocol):
    """A flat namespace of published files."""

    @property
    def where(self) -> str:
        """Return where files go, for messages (a folder or an s3:// URL)."""

    def prepare(self, write: bool) -> None:
        """Get ready for one publish (create the folder, list the bucket); `write` false
        for a dry run, which only reads. Raises PublishError."""

    def intact(self, name: str, record: Record) -> bool:
        """True when `name` is stored exactly as `record` says it was published."""

    def put(self, name: str, data: bytes, content_type: str) -> tuple[int, bool]:
        """Store `data` as `name`; return its stamp and False when the identical bytes
        were stored already (nothing written). Raises PublishError."""

    def names(self) -> list[str]:
        """Return the names of the files stored, sorted."""

    def remove(self, names: Iterable[str]) -> None:
        """Delete the files `names` (missing ones are fine); raises PublishError."""

    def edit_robots(
        self, edit: Callable[[bytes], bytes], dry_run: bool
    ) -> tuple[str, bytes | None] | None:
        """Apply `edit` to robots.txt with no lost update (a `dry_run` only reads); return
        where it is and the new bytes if they changed, or None when there is none to
        edit. Raises PublishError."""

    def put_manifest(self, shard: str, data: bytes) -> None:
        """Keep the manifest file `data` of `shard` beside it, for a ledger that lacks them (a
        successor publisher, a lost state folder); raises PublishError."""

    def manifest_rows(self, shards: Iterable[str]) -> Iterator[Row]:
        """Yield the manifest rows of `shards` (missing ones: none)."""


class Fence(Protocol):
    """What keeps a publisher the target's one writer: a bucket's lease, a folder's lock."""

    @property
    def held(self) -> bool:
        """True while this process may write to the target (answers at once)."""

    def fence(self) -> None:
        """Make sure of the lease or lock (renew it, take it again); raises PublishError
        when another holds it."""


class LocalStore:
    """The output directory: atomic renames, fsynced; robots.txt edited under a lock."""

    def __init__(self, folder: Path, robots_txt: Path | None) -> None:
        self.folder = folder
        self.robots_txt = robots_txt

    @property
    def where(self) -> str:
        return str(self.folder)

    def prepare(self, write: bool) -> None:
        if not write:
            return
        make_folder(self.folder)
        remove_leftover_temps(self.folder)
        manifests = (self.folder / manifest_name("x")).parent
        if manifests.is_dir():
            remove_leftover_temps(manifests)

    def intact(self, name: str, record: Record) -> bool:
        try:
            # A symlink planted at the name is never as published: it gets replaced.
            st = (self.folder / name).lstat()
        except (FileNotFoundError, NotADirectoryError):  # the folder may be a file now
            return False
        return stat.S_ISREG(st.st_mode) and (st.st_size, st.st_mtime_ns) == record[1:]

    def put(self, name: str, data: bytes, content_type: str) -> tuple[int, bool]:
        return self.stage(name, data).place()

    def stage(self, name: str, data: bytes | bytearray | Unsynced, other: bool = False) -> Placing:
        """Begin `put(name, data)`: its bytes written and synced to a temp file now (a
        caller may write others meanwhile), put in place by `Placing.place`. `other`: the
        file at `name` holds other bytes, as a `spliced` temp file does. Raises PublishError."""
        path = self.folder / name
        if other or isinstance(data, Unsynced):
            return Placing(Staged(path, data))
        try:
            # A ledger with no record of a file (a lost state folder) finds it as it
            # would write it: left alone, its mtime and ETag stay what crawlers know.
            st = path.lstat()
            if stat.S_ISREG(st.st_mode) and st.st_size == len(data) and path.read_bytes() == data:
                return Placing(None, st.st_mtime_ns)
        except OSError:
            pass  # missing or unreadable: written
        return Placing(Staged(path, data))

    def read(self, name: str) -> bytes | None:
        """Return the bytes of the regular file `name` (a path under the folder, never
        through a symlink), or None when there is none or it cannot be read."""
        with self._regular(name) as handle:
            try:
                return None if handle is None else handle.read()
            except OSError:
                return None

    def spliced(
        self, name: str, head: bytes, changes: Sequence[tuple[bytes, bytes]], recorded: str
    ) -> Spliced | None:
        """Return the regular file `name` (never through a symlink) as `splicefile.spliced`
        splices it beside itself; None when there is none. Raises PublishError."""
        with self._regular(name) as handle:
            temp = partial(Unsynced, self.folder / name)
            return None if handle is None else spliced(handle, head, changes, recorded, temp)

    @contextlib.contextmanager
    def _regular(self, name: str) -> Iterator[io.FileIO | None]:
        """Yield the regular file `name` opened for reading (never through a symlink),
        or None when there is none or it cannot be opened."""
        try:
            fd = os.open(self.folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            yield None
            return
        try:
            regular = stat.S_ISREG(os.fstat(fd).st_mode)
        except OSError:
            regular = False
        if not regular:  # a folder, say: a file object of it cannot even be made
            os.close(fd)
            yield None
            return
        with open(fd, "rb", buffering=0) as handle:
            yield handle

    def movable(self, name: str, path: Path) -> bool:
        """True when the file `path` can become `name` by a rename: it is on the file
        system of the folder `name` goes in, and nothing is stored as `name` (a file there
        may hold these very bytes, whose mtime should stay)."""
        target = self.folder / name
        try:
            if os.lstat(path).st_dev != target.parent.stat().st_dev:
                return False
        except OSError:
            return False
        try:
            target.lstat()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return False

    def move_in(self, name: str, path: Path) -> int:
        """Make the complete, fsynced file `path` (`movable`) the file `name`, as
        atomic_write does its temp file; return its stamp. Raises PublishError."""
        target = self.folder / name
        try:
            os.rename(path, target)
            fsync_dir(target.parent)
            return target.lstat().st_mtime_ns
        except OSError as exc:
            raise PublishError(f"cannot write {target} ({exc.strerror})") from exc

    def move_manifest_in(self, shard: str, path: Path) -> bool:
        """Make the complete, fsynced manifest file `path` the manifest of `shard`,
        replacing any; False (`path` left) when it cannot be renamed there (another file
        system)."""
        target = self.folder / manifest_name(shard)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(path, target)
        except OSError:
            return False
        try:
            fsync_dir(target.parent)
        except OSError as exc:
            raise PublishError(f"cannot write {target} ({exc.strerror})") from exc
        return True

    def put_after(
        self,
        name: str,
        data: bytes | bytearray | Unsynced,
        manifest_of: Callable[[], bytes],
        other: bool = False,
    ) -> tuple[int, bool]:
        """Store `data` as `name` as `put` does, after the manifest file `manifest_of()`
        gives: the two temp files written and synced at once (the shard's on a thread of
        its own, while `manifest_of` may still make the manifest), then the manifest
        renamed into place, then the shard. `other`: as for `stage`. Raises
        PublishError."""
        shard = Soon(self, name, data, other)
        try:
            manifest = self._stage_manifest(name, manifest_of())
        except BaseException:
            shard.discard()
            raise
        try:
            placing = shard.placing()
        except BaseException:
            manifest.discard()
            raise
        try:
            manifest.place()
        except BaseException:
            placing.discard()
            raise
        return placing.place()

    def refresh_manifest(self, shard: str, data: bytes) -> None:
        """Store the manifest file `data` of `shard` unless it is stored already."""
        if self.read(manifest_name(shard)) != data:
            self.put_manifest(shard, data)

    def put_manifest(self, shard: str, data: bytes) -> None:
        self._stage_manifest(shard, data).place()

    def _stage_manifest(self, shard: str, data: bytes) -> Staged:
        """Return the manifest file `data` of `shard` written and synced beside its name,
        not yet in place; raises PublishError."""
        path = self.folder / manifest_name(shard)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PublishError(f"cannot create {path.parent} ({exc.strerror})") from exc
        return Staged(path, data)

    def manifest_rows(self, shards: Iterable[str]) -> Iterator[Row]:
        for shard in shards:
            path = self.folder / manifest_name(shard)
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise PublishError(f"cannot read {path} ({exc.strerror})") from exc
            yield from decode(data, str(path))

    def names(self) -> list[str]:
        if not self.folder.is_dir():
            return []
        return sorted(path.name for path in self.folder.iterdir())

    def remove(self, names: Iterable[str]) -> None:
        removed = False
        for name in names:
            (self.folder / name).unlink(missing_ok=True)
            (self.folder / manifest_name(name)).unlink(missing_ok=True)
            removed = True
        if removed:
            fsync_dir(self.folder)

    def edit_robots(
        self, edit: Callable[[bytes], bytes], dry_run: bool
    ) -> tuple[str, bytes | None] | None:
        if self.robots_txt is None:
            return None
        # Edit the file a symlink points to, keeping its permissions.
        path = self.robots_txt.resolve()
        if dry_run:
            try:
                current = path.read_bytes()
            except OSError:
                current = b""
            updated = edit(current)
            return str(path), None if updated == current else updated
        try:
            with _locked(path):
                current = path.read_bytes()
                mode = stat.S_IMODE(path.stat().st_mode)
                updated = edit(current)
                if updated == current:
                    return str(path), None
                remove_leftover_temps(path.parent)
                atomic_write(path, updated, mode)
        except (OSError, PublishError) as exc:
            # The sitemaps are out; a read-only robots.txt must not stop them.
            log.warning(
                "cannot add the Sitemap: line to %s (%s): make its folder writable "
                "(systemd: ReadWritePaths=) or add the line by hand",
                path,
                exc,
            )
            return None
        return str(path), updated


class Soon:
    """`LocalStore.stage(name, data, other)` begun on a thread of its own: the temp file
    written and synced while the caller goes on."""

    def __init__(
        self, store: LocalStore, name: str, data: bytes | bytearray | Unsynced, other: bool = False
    ) -> None:
        self._placing: Placing | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._stage, args=(store, name, data, other), name="sitemapd-stage"
        )
        self._thread.start()

    def _stage(
        self, store: LocalStore, name: str, data: bytes | bytearray | Unsynced, other: bool
    ) -> None:
        try:
            self._placing = store.stage(name, data, other)
        except BaseException as exc:  # raised where it is waited for
            self._error = exc

    def placing(self) -> Placing:
        """Wait for the temp file; return what puts it in place. Raises PublishError."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._placing is not None
        return self._placing

    def discard(self) -> None:
        """Wait for the temp file, and remove it."""
        self._thread.join()
        if self._placing is not None:
            self._placing.discard()


class _locked:
    """An exclusive flock on `path` itself (created empty if missing): the daemons of a
    site's partitions edit one robots.txt, each its own line, and must not undo each
    other's. Each edit replaces the file, so the lock is retaken until it holds the file
    that is at `path` now."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1

    def __enter__(self) -> None:
        while True:
            fd = os.open(self.path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                now = self.path.lstat()
            except FileNotFoundError:
                now = None
            if now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
                self.fd = fd
                return
            os.close(fd)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)
