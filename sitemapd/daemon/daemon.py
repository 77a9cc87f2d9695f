"""`sitemapd run`: follow every change to the sources until told to stop.

Threads: watchdog observers only queue hints; one writer thread (the batch loop) turns
each burst of hints into one ledger transaction and one publish; APScheduler jobs ask
for reconciles and check the watchers' health but never write; the main thread handles
signals and reloads. `Daemon` composes the parts: its batch loop, its role in a fleet,
its watchers and its health, around the state they share.
"""

from __future__ import annotations

import functools
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING

from sitemapd import config as config_module
from sitemapd.config import Config
from sitemapd.config.sources import AccessLogSource, ChangelogSource
from sitemapd.core import logs
from sitemapd.daemon.fleet import Fleet
from sitemapd.daemon.health import Health
from sitemapd.daemon.loop import BatchLoop
from sitemapd.daemon.metrics import Metrics
from sitemapd.daemon.state import DaemonState
from sitemapd.daemon.watching import Watching
from sitemapd.daemon.workqueue import OUTBOX, REFRESH, WorkQueue
from sitemapd.engine.engine import Engine
from sitemapd.errors import ConfigError, Interrupted, SitemapdError, StateError
from sitemapd.ledger.lock import StateLock
from sitemapd.notify.outbox import Courier
from sitemapd.publish import ownership

if TYPE_CHECKING:
    from apscheduler.schedulers.background import BackgroundScheduler

    from sitemapd.daemon.sidecar import Sidecar
    from sitemapd.publish.folderlock import FolderLock

log = logs.Logger("sitemapd.daemon")

_HEALTH_EVERY = 2.0  # seconds between watcher health checks
# Seconds between re-renders of what ages with time (news sitemaps, the feed window).
_REFRESH_EVERY = 60.0


class Daemon:
    """One site's watchers, writer and scheduler around a shared Engine."""

    def __init__(
        self, config: Config, lock: StateLock, folder_lock: FolderLock | None = None
    ) -> None:
        """`folder_lock`: the output folder's lock, taken (see Target)."""
        queue = WorkQueue()
        courier = Courier(config, lambda: queue.add_task(OUTBOX))
        exported = None
        if config.http.listen:
            # The endpoint's modules (prometheus_client, http.server) load only for it.
            from sitemapd.daemon.prometheus import Exported

            exported = Exported(
                config.ledger_path,
                lambda: not self.health.problems(),
                queue.depth,
                courier.waiting,
                lambda: self.fleet.role(),
                lambda: len(self.loop.held),
                lambda: not self.health.stalls(),
            )
        self.state = DaemonState(
            config, lock, queue, courier, Metrics() if exported is None else exported, folder_lock
        )
        self.loop = BatchLoop(self.state)
        self.fleet = Fleet(self.state)
        self.watching = Watching(self.state)
        self.health = Health(
            self.state, self.loop, self.fleet, self.watching, lambda: self.scheduler.running
        )
        self.reload_requested = threading.Event()
        self._wake = threading.Event()
        self.sidecar: Sidecar | None = None
        if exported is not None:
            from sitemapd.daemon.sidecar import Sidecar
            from sitemapd.daemon.statuspage import StatusPage

            try:
                self.sidecar = Sidecar(
                    config.http.listen,
                    config.site.output_dir,
                    config.http.serve_files,
                    self.health.problems,
                    exported,
                    config.ledger_path,
                    self.loop.served,
                    self.fleet.role,
                    StatusPage(
                        lambda: self.state.config, self.health.live_state, config.ledger_path
                    ),
                    self.health.stalls,
                )
            except OSError as exc:  # the port taken, an address not this machine's
                raise SitemapdError(
                    f"http.listen: cannot listen on {config.http.listen} ({exc.strerror})"
                ) from exc

    @functools.cached_property
    def scheduler(self) -> BackgroundScheduler:
        """Return the scheduler of reconciles, polls and health checks, made on first use:
        importing it reads every installed package's entry points, which the first
        publish need not wait for."""
        from apscheduler.schedulers.background import BackgroundScheduler

        return BackgroundScheduler(
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 30}
        )

    def start(self) -> None:
        """Watch, catch up with changes made while stopped, publish, then follow changes."""
        self.watching.attach()
        if self.sidecar is not None:
            self.sidecar.start()
        # `sitemapd status` tells a daemon still starting from a process that is not one.
        self.health.save(self.health.status())
        self.watching.start_sources()
        scanning = threading.Event()
        threading.Thread(target=self.extend_start, args=(scanning,), daemon=True).start()
        written = 0
        self.fleet.tick()
        try:
            first = self.loop.update({}, self.state.source_names(), stop=self.state.terminate)
            written = len(first.report.written)
        except Interrupted as exc:
            # Rolled back: the next start scans again and loses nothing.
            log.info("stopped during the first scan (%s)", exc)
            return
        except (SitemapdError, OSError) as exc:
            self.state.errors += 1
            self.loop.batch_error = str(exc)
            self.state.error(f"first publish failed ({exc}); retrying")
            self.state.reconcile_all()
        finally:
            scanning.set()
        # From here: the writer checks what the first publish left in the output folder
        # (the watcher asks it to as it starts), as it would have for events meanwhile.
        self.watching.watch_output()
        self.loop.notify()
        self.state.courier.start()
        self.loop.writer.start()
        self.fleet.start()
        self.schedule()
        self.scheduler.start()
        self.watching.start_listeners()
        self.state.ready = True
        if self.loop.batch_error is None:
            self.loop.announce(f"{written} files written at start")
        else:
            log.warning("started, not ready: nothing is published until a publish succeeds")
        self.state.notifier.ready(self.health.status())

    def extend_start(self, done: threading.Event) -> None:
        """Keep systemd's start timeout from firing while a long first scan runs."""
        while not done.wait(5.0):
            self.state.notifier.extend_timeout(30.0, "scanning sources before the first publish")

    def schedule(self) -> None:
        for job, seconds, name in (
            (self.state.reconcile_all, self.state.config.daemon.reconcile_interval, "reconcile"),
            (self.watching.check, _HEALTH_EVERY, "health"),
            (self.loop.rescan_confirmed, _HEALTH_EVERY, "confirm-removal"),
        ):
            self.scheduler.add_job(job, "interval", seconds=seconds, id=name, replace_existing=True)
        for job in self.scheduler.get_jobs():
            if job.id.startswith("poll:"):
                job.remove()
        for source in self.state.config.sources:
            if isinstance(source, ChangelogSource | AccessLogSource):
                # Change logs are polled (NOTIFY only wakes the poll early); access logs
                # grow too often to watch.
                self.scheduler.add_job(
                    self.loop.poll,
                    "interval",
                    args=(source.name,),
                    seconds=source.poll_interval,
                    id=f"poll:{source.name}",
                    replace_existing=True,
                )
        if self.state.config.news or self.state.config.feed:
            self.scheduler.add_job(
                self.state.queue.add_task,
                "interval",
                args=(REFRESH,),
                seconds=_REFRESH_EVERY,
                id="refresh",
                replace_existing=True,
            )

    def stop(self) -> None:
        """Stop watching, finish and publish the pending batch, close the ledger."""
        log.info("stopping")
        self.state.notifier.send(STOPPING=1, STATUS="stopping: publishing the pending batch")
        if "scheduler" in vars(self) and self.scheduler.running:
            self.scheduler.shutdown(wait=True)
        self.watching.stop()
        self.state.stopping.set()
        self.state.queue.wake()
        if self.loop.writer.is_alive():
            self.loop.writer.join()
        self.fleet.join()
        self.state.courier.stop()
        # Outcomes that arrived after the writer's last look are recorded now: left
        # unrecorded, the next start would send them a second time.
        if not self.state.lost():
            with self.state.engine_lock:
                self.loop.settle()
        self.watching.detach()
        if self.sidecar is not None:
            self.sidecar.stop()
        self.state.engine.close()
        self.state.notifier.close()

    def install_signal_handlers(self) -> None:
        """SIGTERM / SIGINT stop, SIGHUP reloads; call from the main thread before start()."""

        def on_stop(signum: int, frame: FrameType | None) -> None:
            self.state.terminate.set()
            self._wake.set()

        def on_hup(signum: int, frame: FrameType | None) -> None:
            self.reload_requested.set()
            self._wake.set()

        signal.signal(signal.SIGTERM, on_stop)
        signal.signal(signal.SIGINT, on_stop)
        signal.signal(signal.SIGHUP, on_hup)

    def serve_forever(self) -> None:
        """Handle reload requests until told to stop; health pings run in their own thread."""
        threading.Thread(target=self.health.supervise, name="sitemapd-notify", daemon=True).start()
        while not self.state.terminate.is_set():
            self._wake.wait(1.0)
            self._wake.clear()
            if self.reload_requested.is_set() and not self.state.terminate.is_set():
                self.reload_requested.clear()
                self.state.notifier.reloading()
                self.reload()
                self.state.notifier.send(READY=1, STATUS=self.health.status())

    def reload(self) -> bool:
        """Re-read the config file; on any error keep running the old one. Return success."""
        log.info("reloading %s", self.state.config.path)
        try:
            if self.state.lost():
                raise StateError(f"{self.state.state_lost}; restart sitemapd to start over")
            new = config_module.load(self.state.config.path)
            if new.site.state_dir != self.state.config.site.state_dir:
                raise ConfigError("site.state_dir cannot change while running; restart instead")
            with self.state.engine_lock:  # new names may be another writer's files
                ownership.claim(new, self.state.engine.ledger.published)
                folder_lock = self.state.engine.target.hand_over(new)
        except SitemapdError as exc:
            log.error("reload failed, keeping the running configuration: %s", exc)
            self.state.reload_error = str(exc)
            return False
        self.state.reload_error = None
        if new.http.listen != self.state.config.http.listen:
            log.warning("http.listen changes take effect at the next restart")
        if self.sidecar is not None:
            self.sidecar.server.output_dir = new.site.output_dir
            self.sidecar.server.serve_files = new.http.serve_files
        with self.watching.lock, self.state.engine_lock:
            self.watching.stop()
            self.state.engine.close()
            self.state.config = new
            self.state.engine = Engine(new, folder_lock=folder_lock)
            self.state.courier.config = new
            self.watching.start()
        self.watching.start_listeners()
        self.fleet.start()
        self.schedule()
        self.state.reconcile_all()
        log.info("reloaded")
        return True
