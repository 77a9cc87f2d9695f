"""`sitemapd run`: follow every change to the sources until told to stop.

Threads: watchdog observers only queue hints; one writer thread turns each burst of hints
into one ledger transaction and one publish; APScheduler jobs ask for reconciles and check
the watchers' health but never write; the main thread handles signals.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass, field
from types import FrameType

from apscheduler.schedulers.background import BackgroundScheduler

from . import config as config_module
from .config import Config, DirectorySource
from .engine import Engine
from .errors import ConfigError
from .watch import Watcher

log = logging.getLogger(__name__)

_HEALTH_EVERY = 2.0  # seconds between watcher health checks
_MAX_BACKOFF = 60.0


@dataclass
class Batch:
    """Work taken from the queue at once: paths per source, and sources to rescan."""

    paths: dict[str, set[str]] = field(default_factory=dict)
    rescan: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.paths or self.rescan)


class WorkQueue:
    """Hints from watchers and jobs, released as one batch after a quiet period."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._batch = Batch()
        self._first = self._last = 0.0

    def add_paths(self, source: str, relpaths: set[str]) -> None:
        """Queue paths of `source` to re-read."""
        with self._cond:
            self._batch.paths.setdefault(source, set()).update(relpaths)
            self._arrived()

    def add_rescan(self, source: str) -> None:
        """Queue a full reconcile of `source`."""
        with self._cond:
            self._batch.rescan.add(source)
            self._arrived()

    def _arrived(self) -> None:
        now = time.monotonic()
        self._first = self._first or now
        self._last = now
        self._cond.notify_all()

    def depth(self) -> int:
        """Return how many paths and rescans wait."""
        with self._cond:
            return sum(map(len, self._batch.paths.values())) + len(self._batch.rescan)

    def take(self, debounce: float, max_delay: float, stop: threading.Event) -> Batch:
        """Wait for work, then for `debounce` s of quiet (at most `max_delay` s); take it.

        Returns an empty batch once `stop` is set and nothing waits; while stopping,
        waiting work is taken at once.
        """
        with self._cond:
            while not self._batch and not stop.is_set():
                self._cond.wait(0.5)
            while self._batch and not stop.is_set():
                now = time.monotonic()
                quiet, age = now - self._last, now - self._first
                if quiet >= debounce or age >= max_delay:
                    break
                self._cond.wait(min(debounce - quiet, max_delay - age))
            batch, self._batch = self._batch, Batch()
            self._first = self._last = 0.0
            return batch

    def wake(self) -> None:
        """Wake a waiting `take()` (to notice `stop`)."""
        with self._cond:
            self._cond.notify_all()


class _OverflowListener(logging.Handler):
    """Turns watchdog's log of an inotify queue overflow into a reconcile.

    watchdog 7 tells only its logger when the kernel dropped events.
    """

    def __init__(self, daemon: Daemon) -> None:
        super().__init__(logging.WARNING)
        self.daemon = daemon

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage():
            self.daemon.overflowed()


class Daemon:
    """One site's watchers, writer and scheduler around a shared Engine."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.engine = Engine(config)
        self.queue = WorkQueue()
        self.stopping = threading.Event()
        self.reload_requested = threading.Event()
        # Held by the writer for each batch; a reload takes it to swap the engine.
        self.engine_lock = threading.Lock()
        self.watchers: dict[str, Watcher] = {}
        self._missing: set[str] = set()
        self.scheduler = BackgroundScheduler(
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 30}
        )
        self.writer = threading.Thread(target=self._write_loop, name="sitemapd-writer")
        self._overflow = _OverflowListener(self)

    # Lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Watch, catch up with changes made while stopped, publish, then follow changes."""
        logging.getLogger("watchdog.observers.inotify_c").addHandler(self._overflow)
        self._start_watchers()
        result = self.engine.update({}, self._source_names(), strict=False)
        self.writer.start()
        self._schedule()
        self.scheduler.start()
        live = self.engine.ledger.live_count()
        log.info("ready: %d URLs live; %d files written at start", live, len(result.report.written))

    def _schedule(self) -> None:
        self.scheduler.add_job(
            self._reconcile_all,
            "interval",
            seconds=self.config.daemon.reconcile_interval,
            id="reconcile",
            replace_existing=True,
        )
        self.scheduler.add_job(
            self.check_watchers,
            "interval",
            seconds=_HEALTH_EVERY,
            id="health",
            replace_existing=True,
        )

    def stop(self) -> None:
        """Stop watching, finish and publish the pending batch, close the ledger."""
        log.info("stopping")
        if self.scheduler.running:
            self.scheduler.shutdown(wait=True)
        self._stop_watchers()
        self.stopping.set()
        self.queue.wake()
        self.writer.join()
        logging.getLogger("watchdog.observers.inotify_c").removeHandler(self._overflow)
        self.engine.close()

    def serve_forever(self) -> None:
        """Run until SIGTERM or SIGINT; SIGHUP reloads the configuration."""
        stop = threading.Event()

        def on_stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        def on_hup(signum: int, frame: FrameType | None) -> None:
            self.reload_requested.set()
            stop.set()  # wake the wait below

        signal.signal(signal.SIGTERM, on_stop)
        signal.signal(signal.SIGINT, on_stop)
        signal.signal(signal.SIGHUP, on_hup)
        while True:
            stop.wait(1.0)
            if self.reload_requested.is_set():
                self.reload_requested.clear()
                stop.clear()
                self.reload()
                continue
            if stop.is_set():
                return

    # Work --------------------------------------------------------------------------

    def _source_names(self) -> set[str]:
        return {source.name for source in self.config.sources}

    def _reconcile_all(self) -> None:
        for name in self._source_names():
            self.queue.add_rescan(name)

    def overflowed(self) -> None:
        """The kernel dropped events: only a full reconcile can tell what changed."""
        log.warning("events were lost (inotify queue overflow): reconciling")
        for source in self.config.sources:
            if isinstance(source, DirectorySource):
                self.queue.add_rescan(source.name)

    def _write_loop(self) -> None:
        failures = 0
        while True:
            batch = self.queue.take(
                self.config.daemon.debounce, self.config.daemon.max_delay, self.stopping
            )
            if not batch:
                if self.stopping.is_set():
                    return
                continue
            try:
                with self.engine_lock:
                    self.engine.update(batch.paths, batch.rescan, strict=False)
                failures = 0
            except Exception:
                failures += 1
                delay = min(2.0**failures, _MAX_BACKOFF)
                log.exception("batch failed; reconciling its sources in %.0fs", delay)
                for name in batch.paths.keys() | batch.rescan:
                    self.queue.add_rescan(name)
                if self.stopping.wait(delay):
                    return

    # Watchers ----------------------------------------------------------------------

    def _start_watchers(self) -> None:
        site = self.config.site
        skip = (str(site.output_dir), str(site.state_dir))
        for source in self.config.sources:
            watcher = Watcher(source, skip, self.queue.add_paths, self.queue.add_rescan)
            self.watchers[source.name] = watcher
            self._start_watcher(watcher)

    def _start_watcher(self, watcher: Watcher, restarted: bool = False) -> None:
        name = watcher.source.name
        if watcher.start():
            if restarted or name in self._missing:
                self._missing.discard(name)
                log.warning("%s: watching %s again: reconciling", name, watcher.folder)
                self.queue.add_rescan(name)
        elif name not in self._missing:
            self._missing.add(name)
            log.error(
                "%s: %s is missing: keeping the published output until it returns",
                name,
                watcher.folder,
            )

    def _stop_watchers(self) -> None:
        for watcher in self.watchers.values():
            watcher.stop()
        self.watchers.clear()

    def check_watchers(self) -> None:
        """Restart any watcher that died or whose folder was replaced (scheduler job)."""
        for name, watcher in list(self.watchers.items()):
            if watcher.healthy():
                continue
            restarted = watcher.observer is not None
            if restarted:
                log.warning("%s: watcher stopped or its folder was replaced: restarting", name)
                watcher.stop()
            self._start_watcher(watcher, restarted)

    # Reload ------------------------------------------------------------------------

    def reload(self) -> bool:
        """Re-read the config file; on any error keep running the old one. Return success."""
        log.info("reloading %s", self.config.path)
        try:
            new = config_module.load(self.config.path)
        except ConfigError as exc:
            log.error("reload failed, keeping the running configuration: %s", exc)
            return False
        if new.site.state_dir != self.config.site.state_dir:
            log.error("reload failed: state_dir cannot change while running; restart instead")
            return False
        with self.engine_lock:
            self._stop_watchers()
            self.engine.close()
            self.config = new
            self.engine = Engine(new)
            self._start_watchers()
        self._schedule()
        self._reconcile_all()
        log.info("reloaded")
        return True
