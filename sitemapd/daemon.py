"""`sitemapd run`: follow every change to the sources until told to stop.

Threads: watchdog observers only queue hints; one writer thread turns each burst of hints
into one ledger transaction and one publish; APScheduler jobs ask for reconciles and check
the watchers' health but never write; the main thread handles signals.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from . import config as config_module
from . import outbox, ownership, removals, w3c
from .changelog import notifies
from .changelog.walretention import SlotWatch
from .config import AccessLogSource, ChangelogSource, Config, DirectorySource, UrlListSource
from .engine import BuildResult, Engine
from .errors import ConfigError, Interrupted, SitemapdError, StateError
from .feedwindow import feed_file_page
from .lock import StateLock
from .metrics import Metrics
from .outbox import Courier
from .progress import LOG_EVERY, STATUS_EVERY, Progress, every_so_often, log_report
from .sidecar import Sidecar
from .sources import changelog
from .sources.accesslog import crawler_of
from .status import DAEMON_FILE
from .statusdata import LiveState
from .statuspage import StatusPage
from .store import atomic_write
from .systemd import Notifier
from .watch import OutputWatcher, Watcher
from .words import count

if TYPE_CHECKING:
    from apscheduler.schedulers.background import BackgroundScheduler

log = logging.getLogger(__name__)

_HEALTH_EVERY = 2.0  # seconds between watcher health checks
ROBOTS_WATCH = "robots.txt"  # the watcher of a robots.txt outside every source root
OUTPUT_WATCH = "output"  # the watcher of sitemapd's own names in the output folder
_MAX_BACKOFF = 60.0
REFRESH, OUTBOX = "refresh", "outbox"
# The lease was taken: adopt the published lastmods, then publish everything owed.
TAKEOVER = "takeover"
# Seconds between re-renders of what ages with time (news sitemaps, the feed window).
_REFRESH_EVERY = 60.0


@dataclass
class Batch:
    """Work taken from the queue at once: paths per source, and sources to rescan."""

    paths: dict[str, set[str]] = field(default_factory=dict)
    rescan: set[str] = field(default_factory=set)
    # Work that reads no source: REFRESH (re-render what time changes: news ageing,
    # the feed window), OUTBOX (record notification outcomes).
    tasks: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.paths or self.rescan or self.tasks)


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

    def add_task(self, task: str) -> None:
        """Queue work that reads no source (REFRESH, OUTBOX)."""
        with self._cond:
            self._batch.tasks.add(task)
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

    def __init__(self, config: Config, lock: StateLock) -> None:
        self.config = config
        self.lock = lock
        self.engine = Engine(config)
        self._ledger_file = _file_id(config.ledger_path)
        # Why the state folder is no longer ours (deleted, replaced): nothing is written then.
        self.state_lost: str | None = None
        self.queue = WorkQueue()
        self.stopping = threading.Event()
        self.reload_requested = threading.Event()
        # Held by the writer for each batch; a reload takes it to swap the engine.
        self.engine_lock = threading.Lock()
        self.watchers: dict[str, Watcher] = {}
        self.output_watcher: OutputWatcher | None = None
        # The failure last logged per watcher, so a lasting outage is logged once.
        self._reported: dict[str, str] = {}
        self.notifier = Notifier()
        self.ready = False
        self.batch_started: float | None = None
        # When the running batch last reported progress (monotonic).
        self.batch_moved = 0.0
        self.errors = 0
        # When the last batch that wrote a file ended, and the last error logged (with when).
        self.last_publish: str | None = None
        self.last_error: tuple[str, str] | None = None
        self._announced = False  # the log said "ready"
        self._output_missing = False
        self.reload_error: str | None = None
        self.key_rejected: str | None = None
        self.courier = Courier(config, lambda: self.queue.add_task(OUTBOX))
        self.metrics = Metrics(
            config.ledger_path,
            lambda: not self.problems(),
            self.queue.depth,
            self.courier.waiting,
            self.role,
            lambda: len(self.held),
            lambda: not self.stalls(),
        )
        # Change-log rows waiting, per source, measured after each read, and since when
        # (Unix time) some have been waiting.
        self.backlogs: dict[str, int] = {}
        self.slots = SlotWatch()
        self.waiting_since: dict[str, float] = {}
        # Per source, the Unix time of its last read without error.
        self.read_at: dict[str, float] = {}
        self.sidecar: Sidecar | None = None
        if config.http.listen:
            self.sidecar = Sidecar(
                config.http.listen,
                config.site.output_dir,
                config.http.serve_files,
                self.problems,
                self.metrics,
                config.ledger_path,
                self._served,
                self.role,
                StatusPage(lambda: self.config, self.live_state, config.ledger_path),
                self.stalls,
            )
        self.writer = threading.Thread(target=self._write_loop, name="sitemapd-writer")
        self._live = 0
        # Sources whose last read failed, with why, and how often in a row.
        self.failing: dict[str, str] = {}
        # Sources whose removal the mass-removal guard holds, with why.
        self.held: dict[str, str] = {}
        # Why the last batch failed, until one succeeds.
        self.batch_error: str | None = None
        self._retries: dict[str, int] = {}
        self._retry_timers: dict[str, threading.Timer] = {}
        # Files a read failed on for now (EMFILE, EIO...), per source, with why: retried.
        self.unreadable: dict[str, dict[str, str]] = {}
        self._file_retries: dict[str, int] = {}
        # Held while watchers are started or stopped (health job, reload, stop).
        self._watchers_lock = threading.RLock()
        self.terminate = threading.Event()
        self._wake = threading.Event()
        self._overflow = _OverflowListener(self)
        self._listeners: dict[str, threading.Thread] = {}
        # Feed fetches the sidecar served to crawlers, waiting for the writer.
        self._fetches: dict[tuple[str, int], str] = {}
        self._fetches_lock = threading.Lock()
        self._log_progress = every_so_often(log_report, LOG_EVERY)
        # Why the last lease renewal or take failed (the store unreachable), until one works.
        self.lease_error: str | None = None
        self._leasing: threading.Thread | None = None

    @functools.cached_property
    def scheduler(self) -> BackgroundScheduler:
        """Return the scheduler of reconciles, polls and health checks, made on first use:
        importing it reads every installed package's entry points, which the first
        publish need not wait for."""
        from apscheduler.schedulers.background import BackgroundScheduler

        return BackgroundScheduler(
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 30}
        )

    # Lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Watch, catch up with changes made while stopped, publish, then follow changes."""
        logging.getLogger("watchdog.observers.inotify_c").addHandler(self._overflow)
        if self.sidecar is not None:
            self.sidecar.start()
        # `sitemapd status` tells a daemon still starting from a process that is not one.
        self._save_health(self.status())
        self._start_watchers()
        scanning = threading.Event()
        threading.Thread(target=self._extend_start, args=(scanning,), daemon=True).start()
        written = 0
        self._tick_lease()
        try:
            first = self._update({}, self._source_names(), stop=self.terminate)
            written = len(first.report.written)
        except Interrupted as exc:
            # Rolled back: the next start scans again and loses nothing.
            log.info("stopped during the first scan (%s)", exc)
            return
        except (SitemapdError, OSError) as exc:
            self.errors += 1
            self.batch_error = str(exc)
            self._error(f"first publish failed ({exc}); retrying")
            self._reconcile_all()
        finally:
            scanning.set()
        self._notify()
        self.courier.start()
        self.writer.start()
        self._start_leasing()
        self._schedule()
        self.scheduler.start()
        self._start_listeners()
        self.ready = True
        if self.batch_error is None:
            self._announce(f"{written} files written at start")
        else:
            log.warning("started, not ready: nothing is published until a publish succeeds")
        self.notifier.ready(self.status())

    def _announce(self, detail: str) -> None:
        """Log "ready" once, after the first publish that worked."""
        if not self._announced:
            self._announced = True
            log.info("ready: %d URLs live; %s", self._live, detail)

    def role(self) -> str | None:
        """Return "publisher" or "standby" when daemons share the target, else None."""
        lease = self.engine.lease
        if lease is None:
            return None
        return "publisher" if lease.held else "standby"

    def _tick_lease(self) -> bool:
        """Renew or take the publisher lease; return True when it was just taken."""
        lease = self.engine.lease
        if lease is None:
            return False
        was = lease.held
        try:
            held = lease.tick()
        except SitemapdError as exc:
            if self.lease_error != str(exc):
                self._error(f"publisher lease: {exc}")
            self.lease_error = str(exc)
            return False
        self.lease_error = None
        return held and not was

    def _start_leasing(self) -> None:
        """Start the lease loop when the target is shared and it does not run (at start,
        and after a reload switched to a bucket: the loop ends with a local target)."""
        running = self._leasing is not None and self._leasing.is_alive()
        if self.engine.lease is not None and not running:
            self._leasing = threading.Thread(target=self._lease_loop, name="sitemapd-lease")
            self._leasing.start()

    def _lease_loop(self) -> None:
        """Renew the lease (or watch for it to lapse) several times per TTL."""
        while True:
            lease = self.engine.lease
            if lease is None or self.stopping.wait(lease.ttl / 6):
                return
            with self.engine_lock:  # a reload swaps the engine and its lease
                taken = self._tick_lease()
            if taken:
                log.info("now the publisher of %s", self.engine.publisher.store.where)
                self.queue.add_task(TAKEOVER)

    def _error(self, message: str) -> None:
        """Log an error and keep it for `sitemapd status`."""
        self.last_error = (w3c.now(), message)
        log.error("%s", message)

    def _extend_start(self, done: threading.Event) -> None:
        """Keep systemd's start timeout from firing while a long first scan runs."""
        while not done.wait(5.0):
            self.notifier.extend_timeout(30.0, "scanning sources before the first publish")

    def _update(
        self,
        paths: dict[str, set[str]],
        rescan: set[str],
        refresh: bool = False,
        stop: threading.Event | None = None,
    ) -> BuildResult:
        """Apply one batch under the engine lock and record it; `stop` interrupts it."""
        progress = Progress(self._progress, STATUS_EVERY, stop)
        state_dir = self.config.site.state_dir
        confirm = removals.confirmation_requested(state_dir)
        with self.engine_lock:
            self.batch_started = time.monotonic()
            try:
                result = self.engine.update(
                    paths,
                    rescan,
                    strict=False,
                    refresh=refresh,
                    confirm_removal=confirm,
                    progress=progress,
                )
                self._live = self.engine.ledger.live_count()
                self._measure_backlogs(result)
            finally:
                self.batch_started = None
        self.metrics.batch(result)
        if result.report.written:
            self.last_publish = w3c.now()
        for name in result.scanned:
            self.read_at[name] = time.time()
            self.failing.pop(name, None)
            self._retries.pop(name, None)
        for name, reason in result.failed.items():
            if self.failing.get(name) != reason:
                self.last_error = (w3c.now(), f"{name}: {reason}")
            self.failing[name] = reason
            self._retry_later(name)
        self._note_unreadable(paths, rescan, result.unreadable)
        for name, reason in result.held.items():
            if paths.get(name) and name not in rescan:
                # The source changed while held (the rsync goes on): a full scan decides
                # whether the removal still stands.
                self.queue.add_rescan(name)
            if self.held.get(name) != reason:
                # A full scan after the grace period publishes the removal if it persists.
                timer = threading.Timer(
                    self.config.site.removal_grace + 1.0, self.queue.add_rescan, args=(name,)
                )
                timer.daemon = True
                timer.start()
        self.held = result.held
        if confirm and not result.held:
            removals.confirmation_done(state_dir)
        return result

    def _note_unreadable(
        self, paths: dict[str, set[str]], rescan: set[str], found: dict[str, dict[str, str]]
    ) -> None:
        """Keep the files a batch could not read for now, forget those it read again, and
        read them again after a growing delay (no event may ever come for them)."""
        for name in self._source_names():
            asked = paths.get(name, set())
            if not (asked or name in rescan or name in found):
                continue  # this batch did not read it: its retry stays as it was
            known = self.unreadable.get(name, {})
            if name not in rescan:
                known = {
                    path: why
                    for path, why in known.items()
                    if not any(path == a or path.startswith(a + "/") or not a for a in asked)
                }
            known |= found.get(name, {})
            if known:
                self.unreadable[name] = known
                self._retry_later(name, set(known))
            else:
                self.unreadable.pop(name, None)
                self._file_retries.pop(name, None)

    def _progress(self, pages: int, rate: float) -> None:
        """Tell systemd how a long batch is going; log it every 10 s."""
        self.batch_moved = time.monotonic()
        self.notifier.send(STATUS=f"scanning: {pages} pages read ({rate:.0f}/s)")
        self._log_progress(pages, rate)

    def _measure_backlogs(self, result: BuildResult) -> None:
        """Note how far behind each change log read in this batch is; keep draining those
        behind, and reconcile those whose reconcile waited for the drain."""
        for source in self.config.sources:
            if not isinstance(source, ChangelogSource):
                continue
            name = source.name
            if name in result.deferred:
                self.queue.add_rescan(name)
            elif name in result.more:
                self.queue.add_paths(name, {""})
            if name not in result.more and name not in result.scanned:
                continue
            # Rows read may still leave rows waiting: PostgreSQL holds back those of
            # transactions that have not all ended (a long one anywhere holds them all).
            if (kept := self.slots.note(name, self.engine.reader(source))) is not None:
                self.metrics.retained_wal.labels(name).set(kept.bytes)
            cursor = self.engine.ledger.cursor(changelog.cursor_name(source))
            waiting = self.engine.reader(source).backlog(cursor)
            if waiting is None:
                continue
            self.backlogs[name] = waiting
            if waiting:
                self.waiting_since.setdefault(name, time.time())
            else:
                self.waiting_since.pop(name, None)
            self.metrics.backlog.labels(name).set(waiting)
            self.metrics.waiting_since.labels(name).set(self.waiting_since.get(name, 0.0))

    def _poll(self, name: str) -> None:
        """Read a polled source (scheduler job), unless it is failing: its retry will."""
        if name not in self.failing:
            self.queue.add_paths(name, {""})

    def _retry_later(self, name: str, files: set[str] | None = None) -> None:
        """Read a source that failed again, or only its `files`, after a growing delay
        (it may never send events)."""
        if name in self._retry_timers and self._retry_timers[name].is_alive():
            return  # one retry at a time: polls and events in between change nothing
        counts = self._retries if files is None else self._file_retries
        tries = counts[name] = counts.get(name, 0) + 1
        if files is None:
            delay = min(5.0 * 2 ** (tries - 1), 300.0)
            timer = threading.Timer(delay, self.queue.add_rescan, args=(name,))
        else:
            # A file read failing for now (EMFILE, EIO) is tried again sooner.
            delay = min(2.0 ** (tries - 1), _MAX_BACKOFF)
            timer = threading.Timer(delay, self.queue.add_paths, args=(name, files))
        self._retry_timers[name] = timer
        timer.daemon = True
        timer.start()

    # Health ------------------------------------------------------------------------

    def problems(self) -> list[str]:
        """Return why the daemon is unhealthy (for /healthz, STATUS, metrics): its own
        faults, then what is wrong outside it; empty while it is healthy."""
        found = self.faults()
        if self._output_missing:
            # As the health job last saw it: a probe never waits on the file system.
            found.append(f"output folder {self.config.site.output_dir} is missing")
        for name, reason in list(self.failing.items()):
            if name in self.watchers and not self.watchers[name].healthy():
                continue  # already named by its watcher
            found.append(f"{name}: last read failed: {reason}")
        for name, files in list(self.unreadable.items()):
            # Degraded: what was published stays; the read is tried again shortly.
            shown = [f"{path}: temporarily unreadable ({why})" for path, why in files.items()]
            more = f" and {len(shown) - 3} more files" if len(shown) > 3 else ""
            found.append(f"{name}: {'; '.join(shown[:3])}{more}; retrying")
        found += [f"{name}: {reason}" for name, reason in list(self.held.items())]
        for name, since in list(self.waiting_since.items()):
            if time.time() - since > self.config.daemon.max_lag:
                found.append(
                    f"{name}: {self.backlogs.get(name, 0)} change-log rows waiting since "
                    f"{w3c.format_epoch(since)} (a long-running database transaction holds "
                    "them back?)"
                )
        found += self.slots.problems()
        if self.key_rejected:
            found.append(f"indexnow: the key was refused: {self.key_rejected}")
        return found

    def live_state(self) -> LiveState:
        """Return what the status page shows of the daemon besides its ledger."""
        return LiveState(
            problems=self.problems(),
            faults=self.stalls(),
            role=self.role(),
            last_publish=self.last_publish,
            publish_error=self.batch_error,
            errors=self.errors,
            read_at=dict(self.read_at),
            failing=dict(self.failing),
            backlogs=dict(self.backlogs),
            waiting_since=dict(self.waiting_since),
            notifications_waiting=self.courier.waiting(),
            retrying=dict(self.courier.failing),
        )

    def faults(self) -> list[str]:
        """Return the problems of the daemon itself or its watchers; a database that is
        down or a refused IndexNow key is not one."""
        found = [] if self.ready else ["starting"]
        found += self.stalls()
        for name, watcher in list(self.watchers.items()):
            if not watcher.healthy() and not self._watcher_stalled(watcher):
                found.append(f"{name}: {watcher.failure or 'watcher stopped'}")
        if self.batch_error:
            found.append(f"publishing failed: {self.batch_error}")
        if self.lease_error:
            found.append(f"publisher lease: {self.lease_error}")
        return found

    def stalls(self) -> list[str]:
        """Return why the daemon's loops do not turn, which a restart may cure (for
        /livez and WATCHDOG=1); empty while they turn, whatever the state of the sources,
        the store or the content. Reads only the daemon's state: never blocks."""
        found = []
        if self.state_lost:
            found.append(f"{self.state_lost}: not writing; restart sitemapd to start over")
        for name, watcher in list(self.watchers.items()):
            if self._watcher_stalled(watcher):
                found.append(f"{name}: {watcher.failure or 'watcher stopped'}")
        if self.ready and not self.scheduler.running:
            found.append("scheduler stopped")
        if self.ready and not self.writer.is_alive():
            found.append("writer stopped")
        started = self.batch_started
        if started is not None:
            # A long first scan reports progress: only a batch that stopped moving is stuck.
            quiet = time.monotonic() - max(started, self.batch_moved)
            if quiet > self.config.daemon.stuck_after:
                found.append(f"writer stuck in one batch for {quiet:.0f}s")
        return found

    @staticmethod
    def _watcher_stalled(watcher: Watcher) -> bool:
        """True when a watcher is down and could not be started again on a folder that is
        there (a missing folder is an outage of the source)."""
        return not watcher.healthy() and watcher.failure is not None and not watcher.missing

    def status(self) -> str:
        """Return the one-line STATUS: figures, then any problem."""
        # Only what changes with the site: STATUS= is sent again whenever this line changes.
        role = self.role()
        parts = [
            *([role] if role else []),
            f"{count(self._live, 'URL')} live",
            f"last publish {self.last_publish or 'never'}",
            f"{self.errors} errors",
        ]
        for name, waiting in list(self.backlogs.items()):
            if waiting:
                parts.append(f"{name}: {waiting} change-log rows waiting")
        if self.courier.waiting():
            parts.append(f"{self.courier.waiting()} notifications waiting")
        for target, reason in list(self.courier.failing.items()):
            parts.append(f"{target} failing: {reason}")
        problems = self.problems()
        if problems:
            parts.append("UNHEALTHY: " + "; ".join(problems))
        if self.reload_error:
            parts.append(f"reload failed, running the previous configuration: {self.reload_error}")
        return ", ".join(parts)

    def _schedule(self) -> None:
        for job, seconds, name in (
            (self._reconcile_all, self.config.daemon.reconcile_interval, "reconcile"),
            (self.check_health, _HEALTH_EVERY, "health"),
            (self._rescan_confirmed, _HEALTH_EVERY, "confirm-removal"),
        ):
            self.scheduler.add_job(job, "interval", seconds=seconds, id=name, replace_existing=True)
        for job in self.scheduler.get_jobs():
            if job.id.startswith("poll:"):
                job.remove()
        for source in self.config.sources:
            if isinstance(source, ChangelogSource | AccessLogSource):
                # Change logs are polled (NOTIFY only wakes the poll early); access logs
                # grow too often to watch.
                self.scheduler.add_job(
                    self._poll,
                    "interval",
                    args=(source.name,),
                    seconds=source.poll_interval,
                    id=f"poll:{source.name}",
                    replace_existing=True,
                )
        if self.config.news or self.config.feed:
            self.scheduler.add_job(
                self.queue.add_task,
                "interval",
                args=(REFRESH,),
                seconds=_REFRESH_EVERY,
                id="refresh",
                replace_existing=True,
            )

    def stop(self) -> None:
        """Stop watching, finish and publish the pending batch, close the ledger."""
        log.info("stopping")
        self.notifier.send(STOPPING=1, STATUS="stopping: publishing the pending batch")
        if "scheduler" in vars(self) and self.scheduler.running:
            self.scheduler.shutdown(wait=True)
        self._stop_watchers()
        self.stopping.set()
        self.queue.wake()
        if self.writer.is_alive():
            self.writer.join()
        if self._leasing is not None and self._leasing.is_alive():
            self._leasing.join()
        self.courier.stop()
        # Outcomes that arrived after the writer's last look are recorded now: left
        # unrecorded, the next start would send them a second time.
        if not self._state_lost():
            with self.engine_lock:
                self._settle()
        logging.getLogger("watchdog.observers.inotify_c").removeHandler(self._overflow)
        if self.sidecar is not None:
            self.sidecar.stop()
        self.engine.close()
        self.notifier.close()

    def install_signal_handlers(self) -> None:
        """SIGTERM / SIGINT stop, SIGHUP reloads; call from the main thread before start()."""

        def on_stop(signum: int, frame: FrameType | None) -> None:
            self.terminate.set()
            self._wake.set()

        def on_hup(signum: int, frame: FrameType | None) -> None:
            self.reload_requested.set()
            self._wake.set()

        signal.signal(signal.SIGTERM, on_stop)
        signal.signal(signal.SIGINT, on_stop)
        signal.signal(signal.SIGHUP, on_hup)

    def serve_forever(self) -> None:
        """Handle reload requests until told to stop; health pings run in their own thread."""
        threading.Thread(target=self._supervise, name="sitemapd-notify", daemon=True).start()
        while not self.terminate.is_set():
            self._wake.wait(1.0)
            self._wake.clear()
            if self.reload_requested.is_set() and not self.terminate.is_set():
                self.reload_requested.clear()
                self.notifier.reloading()
                self.reload()
                self.notifier.send(READY=1, STATUS=self.status())

    def _supervise(self) -> None:
        """Send WATCHDOG=1 every watchdog interval while healthy and STATUS when it changes
        (also written for `sitemapd status`), until stopping."""
        interval = self.notifier.watchdog_interval
        ping_at = time.monotonic() + (interval or 0.0)
        last_status = ""
        last_saved: tuple[str, tuple[str, str] | None] = ("", None)
        while True:
            # Wake every second for STATUS, and when WATCHDOG=1 is due.
            wait = 1.0 if interval is None else min(1.0, max(0.0, ping_at - time.monotonic()))
            if self.stopping.wait(wait):
                return
            if interval is not None and time.monotonic() >= ping_at:
                # WATCHDOG=1 only while the loops turn (as /livez): a stuck daemon gets
                # restarted, one whose sources or store are down does not.
                healthy = not self.stalls()
                if healthy:
                    self.notifier.send(WATCHDOG=1)
                # Unhealthy: look again soon, so that a recovery pings before the deadline.
                ping_at = time.monotonic() + (interval if healthy else min(1.0, interval))
            status = self.status()
            if status != last_status:
                self.notifier.send(STATUS=status)
            if (status, self.last_error) != last_saved:
                self._save_health(status)
            last_status, last_saved = status, (status, self.last_error)

    def _save_health(self, status: str) -> None:
        """Write the daemon's health into the state folder, for `sitemapd status`."""
        if self._state_lost():
            return  # the folder is no longer ours to write
        problems = self.problems()
        report = {
            "pid": os.getpid(),
            "role": self.role(),
            "healthy": not problems,
            "problems": problems,
            "status": status,
            "last_error": self.last_error and self.last_error[1],
            "last_error_at": self.last_error and self.last_error[0],
        }
        path = self.config.site.state_dir / DAEMON_FILE
        try:
            atomic_write(path, json.dumps(report, indent=2).encode())
        except SitemapdError as exc:
            log.warning("cannot save the health report: %s", exc)

    # Work --------------------------------------------------------------------------

    def _source_names(self) -> set[str]:
        return {source.name for source in self.config.sources}

    def _rescan_confirmed(self) -> None:
        """Rescan the sources whose removal is held once `build --confirm-removal` asked
        for it (the rescan confirms, then withdraws the request)."""
        if self.held and removals.confirmation_requested(self.config.site.state_dir):
            for name in list(self.held):
                self.queue.add_rescan(name)

    def _reconcile_all(self) -> None:
        for name in self._source_names():
            self.queue.add_rescan(name)

    def overflowed(self) -> None:
        """The kernel dropped events: only a full reconcile can tell what changed."""
        log.warning("events were lost (inotify queue overflow): reconciling")
        for source in self.config.sources:
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
            if self._state_lost():
                # Another process may hold a fresh lock and ledger there now: one writer.
                log.error("not writing: %s", self.state_lost)
                continue
            try:
                with self.engine_lock:  # a reload swaps the engine and its ledger
                    self._take_fetches()
                if TAKEOVER in batch.tasks:
                    self.engine.adopting = True
                refresh = bool({REFRESH, TAKEOVER} & batch.tasks)
                if OUTPUT_WATCH in batch.rescan:
                    batch.rescan.discard(OUTPUT_WATCH)
                    refresh = self._output_damaged() or refresh
                if batch.paths or batch.rescan or refresh:
                    result = self._update(batch.paths, batch.rescan, refresh)
                    if result.report.written or batch.rescan:  # a rescan always publishes
                        self._announce(f"{len(result.report.written)} files written")
                with self.engine_lock:
                    self._notify()
                failures = 0
                self.batch_error = None
            except Exception as exc:
                failures += 1
                self.errors += 1
                self.batch_error = str(exc) or type(exc).__name__
                self.metrics.batch_failures.inc()
                delay = min(2.0**failures, _MAX_BACKOFF)
                # Our own errors and the system's (a full or read-only disk) say what is
                # wrong in one line; anything else is a bug.
                message = f"batch failed ({exc}); reconciling its sources in {delay:.0f}s"
                self.last_error = (w3c.now(), message)
                bug = not isinstance(exc, SitemapdError | OSError)
                log.log(logging.ERROR, message, exc_info=bug)
                for name in batch.paths.keys() | batch.rescan:
                    self.queue.add_rescan(name)
                for task in batch.tasks:
                    self.queue.add_task(task)
                if self.stopping.wait(delay):
                    return

    # Watchers ----------------------------------------------------------------------

    def _notify(self) -> None:
        """Record finished notifications and hand the courier what is owed (writer only)."""
        self._settle()
        ledger = self.engine.ledger
        self.key_rejected = ledger.cursor(outbox.KEY_REJECTED) or None
        self.courier.offer(outbox.pending(ledger, self.config))

    def _settle(self) -> None:
        """Record the outcomes the courier has finished, if any (under the engine lock)."""
        results = self.courier.results()
        if not results:
            return
        for delivery, outcome in results:
            self.metrics.notifications.labels(delivery.kind, outcome.kind).inc()
        outbox.settle(self.engine.ledger, results)

    def _served(self, name: str, status: int, user_agent: str) -> None:
        """Note a feed the sidecar served, when a crawler fetched it (sidecar threads)."""
        feed = self.config.feed
        if feed is None or not (200 <= status < 300 or status == 304):
            return
        page = feed_file_page(feed, name)
        crawler = crawler_of(user_agent, self.config.crawlers)
        if page is not None and crawler is not None:
            with self._fetches_lock:
                self._fetches[crawler, page] = w3c.now()
            self.queue.add_task(REFRESH)

    def _take_fetches(self) -> None:
        with self._fetches_lock:
            fetches, self._fetches = self._fetches, {}
        if fetches:
            self.engine.ledger.record_crawls(fetches, [], {})

    def _start_listeners(self) -> None:
        """Wake the poll of each change log that can notify (PostgreSQL LISTEN)."""
        for source in self.config.sources:
            if (
                isinstance(source, ChangelogSource)
                and notifies(source.spec)
                and source.name not in self._listeners
            ):
                thread = threading.Thread(
                    target=self._listen, args=(source,), name=f"listen:{source.name}", daemon=True
                )
                self._listeners[source.name] = thread
                thread.start()

    def _listen(self, source: ChangelogSource) -> None:
        while not self.stopping.is_set():
            # The engine's own config: after a reload, the reader must follow the new
            # table, query and channel, whatever this thread was started with.
            engine = self.engine
            current = next((s for s in engine.config.sources if s.name == source.name), None)
            if not isinstance(current, ChangelogSource) or not notifies(current.spec):
                break  # removed or changed by a reload
            try:
                woken = engine.reader(current).wait(1.0)
            except SitemapdError:
                woken = False
                self.stopping.wait(self.config.daemon.debounce + 1.0)
            if woken:
                self.queue.add_paths(source.name, {""})
        self._listeners.pop(source.name, None)

    def _start_watchers(self) -> None:
        site = self.config.site
        skip = site.not_content
        watched: list[DirectorySource | UrlListSource] = [
            s for s in self.config.sources if isinstance(s, DirectorySource | UrlListSource)
        ]
        robots_txt = site.robots_txt
        roots = [s.root for s in self.config.sources if isinstance(s, DirectorySource)]
        if robots_txt is not None and not any(robots_txt.is_relative_to(r) for r in roots):
            # Any batch re-reads robots.txt; this makes its edits one.
            watched.append(UrlListSource(name=ROBOTS_WATCH, path=robots_txt))
        for source in watched:
            watcher = Watcher(source, skip, self.queue.add_paths, self.queue.add_rescan)
            self.watchers[source.name] = watcher
            self._start_watcher(watcher)
        if self.config.publish.s3 is None:
            with contextlib.suppress(OSError):  # not a folder: the publish reports it
                self.config.site.output_dir.mkdir(parents=True, exist_ok=True)
        self._watch_output()

    def _watch_output(self) -> None:
        """Watch the output folder for sitemapd's own names (none with an S3 target). Its
        health is the output folder's, reported as such: a missing folder is no fault of
        the daemon's, and this watcher is started again once the folder is back."""
        self._unwatch_output()
        if self.config.publish.s3 is not None:
            return
        names = self.engine.publisher.names
        watcher = OutputWatcher(
            OUTPUT_WATCH, self.config.site.output_dir, names.is_output, self.queue.add_rescan
        )
        if watcher.start():
            self.output_watcher = watcher
            # What happened while it was not watched.
            self.queue.add_rescan(OUTPUT_WATCH)

    def _start_watcher(self, watcher: Watcher, restarted: bool = False) -> None:
        name = watcher.source.name
        if watcher.start():
            if restarted or name in self._reported:
                self._reported.pop(name, None)
                log.warning("%s: watching %s again: reconciling", name, watcher.folder)
                self.queue.add_rescan(name)
        elif watcher.failure != self._reported.get(name):
            self._reported[name] = watcher.failure or ""
            log.error("%s: %s: keeping the published output", name, watcher.failure)

    def _stop_watchers(self) -> None:
        with self._watchers_lock:
            for watcher in self.watchers.values():
                watcher.stop()
            self.watchers.clear()
            self._unwatch_output()

    def _unwatch_output(self) -> None:
        if self.output_watcher is not None:
            self.output_watcher.stop()
            self.output_watcher = None

    def check_health(self) -> None:
        """Restart any watcher that died or whose folder was replaced; notice a lost state
        folder and a missing output folder now, not at the next publish (scheduler job)."""
        with self._watchers_lock:
            self._check_watchers()
            watching = self.output_watcher
            if (
                watching is None or not watching.healthy()
            ) and self.config.site.output_dir.is_dir():
                self._watch_output()
        self._state_lost()
        output = self.config.site.output_dir
        missing = self.config.publish.s3 is None and not output.is_dir()
        if missing and not self._output_missing:
            self._error(f"output folder {output} is missing: publishing everything again")
            self._reconcile_all()
        self._output_missing = missing

    def _output_damaged(self) -> bool:
        """Return True, logging which, when files published into the output folder were
        replaced or deleted by another writer since (the next publish restores them)."""
        with self.engine_lock:
            publisher = self.engine.publisher
            damaged = publisher.damaged()
        for name in damaged:
            log.warning(
                "%s was replaced or deleted under sitemapd: republishing", publisher.out / name
            )
        return bool(damaged)

    def _state_lost(self) -> str | None:
        """Return why the state folder is no longer this daemon's, noticing it once."""
        if self.state_lost is None:
            why = self.lock.lost()
            if why is None and _file_id(self.config.ledger_path) != self._ledger_file:
                why = f"the ledger {self.config.ledger_path} was deleted or replaced while running"
            if why is not None:
                self.state_lost = why
                self._error(f"{why}: not writing any more; restart sitemapd to start over")
        return self.state_lost

    def _check_watchers(self) -> None:
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
            if self._state_lost():
                raise StateError(f"{self.state_lost}; restart sitemapd to start over")
            new = config_module.load(self.config.path)
            if new.site.state_dir != self.config.site.state_dir:
                raise ConfigError("site.state_dir cannot change while running; restart instead")
            with self.engine_lock:  # new names may be another writer's files
                ownership.claim(new, self.engine.ledger.published)
        except SitemapdError as exc:
            log.error("reload failed, keeping the running configuration: %s", exc)
            self.reload_error = str(exc)
            return False
        self.reload_error = None
        if new.http.listen != self.config.http.listen:
            log.warning("http.listen changes take effect at the next restart")
        if self.sidecar is not None:
            self.sidecar.server.output_dir = new.site.output_dir
            self.sidecar.server.serve_files = new.http.serve_files
        with self._watchers_lock, self.engine_lock:
            self._stop_watchers()
            self.engine.close()
            self.config = new
            self.engine = Engine(new)
            self.courier.config = new
            self._start_watchers()
        self._start_listeners()
        self._start_leasing()
        self._schedule()
        self._reconcile_all()
        log.info("reloaded")
        return True


def _file_id(path: Path) -> tuple[int, int] | None:
    """Return the (device, inode) of the file at `path`, None when there is none."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_dev, status.st_ino
