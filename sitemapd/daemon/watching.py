"""The daemon's watchers: directory and list watchers, the output folder's, change-log
listeners; restarted when they die or their folder is replaced.

watchdog loads with the first watcher: a site of change logs alone starts (and reads,
and publishes) without it, and watches its output folder from its first publish on.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import TYPE_CHECKING

from sitemapd.changelog import notifies
from sitemapd.config.sources import ChangelogSource, DirectorySource, UrlListSource
from sitemapd.core import logs
from sitemapd.daemon.state import DaemonState
from sitemapd.errors import SitemapdError

if TYPE_CHECKING:
    from sitemapd.daemon.watch import OutputWatcher, Watcher

log = logs.Logger("sitemapd.daemon")

ROBOTS_WATCH = "robots.txt"  # the watcher of a robots.txt outside every source root
OUTPUT_WATCH = "output"  # the watcher of sitemapd's own names in the output folder
# watchdog's logger of the inotify queue.
_INOTIFY_LOG = "watchdog.observers.inotify_c"


class _OverflowListener(logging.Handler):
    """Turns watchdog's log of an inotify queue overflow into a reconcile.

    watchdog 7 tells only its logger when the kernel dropped events.
    """

    def __init__(self, watching: Watching) -> None:
        super().__init__(logging.WARNING)
        self.watching = watching

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage():
            self.watching.overflowed()


class Watching:
    """Every watcher and listener of one daemon; they only queue hints for the writer."""

    def __init__(self, state: DaemonState) -> None:
        self.state = state
        self.watchers: dict[str, Watcher] = {}
        self.output_watcher: OutputWatcher | None = None
        # The failure last logged per watcher, so a lasting outage is logged once.
        self._reported: dict[str, str] = {}
        # Held while watchers are started or stopped (health job, reload, stop).
        self.lock = threading.RLock()
        self._listeners: dict[str, threading.Thread] = {}
        self._overflow = _OverflowListener(self)
        self.output_missing = False

    def attach(self) -> None:
        """Hear of inotify queue overflows (watchdog logs them, nothing else)."""
        logging.getLogger(_INOTIFY_LOG).addHandler(self._overflow)

    def detach(self) -> None:
        logging.getLogger(_INOTIFY_LOG).removeHandler(self._overflow)

    def overflowed(self) -> None:
        """The kernel dropped events: only a full reconcile can tell what changed."""
        log.warning("events were lost (inotify queue overflow): reconciling")
        for source in self.state.config.sources:
            self.state.queue.add_rescan(source.name)

    def start_listeners(self) -> None:
        """Wake the poll of each change log that can notify (PostgreSQL LISTEN)."""
        for source in self.state.config.sources:
            if (
                isinstance(source, ChangelogSource)
                and notifies(source.spec)
                and source.name not in self._listeners
            ):
                thread = threading.Thread(
                    target=self.listen, args=(source,), name=f"listen:{source.name}", daemon=True
                )
                self._listeners[source.name] = thread
                thread.start()

    def listen(self, source: ChangelogSource) -> None:
        while not self.state.stopping.is_set():
            # The engine's own config: after a reload, the reader must follow the new
            # table, query and channel, whatever this thread was started with.
            engine = self.state.engine
            current = next((s for s in engine.config.sources if s.name == source.name), None)
            if not isinstance(current, ChangelogSource) or not notifies(current.spec):
                break  # removed or changed by a reload
            try:
                woken = engine.reader(current).wait(1.0)
            except SitemapdError:
                woken = False
                self.state.stopping.wait(self.state.config.daemon.debounce + 1.0)
            if woken:
                self.state.queue.add_paths(source.name, {""})
        self._listeners.pop(source.name, None)

    def start(self) -> None:
        """Start every watcher: the sources' and the output folder's."""
        self.start_sources()
        self.watch_output()

    def start_sources(self) -> None:
        """Start the watchers of the sources' folders and files (and of a robots.txt
        outside them); make the output folder on disk."""
        site = self.state.config.site
        skip = site.not_content
        watched: list[DirectorySource | UrlListSource] = [
            s for s in self.state.config.sources if isinstance(s, DirectorySource | UrlListSource)
        ]
        robots_txt = site.robots_txt
        roots = [s.root for s in self.state.config.sources if isinstance(s, DirectorySource)]
        if robots_txt is not None and not any(robots_txt.is_relative_to(r) for r in roots):
            # Any batch re-reads robots.txt; this makes its edits one.
            watched.append(UrlListSource(name=ROBOTS_WATCH, path=robots_txt))
        if watched:
            from sitemapd.daemon.watch import Watcher
        for source in watched:
            watcher = Watcher(source, skip, self.state.queue.add_paths, self.state.queue.add_rescan)
            self.watchers[source.name] = watcher
            self.start_watcher(watcher)
        if self.state.config.publish.s3 is None:
            with contextlib.suppress(OSError):  # not a folder: the publish reports it
                self.state.config.site.output_dir.mkdir(parents=True, exist_ok=True)

    def watch_output(self) -> None:
        """Watch the output folder for sitemapd's own names (none with an S3 target). Its
        health is the output folder's, reported as such: a missing folder is no fault of
        the daemon's, and this watcher is started again once the folder is back."""
        self.unwatch_output()
        if self.state.config.publish.s3 is not None:
            return
        from sitemapd.daemon.watch import OutputWatcher

        names = self.state.engine.publisher.names
        watcher = OutputWatcher(
            OUTPUT_WATCH,
            self.state.config.site.output_dir,
            names.is_output,
            self.state.queue.add_rescan,
        )
        if watcher.start():
            self.output_watcher = watcher
            # What happened while it was not watched.
            self.state.queue.add_rescan(OUTPUT_WATCH)

    def start_watcher(self, watcher: Watcher, restarted: bool = False) -> None:
        name = watcher.source.name
        if watcher.start():
            if restarted or name in self._reported:
                self._reported.pop(name, None)
                log.warning("%s: watching %s again: reconciling", name, watcher.folder)
                self.state.queue.add_rescan(name)
        elif watcher.failure != self._reported.get(name):
            self._reported[name] = watcher.failure or ""
            log.error("%s: %s: keeping the published output", name, watcher.failure)

    def stop(self) -> None:
        with self.lock:
            for watcher in self.watchers.values():
                watcher.stop()
            self.watchers.clear()
            self.unwatch_output()

    def unwatch_output(self) -> None:
        if self.output_watcher is not None:
            self.output_watcher.stop()
            self.output_watcher = None

    def check(self) -> None:
        """Restart any watcher that died or whose folder was replaced; notice a lost state
        folder and a missing output folder now, not at the next publish (scheduler job)."""
        with self.lock:
            self.check_watchers()
            watching = self.output_watcher
            if (
                watching is None or not watching.healthy()
            ) and self.state.config.site.output_dir.is_dir():
                self.watch_output()
        self.state.lost()
        output = self.state.config.site.output_dir
        missing = self.state.config.publish.s3 is None and not output.is_dir()
        if missing and not self.output_missing:
            self.state.error(f"output folder {output} is missing: publishing everything again")
            self.state.reconcile_all()
        self.output_missing = missing
        if not missing and self.state.state_lost is None:
            self._relock()

    def _relock(self) -> None:
        """Take the output folder's lock again if its file was deleted alone, before another
        process can; skipped while a publish runs (it makes sure of the lock itself)."""
        if not self.state.engine_lock.acquire(blocking=False):
            return
        try:
            self.state.engine.target.claim()
        except SitemapdError:
            pass  # another process took it: the next publish fails, saying which
        finally:
            self.state.engine_lock.release()

    def check_watchers(self) -> None:
        for name, watcher in list(self.watchers.items()):
            watcher.release_unclosed()
            if watcher.healthy():
                continue
            restarted = watcher.observer is not None
            if restarted:
                log.warning("%s: watcher stopped or its folder was replaced: restarting", name)
                watcher.stop()
            self.start_watcher(watcher, restarted)
