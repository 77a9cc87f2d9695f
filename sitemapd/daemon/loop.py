"""The daemon's batch loop: one writer thread turns each burst of hints into one ledger
transaction and one publish, retries what failed and hands notifications to the courier."""

from __future__ import annotations

import threading
import time

from sitemapd.changelog.walretention import SlotWatch
from sitemapd.config.sources import ChangelogSource
from sitemapd.core import logs, w3c
from sitemapd.daemon.state import DaemonState
from sitemapd.daemon.watching import OUTPUT_WATCH
from sitemapd.daemon.workqueue import REFRESH, TAKEOVER
from sitemapd.engine.engine import BuildResult
from sitemapd.engine.progress import LOG_EVERY, STATUS_EVERY, Progress, every_so_often, log_report
from sitemapd.errors import SitemapdError
from sitemapd.ledger import removals
from sitemapd.notify import outbox

log = logs.Logger("sitemapd.daemon")

_MAX_BACKOFF = 60.0


class BatchLoop:
    """The writer: the only thread that applies batches to the ledger and publishes."""

    def __init__(self, state: DaemonState) -> None:
        self.state = state
        self.writer = threading.Thread(target=self.run, name="sitemapd-writer")
        self.batch_started: float | None = None
        # When the running batch last reported progress (monotonic).
        self.batch_moved = 0.0
        # Why the last batch failed, until one succeeds.
        self.batch_error: str | None = None
        # When the last batch that wrote a file ended.
        self.last_publish: str | None = None
        self.live = 0
        self._announced = False  # the log said "ready"
        self.key_rejected: str | None = None
        # Change-log rows waiting, per source, measured after each read, and since when
        # (Unix time) some have been waiting.
        self.backlogs: dict[str, int] = {}
        # The WAL each logical slot keeps, measured now and then.
        self.slots = SlotWatch()
        self.waiting_since: dict[str, float] = {}
        # Per source, the Unix time of its last read without error.
        self.read_at: dict[str, float] = {}
        # Sources whose last read failed, with why, and how often in a row.
        self.failing: dict[str, str] = {}
        # Sources whose removal the mass-removal guard holds, with why.
        self.held: dict[str, str] = {}
        self._retries: dict[str, int] = {}
        self._retry_timers: dict[str, threading.Timer] = {}
        # Files a read failed on for now (EMFILE, EIO...), per source, with why: retried.
        self.unreadable: dict[str, dict[str, str]] = {}
        self._file_retries: dict[str, int] = {}
        # Feed fetches the sidecar served to crawlers, waiting for the writer.
        self._fetches: dict[tuple[str, int], str] = {}
        self._fetches_lock = threading.Lock()
        self._log_progress = every_so_often(log_report, LOG_EVERY)

    def announce(self, detail: str) -> None:
        """Log "ready" once, after the first publish that worked."""
        if not self._announced:
            self._announced = True
            log.info("ready: %d URLs live; %s", self.live, detail)

    def update(
        self,
        paths: dict[str, set[str]],
        rescan: set[str],
        refresh: bool = False,
        stop: threading.Event | None = None,
    ) -> BuildResult:
        """Apply one batch under the engine lock and record it; `stop` interrupts it."""
        progress = Progress(self.progress, STATUS_EVERY, stop)
        state_dir = self.state.config.site.state_dir
        confirm = removals.confirmation_requested(state_dir)
        with self.state.engine_lock:
            self.batch_started = time.monotonic()
            try:
                result = self.state.engine.update(
                    paths,
                    rescan,
                    strict=False,
                    refresh=refresh,
                    confirm_removal=confirm,
                    progress=progress,
                )
                self.live = self.state.engine.ledger.live_count()
                self.measure_backlogs(result)
            finally:
                self.batch_started = None
        self.state.metrics.batch(result)
        if result.report.written:
            self.last_publish = w3c.now()
        for name in result.scanned:
            self.read_at[name] = time.time()
            self.failing.pop(name, None)
            self._retries.pop(name, None)
        for name, reason in result.failed.items():
            if self.failing.get(name) != reason:
                self.state.last_error = (w3c.now(), f"{name}: {reason}")
            self.failing[name] = reason
            self.retry_later(name)
        self.note_unreadable(paths, rescan, result.unreadable)
        for name, reason in result.held.items():
            if paths.get(name) and name not in rescan:
                # The source changed while held (the rsync goes on): a full scan decides
                # whether the removal still stands.
                self.state.queue.add_rescan(name)
            if self.held.get(name) != reason:
                # A full scan after the grace period publishes the removal if it persists.
                timer = threading.Timer(
                    self.state.config.site.removal_grace + 1.0,
                    self.state.queue.add_rescan,
                    args=(name,),
                )
                timer.daemon = True
                timer.start()
        self.held = result.held
        if confirm and not result.held:
            removals.confirmation_done(state_dir)
        return result

    def note_unreadable(
        self, paths: dict[str, set[str]], rescan: set[str], found: dict[str, dict[str, str]]
    ) -> None:
        """Keep the files a batch could not read for now, forget those it read again, and
        read them again after a growing delay (no event may ever come for them)."""
        for name in self.state.source_names():
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
                self.retry_later(name, set(known))
            else:
                self.unreadable.pop(name, None)
                self._file_retries.pop(name, None)

    def progress(self, pages: int, rate: float) -> None:
        """Tell systemd how a long batch is going; log it every 10 s."""
        self.batch_moved = time.monotonic()
        self.state.notifier.send(STATUS=f"scanning: {pages} pages read ({rate:.0f}/s)")
        self._log_progress(pages, rate)

    def measure_backlogs(self, result: BuildResult) -> None:
        """Note how far behind each change log read in this batch is; keep draining those
        behind, and reconcile those whose reconcile waited for the drain."""
        for source in self.state.config.sources:
            if not isinstance(source, ChangelogSource):
                continue
            from sitemapd.sources import changelog  # change-log sites only

            name = source.name
            if name in result.deferred:
                self.state.queue.add_rescan(name)
            elif name in result.more:
                self.state.queue.add_paths(name, {""})
            if name not in result.more and name not in result.scanned:
                continue
            # Rows read may still leave rows waiting: PostgreSQL holds back those of
            # transactions that have not all ended (a long one anywhere holds them all).
            reader = self.state.engine.reader(source)
            if (kept := self.slots.note(name, reader)) is not None:
                self.state.metrics.retained_wal(name, kept.bytes)
            cursor = self.state.engine.ledger.cursor(changelog.cursor_name(source))
            waiting = reader.backlog(cursor)
            if waiting is None:
                continue
            self.backlogs[name] = waiting
            if waiting:
                self.waiting_since.setdefault(name, time.time())
            else:
                self.waiting_since.pop(name, None)
            self.state.metrics.changelog_backlog(name, waiting, self.waiting_since.get(name, 0.0))

    def poll(self, name: str) -> None:
        """Read a polled source (scheduler job), unless it is failing: its retry will."""
        if name not in self.failing:
            self.state.queue.add_paths(name, {""})

    def retry_later(self, name: str, files: set[str] | None = None) -> None:
        """Read a source that failed again, or only its `files`, after a growing delay
        (it may never send events)."""
        if name in self._retry_timers and self._retry_timers[name].is_alive():
            return  # one retry at a time: polls and events in between change nothing
        counts = self._retries if files is None else self._file_retries
        tries = counts[name] = counts.get(name, 0) + 1
        if files is None:
            delay = min(5.0 * 2 ** (tries - 1), 300.0)
            timer = threading.Timer(delay, self.state.queue.add_rescan, args=(name,))
        else:
            # A file read failing for now (EMFILE, EIO) is tried again sooner.
            delay = min(2.0 ** (tries - 1), _MAX_BACKOFF)
            timer = threading.Timer(delay, self.state.queue.add_paths, args=(name, files))
        self._retry_timers[name] = timer
        timer.daemon = True
        timer.start()

    def rescan_confirmed(self) -> None:
        """Rescan the sources whose removal is held once `build --confirm-removal` asked
        for it (the rescan confirms, then withdraws the request)."""
        if self.held and removals.confirmation_requested(self.state.config.site.state_dir):
            for name in list(self.held):
                self.state.queue.add_rescan(name)

    def run(self) -> None:
        failures = 0
        while True:
            batch = self.state.queue.take(
                self.state.config.daemon.debounce,
                self.state.config.daemon.max_delay,
                self.state.stopping,
            )
            if not batch:
                if self.state.stopping.is_set():
                    return
                continue
            if self.state.lost():
                # Another process may hold a fresh lock and ledger there now: one writer.
                log.error("not writing: %s", self.state.state_lost)
                continue
            try:
                with self.state.engine_lock:  # a reload swaps the engine and its ledger
                    self.take_fetches()
                if TAKEOVER in batch.tasks:
                    self.state.engine.adopting = True
                refresh = bool({REFRESH, TAKEOVER} & batch.tasks)
                if OUTPUT_WATCH in batch.rescan:
                    batch.rescan.discard(OUTPUT_WATCH)
                    refresh = self.output_damaged() or refresh
                written = None
                if batch.paths or batch.rescan or refresh:
                    result = self.update(batch.paths, batch.rescan, refresh)
                    if result.report.written or batch.rescan:  # a rescan always publishes
                        written = len(result.report.written)
                with self.state.engine_lock:
                    self.notify()
                failures = 0
                self.batch_error = None
                # Not while the daemon is still starting (its start says "ready" itself when
                # this batch_error is None): the log's "ready" is /readyz's.
                if written is not None and self.state.ready:
                    self.announce(f"{written} files written")
            except Exception as exc:
                failures += 1
                self.state.errors += 1
                self.batch_error = str(exc) or type(exc).__name__
                self.state.metrics.batch_failed()
                delay = min(2.0**failures, _MAX_BACKOFF)
                # Our own errors and the system's (a full or read-only disk) say what is
                # wrong in one line; anything else is a bug.
                message = f"batch failed ({exc}); reconciling its sources in {delay:.0f}s"
                self.state.last_error = (w3c.now(), message)
                bug = not isinstance(exc, SitemapdError | OSError)
                log.log(logs.ERROR, message, exc_info=bug)
                for name in batch.paths.keys() | batch.rescan:
                    self.state.queue.add_rescan(name)
                for task in batch.tasks:
                    self.state.queue.add_task(task)
                if self.state.stopping.wait(delay):
                    return

    def notify(self) -> None:
        """Record finished notifications and hand the courier what is owed (writer only)."""
        self.settle()
        ledger = self.state.engine.ledger
        self.key_rejected = ledger.cursor(outbox.KEY_REJECTED) or None
        self.state.courier.offer(outbox.pending(ledger, self.state.config))

    def settle(self) -> None:
        """Record the outcomes the courier has finished, if any (under the engine lock)."""
        results = self.state.courier.results()
        if not results:
            return
        for delivery, outcome in results:
            self.state.metrics.notification(delivery.kind, outcome.kind)
        outbox.settle(self.state.engine.ledger, results)

    def served(self, name: str, status: int, user_agent: str) -> None:
        """Note a feed the sidecar served, when a crawler fetched it (sidecar threads)."""
        feed = self.state.config.feed
        if feed is None or not (200 <= status < 300 or status == 304):
            return
        # Sites with feeds and a sidecar only.
        from sitemapd.publish.feedwindow import feed_file_page
        from sitemapd.sources.accesslog import crawler_of

        page = feed_file_page(feed, name)
        crawler = crawler_of(user_agent, self.state.config.crawlers)
        if page is not None and crawler is not None:
            with self._fetches_lock:
                self._fetches[crawler, page] = w3c.now()
            self.state.queue.add_task(REFRESH)

    def take_fetches(self) -> None:
        with self._fetches_lock:
            fetches, self._fetches = self._fetches, {}
        if fetches:
            self.state.engine.ledger.record_crawls(fetches, [], {})

    def output_damaged(self) -> bool:
        """Return True, logging which, when files published into the output folder were
        replaced or deleted by another writer since (the next publish restores them)."""
        with self.state.engine_lock:
            publisher = self.state.engine.publisher
            damaged = publisher.damaged()
        for name in damaged:
            log.warning(
                "%s was replaced or deleted under sitemapd: republishing", publisher.out / name
            )
        return bool(damaged)
