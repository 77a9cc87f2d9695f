"""Watching sources with watchdog. Watchers only queue hints for the writer.

An event names a path that may have changed; the writer re-reads it and the disk decides.
Handlers never raise (an exception would silently end watchdog's thread), opened and
closed-without-writing events are filtered out so that reading pages triggers nothing,
and paths inside the output or state directory are ignored. A page written in place is
read once its writer closes it (inotify reports the close), not between two of its writes.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from sitemapd.config.sources import DirectorySource, SourceConfig, UrlListSource
from sitemapd.core import logs
from sitemapd.sources.base import skipped_below

log = logs.Logger("sitemapd.watch")

# Events that can mean content changed; opened / closed-no-write / dir-modified cannot.
_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileAttribEvent,
    FileDeletedEvent,
    FileMovedEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
]

# Set in the environment at start, it makes every watcher fail for good: for testing
# that health checks, WATCHDOG=1 and /healthz tell the truth.
FAIL_HOOK = "SITEMAPD_TEST_FAIL_WATCHERS"

# Seconds a page written in place waits for its writer to close it before it is read
# anyway (a writer that keeps it open; a truncate(2) has no close).
UNCLOSED_FOR = 10.0

OnPaths = Callable[[str, set[str]], None]  # (source name, relative paths)
OnRescan = Callable[[str], None]  # (source name)


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            self.watcher.event(event)
        except Exception:
            # Never let an exception reach watchdog: it would end the observer silently.
            log.exception("%s: error handling %r", self.watcher.source.name, event)
            self.watcher.on_rescan(self.watcher.source.name)


class Watcher:
    """One source's watchdog observer, with what it takes to restart it."""

    def __init__(
        self,
        source: SourceConfig,
        skip: tuple[str, ...],
        on_paths: OnPaths,
        on_rescan: OnRescan,
    ) -> None:
        self.source = source
        self.on_paths = on_paths
        self.on_rescan = on_rescan
        self._skipped = skip
        self._skip: tuple[str, ...] = ()
        self.observer: BaseObserver | None = None
        self.backend = "none"
        self.root_id: tuple[int, int] | None = None
        # The folder observed, as `watched` resolves it when it starts.
        self.observed = self.folder
        # Why the last start failed, for logs, STATUS and /healthz; and whether it was
        # because the folder is missing (an outage of the source, not of sitemapd).
        self.failure: str | None = None
        self.missing = False
        # Pages written in place whose writer has not closed them yet, with when the first
        # write was seen: a read between the truncation and the last write would publish
        # half a page and move its lastmod twice. The observer's thread adds, the health
        # check releases.
        self._unclosed: dict[str, float] = {}
        self._unclosed_lock = threading.Lock()

    @property
    def folder(self) -> Path:
        """Return the folder this watcher observes."""
        if isinstance(self.source, DirectorySource):
            return self.source.root
        assert isinstance(self.source, UrlListSource)
        return self.source.path.parent

    def start(self) -> bool:
        """Start observing; return False, with the reason in `failure`, when it cannot."""
        try:
            st = self.folder.stat()
        except OSError:
            self.failure = f"{self.folder} is missing"
            self.missing = True
            return False
        self.missing = False
        if os.environ.get(FAIL_HOOK):
            self.failure = f"watching disabled by {FAIL_HOOK} (test hook)"
            return False
        self.root_id = (st.st_dev, st.st_ino)
        self.observed = self.watched()
        # Where the skipped folders are now (a root swapped for a link moves them).
        self._skip = tuple(path + os.sep for path in skipped_below(self.folder, self._skipped))
        try:
            self._start_any()
        except OSError as exc:
            self.failure = f"cannot watch {self.folder} ({exc})"
            return False
        self.failure = None
        return True

    def watched(self) -> Path:
        """Return the folder to observe: a page folder where its links lead (inotify
        watches a link itself, not the folder it names: a root swapped for a link to a
        release left the daemon deaf to its pages); a list's folder as it is named, its
        events matched to the list's path."""
        if isinstance(self.source, DirectorySource):
            return Path(os.path.realpath(self.folder))
        return self.folder

    def _start_any(self) -> None:
        wanted = getattr(self.source, "backend", "auto")
        if wanted != "polling":
            try:
                self._start(Observer(), "inotify")
                return
            except OSError as exc:
                if exc.errno not in (errno.ENOSPC, errno.EMFILE) or wanted == "inotify":
                    raise
                limit = "max_user_watches" if exc.errno == errno.ENOSPC else "max_user_instances"
                log.warning(
                    "%s: inotify limit reached (%s); polling instead. Raise it with "
                    "`sysctl fs.inotify.%s=524288`",
                    self.source.name,
                    exc.strerror,
                    limit,
                )
        interval = getattr(self.source, "poll_interval", 2.0)
        self._start(PollingObserver(timeout=interval), "polling")

    def _start(self, observer: BaseObserver, backend: str) -> None:
        recursive = isinstance(self.source, DirectorySource)
        observer.schedule(
            _Handler(self), str(self.observed), recursive=recursive, event_filter=_EVENTS
        )
        try:
            observer.start()
        except OSError:
            observer.stop()
            raise
        self.observer, self.backend = observer, backend
        log.info("%s: watching %s (%s)", self.source.name, self.observed, backend)

    def stop(self) -> None:
        """Stop observing and wait for the observer thread."""
        if self.observer is not None:
            self.observer.stop()
            if self.observer.is_alive():
                self.observer.join(timeout=5)
            self.observer = None

    def healthy(self) -> bool:
        """True while the observer runs on the same folder it started on."""
        if self.observer is None or not self.observer.is_alive():
            return False
        # inotify ends the watch when the folder is deleted, while a folder created in its
        # place often gets the same inode number back: the emitter's end tells them apart.
        emitters = self.observer.emitters
        if not emitters or not all(emitter.is_alive() for emitter in emitters):
            return False
        try:
            st = self.folder.stat()
        except OSError:
            return False
        # A folder swapped for a link (or a link pointed elsewhere) is watched anew.
        return (st.st_dev, st.st_ino) == self.root_id and self.watched() == self.observed

    def event(self, event: FileSystemEvent) -> None:
        """Turn one watchdog event into work for the writer."""
        if isinstance(self.source, UrlListSource):
            names = {os.fsdecode(event.src_path), os.fsdecode(event.dest_path or "")}
            if str(self.source.path) in names:
                self.on_rescan(self.source.name)
            return
        if isinstance(event, DirDeletedEvent | DirMovedEvent):
            # Which URLs lived below a vanished folder is a question for a full scan.
            self.on_rescan(self.source.name)
            if isinstance(event, DirMovedEvent):
                self._queue(os.fsdecode(event.dest_path))
            return
        path = os.fsdecode(event.src_path)
        if self._held(event, path):
            return
        self._queue(path)
        if event.dest_path:
            self._queue(os.fsdecode(event.dest_path))

    def _held(self, event: FileSystemEvent, path: str) -> bool:
        """True when `event` is a write to `path` whose close inotify will report: the path
        is queued then (or by `release_unclosed`). Any other event on it ends the wait."""
        if isinstance(event, FileModifiedEvent) and self.backend == "inotify":
            with self._unclosed_lock:
                self._unclosed.setdefault(path, time.monotonic())
            return True
        with self._unclosed_lock:
            self._unclosed.pop(path, None)
        return False

    def release_unclosed(self) -> None:
        """Queue the pages written in place whose writer kept them open `UNCLOSED_FOR`
        seconds or more."""
        oldest = time.monotonic() - UNCLOSED_FOR
        with self._unclosed_lock:
            due = [path for path, since in self._unclosed.items() if since <= oldest]
            for path in due:
                del self._unclosed[path]
        for path in due:
            self._queue(path)

    def _queue(self, path: str) -> None:
        if path.startswith(self._skip) or (path + os.sep).startswith(self._skip):
            return
        if os.path.basename(path).startswith(".sitemapd-tmp-"):
            return  # our own writes in progress
        relpath = os.path.relpath(path, self.observed)
        if relpath == "." or relpath.startswith(".." + os.sep) or relpath == "..":
            return
        self.on_paths(self.source.name, {relpath.replace(os.sep, "/")})


class OutputWatcher(Watcher):
    """Watches the output folder for sitemapd's own file names: any event on one asks
    the writer to check that what it published is still there as published (another
    writer, a site generator, may have replaced or deleted it)."""

    def __init__(
        self, name: str, folder: Path, is_output: Callable[[str], bool], on_rescan: OnRescan
    ) -> None:
        # Watched as the folder of a single file is: not recursive, by the folder's inode.
        self._folder = folder
        super().__init__(UrlListSource(name, folder), (), lambda *_: None, on_rescan)
        self._is_output = is_output

    @property
    def folder(self) -> Path:
        return self._folder

    def event(self, event: FileSystemEvent) -> None:
        for path in (os.fsdecode(event.src_path), os.fsdecode(event.dest_path or "")):
            if (
                path
                and os.path.dirname(path) == str(self.folder)
                and self._is_output(os.path.basename(path))
            ):
                self.on_rescan(self.source.name)
                return
