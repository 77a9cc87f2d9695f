"""One writer per output folder: flocks on `.sitemapd/<name>.lock` beside the files.

The state-folder lock keeps two processes off one ledger; these keep two ledgers off
one folder (two daemons given the same `output_dir` and different `state_dir` would
each take the other's files for damage and republish its own, every second). A lock is
taken for each name no other site may publish there: the index (its shards are named
after it), the first news sitemap and the first page of each feed (later ones are named
after them). The partitions of a site publish into one folder under names of their own,
so each takes its own locks. A name stands for the files numbered after it as well
(`atom-2.xml` is a page of `atom.xml`'s feed, `sitemap-7.xml` a shard of `sitemap.xml`'s
index): locks are refused while another process holds one whose files share a name with
theirs. A lock file holds its holder's pid, host and state folder, for the error that
names them; `.sitemapd/` is never served (see examples/nginx-sitemaps.conf).
"""

from __future__ import annotations

import errno
import os
import re
import threading
from pathlib import Path

from sitemapd.config import Config
from sitemapd.core.flock import RecordError, held_elsewhere, hold, same_file
from sitemapd.errors import PublishError
from sitemapd.publish.manifestfile import PRIVATE
from sitemapd.publish.names import OutputNames


class FolderLock:
    """This process's claim to publish a site's files into a local folder (the
    publisher's fence there, as the lease is in a bucket). Safe to share between
    threads: a publish checks it from its storing threads."""

    def __init__(
        self, folder: Path, names: list[str], state_dir: Path, settings: list[str] | None = None
    ) -> None:
        """Lock `names` in `folder` for the site of `state_dir`; `settings` names the
        setting of each name, for errors."""
        self.folder = folder
        self.names = names
        self.settings = settings or [""] * len(names)
        self.paths = [folder / PRIVATE / f"{name}.lock" for name in names]
        # The host's name as socket.gethostname() gives it, without loading `socket` (3
        # ms of a build that finds nothing to do).
        self._record = f"{os.getpid()} {os.uname().nodename} {state_dir}\n".encode()
        # The descriptor holding each path's flock, while held; the path another holds;
        # why this process may publish here no more (see retire).
        self._fds: dict[Path, int] = {}
        self._blocked = self.paths[0]
        # The names of the lock found blocking and of this one's it clashes with, when
        # they are not the same name (`_clashing`), with the setting of this one's.
        self._clash: tuple[str, str, str] | None = None
        # Lock files this process holds for the engine this lock replaces (`succeed`).
        self._predecessor: frozenset[Path] = frozenset()
        self._retired: str | None = None
        self._turn = threading.Lock()

    @classmethod
    def of(cls, config: Config) -> FolderLock | None:
        """Return the lock of `config`'s output folder (None for a bucket)."""
        if config.publish.s3 is not None:
            return None
        claimed = OutputNames(config).claimed()
        return cls(config.site.output_dir, [*claimed], config.site.state_dir, [*claimed.values()])

    @classmethod
    def taken(cls, config: Config) -> FolderLock | None:
        """Return the lock of `config`'s output folder (None for a bucket), taken: before
        the ledger opens, a process refused changes nothing. Raises PublishError naming
        the process that holds it; a folder that cannot be written now is no refusal
        (each publish tries again, and fails saying why)."""
        lock = cls.of(config)
        if lock is None:
            return None
        try:
            held = lock.keep()
        except PublishError:
            return lock
        if not held:
            raise lock._refused()
        return lock

    @property
    def held(self) -> bool:
        """True while this process holds every lock, on the file now at its path (a
        folder deleted or replaced under it takes the files with it)."""
        with self._turn:
            return self._retired is None and all(map(self._holds, self.paths))

    def take(self) -> None:
        """Hold the locks; raises PublishError naming the process that holds one, or when
        the folder cannot be written, or the lock was retired."""
        if not self.keep():
            raise self._refused()

    def keep(self) -> bool:
        """Hold the locks, taking again those whose file was deleted or replaced; return
        False, holding no more than before, when another process holds one. Raises
        PublishError when the folder cannot be written, or the lock was retired."""
        with self._turn:
            if self._retired is not None:
                raise PublishError(self._retired)
            taken: list[Path] = []
            for path in self.paths:
                if self._holds(path):
                    continue
                if not self._lock(path):
                    self._let_go(taken)
                    self._blocked, self._clash = path, None
                    return False
                taken.append(path)
            # Checked once this process holds its own: of two taking clashing locks at
            # once, neither goes on (each finds the other's held).
            clash = self._clashing() if taken else None
            if clash is not None:
                self._let_go(taken)
                self._blocked, self._clash = clash
                return False
            return True

    def succeed(self, old: FolderLock) -> None:
        """Hold the locks, taking over from `old` (the lock of an engine being replaced)
        those of the same files it holds, so that none is free in between; `old` keeps
        the rest. Raises PublishError as take does, `old` then holding all it held.

        The same files, not the same paths: a folder moved (`mv out out2`, the
        configuration then given out2) holds `old`'s lock files under new paths."""
        with old._turn:
            # Each of this lock's paths, and the path under which `old` holds its file.
            moved = {
                path: held
                for path in self.paths
                for held in list(old._fds)
                if same_file(old._fds[held], path)
            }
            fds = {path: old._fds.pop(held) for path, held in moved.items()}
            kept = frozenset(p for p in old._fds if old._holds(p))
        with self._turn:
            self._fds.update(fds)
            self._predecessor = kept
        try:
            self.take()
        except PublishError:
            with self._turn, old._turn:
                for path, held in moved.items():
                    # Those still held go back (a file deleted meanwhile was let go).
                    fd = self._fds.pop(path, None)
                    if fd is not None:
                        old._fds[held] = fd
            self.release()
            raise
        finally:
            with self._turn:
                self._predecessor = frozenset()

    def fence(self) -> None:
        """Make sure of the locks before a write; raises PublishError when another
        process holds one, or the folder cannot be written, or the lock was retired."""
        self.take()

    def release(self) -> None:
        """Give the locks up (closing a descriptor drops its flock)."""
        with self._turn:
            for fd in self._fds.values():
                os.close(fd)
            self._fds.clear()

    def retire(self, why: str) -> None:
        """Give the locks up for good: every later fence raises PublishError(`why`), so
        that nothing publishes here unlocked."""
        with self._turn:
            self._retired = why
        self.release()

    def _holds(self, path: Path) -> bool:
        """True when this process holds the lock on the file now at `path` (the caller
        holds `_turn`)."""
        fd = self._fds.get(path)
        if fd is None:
            return False
        return same_file(fd, path)

    def _let_go(self, paths: list[Path]) -> None:
        """Give up the locks of `paths` (the caller holds `_turn`)."""
        for path in paths:
            os.close(self._fds.pop(path))

    def _clashing(self) -> tuple[Path, tuple[str, str, str]] | None:
        """Return the lock file another process holds for a name whose files share a
        name with those of one of this lock's, with the two names and the setting of
        this one's; None when none does (the caller holds `_turn`)."""
        folder = self.folder / PRIVATE
        try:
            with os.scandir(folder) as entries:
                others = [Path(e.path) for e in entries if e.name.endswith(".xml.lock")]
        except OSError:  # gone again: the next fence takes the locks afresh
            return None
        for other in sorted(set(others) - {*self.paths, *self._predecessor}):
            theirs = other.name.removesuffix(".lock")
            for ours, setting in zip(self.names, self.settings, strict=True):
                if _shared(theirs, ours) and held_elsewhere(other):
                    return other, (theirs, ours, setting)
        return None

    def _lock(self, path: Path) -> bool:
        """Take the lock on `path` (a stale descriptor of it closed first); return False
        when another process holds it. Raises PublishError."""
        stale = self._fds.pop(path, None)
        if stale is not None:
            os.close(stale)
        make_folder(self.folder)
        try:
            fd = hold(path, self._record, os.O_CLOEXEC | os.O_NOFOLLOW)
        except RecordError as exc:
            raise PublishError(f"cannot write {path} ({exc.strerror})") from exc
        except OSError as exc:
            # The path in the way: `.sitemapd` a file, the lock a symlink (never followed).
            where = exc.filename or path if exc.errno != errno.ELOOP else path
            why = "a symlink" if exc.errno == errno.ELOOP else exc.strerror
            raise PublishError(f"cannot create {where} ({why})") from exc
        if fd is None:
            return False
        self._fds[path] = fd
        return True

    def _refused(self) -> PublishError:
        """Return the error naming who holds the lock `keep` found taken, from its file:
        "sitemapd pid N on HOST (state folder DIR)"."""
        try:
            pid, host, state = self._blocked.read_text().rstrip("\n").split(" ", 2)
            holder = f"sitemapd pid {pid} on {host} (state folder {state})"
        except (OSError, ValueError, UnicodeDecodeError):
            holder = "another sitemapd"
        clash = ""
        if self._clash is not None:
            theirs, ours, setting = self._clash
            clash = (
                f": its {theirs} and this configuration's {ours} name the same files (a "
                "name stands for the files numbered after it too: an index's shards, a "
                "feed's or news sitemap's later pages)" + (f"; rename {setting}" if setting else "")
            )
        return PublishError(f"output folder {self.folder} is published by {holder}{clash}")


def make_folder(folder: Path) -> None:
    """Create the output folder `folder` if missing; raises PublishError."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PublishError(f"cannot create output directory {folder} ({exc})") from exc


def _shared(first: str, other: str) -> bool:
    """True when the files named after `first` and after `other` (each a name and those
    numbered after it, `<stem>-N.xml`) may share a name."""
    return _numbered(first, other) or _numbered(other, first)


def _numbered(first: str, name: str) -> bool:
    """True when `name` is `first` or may be one numbered after it: a lock's name does
    not say whether it is an index (shards from -1) or a feed (pages from -2), so any
    number counts."""
    stem = re.escape(first.removesuffix(".xml"))
    return name == first or re.fullmatch(rf"{stem}-\d+\.xml", name) is not None
