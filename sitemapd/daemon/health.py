"""The daemon's health: what is wrong (for /readyz, STATUS and metrics), what a restart
may cure (for /livez and WATCHDOG=1), the one-line status and the saved health report."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from sitemapd.core import logs, w3c
from sitemapd.core.words import count
from sitemapd.daemon.fleet import Fleet
from sitemapd.daemon.loop import BatchLoop
from sitemapd.daemon.state import DaemonState
from sitemapd.daemon.watching import Watching
from sitemapd.errors import SitemapdError
from sitemapd.publish.atomic import atomic_write
from sitemapd.status.report import DAEMON_FILE

if TYPE_CHECKING:
    from sitemapd.daemon.watch import Watcher
    from sitemapd.status.data import LiveState

log = logs.Logger("sitemapd.daemon")


class Health:
    """Reads the other parts' state, never blocks on them, and reports it."""

    def __init__(
        self,
        state: DaemonState,
        loop: BatchLoop,
        fleet: Fleet,
        watching: Watching,
        scheduling: Callable[[], bool],
    ) -> None:
        self.state = state
        self.loop = loop
        self.fleet = fleet
        self.watching = watching
        # Whether the scheduler of reconciles and health checks runs.
        self.scheduling = scheduling

    def problems(self) -> list[str]:
        """Return why the daemon is unhealthy (for /healthz, STATUS, metrics): its own
        faults, then what is wrong outside it; empty while it is healthy."""
        found = self.faults()
        if self.watching.output_missing:
            # As the health job last saw it: a probe never waits on the file system.
            found.append(f"output folder {self.state.config.site.output_dir} is missing")
        for name, reason in list(self.loop.failing.items()):
            if name in self.watching.watchers and not self.watching.watchers[name].healthy():
                continue  # already named by its watcher
            found.append(f"{name}: last read failed: {reason}")
        for name, files in list(self.loop.unreadable.items()):
            # Degraded: what was published stays; the read is tried again shortly.
            shown = [f"{path}: temporarily unreadable ({why})" for path, why in files.items()]
            more = f" and {len(shown) - 3} more files" if len(shown) > 3 else ""
            found.append(f"{name}: {'; '.join(shown[:3])}{more}; retrying")
        found += [f"{name}: {reason}" for name, reason in list(self.loop.held.items())]
        for name, since in list(self.loop.waiting_since.items()):
            if time.time() - since > self.state.config.daemon.max_lag:
                found.append(
                    f"{name}: {self.loop.backlogs.get(name, 0)} change-log rows waiting since "
                    f"{w3c.format_epoch(since)} (a long-running database transaction holds "
                    "them back?)"
                )
        found += self.loop.slots.problems()
        if self.loop.key_rejected:
            found.append(f"indexnow: the key was refused: {self.loop.key_rejected}")
        return found

    def live_state(self) -> LiveState:
        """Return what the status page shows of the daemon besides its ledger."""
        from sitemapd.status.data import LiveState  # with the status page only

        return LiveState(
            problems=self.problems(),
            faults=self.stalls(),
            role=self.fleet.role(),
            last_publish=self.loop.last_publish,
            publish_error=self.loop.batch_error,
            errors=self.state.errors,
            read_at=dict(self.loop.read_at),
            failing=dict(self.loop.failing),
            backlogs=dict(self.loop.backlogs),
            waiting_since=dict(self.loop.waiting_since),
            notifications_waiting=self.state.courier.waiting(),
            retrying=dict(self.state.courier.failing),
        )

    def faults(self) -> list[str]:
        """Return the problems of the daemon itself or its watchers; a database that is
        down or a refused IndexNow key is not one."""
        found = [] if self.state.ready else ["starting"]
        found += self.stalls()
        for name, watcher in list(self.watching.watchers.items()):
            if not watcher.healthy() and not self.watcher_stalled(watcher):
                found.append(f"{name}: {watcher.failure or 'watcher stopped'}")
        if self.loop.batch_error:
            found.append(f"publishing failed: {self.loop.batch_error}")
        if self.fleet.lease_error:
            found.append(f"publisher lease: {self.fleet.lease_error}")
        return found

    def stalls(self) -> list[str]:
        """Return why the daemon's loops do not turn, which a restart may cure (for
        /livez and WATCHDOG=1); empty while they turn, whatever the state of the sources,
        the store or the content. Reads only the daemon's state: never blocks."""
        found = []
        if self.state.state_lost:
            found.append(f"{self.state.state_lost}: not writing; restart sitemapd to start over")
        for name, watcher in list(self.watching.watchers.items()):
            if self.watcher_stalled(watcher):
                found.append(f"{name}: {watcher.failure or 'watcher stopped'}")
        if self.state.ready and not self.scheduling():
            found.append("scheduler stopped")
        if self.state.ready and not self.loop.writer.is_alive():
            found.append("writer stopped")
        started = self.loop.batch_started
        if started is not None:
            # A long first scan reports progress: only a batch that stopped moving is stuck.
            quiet = time.monotonic() - max(started, self.loop.batch_moved)
            if quiet > self.state.config.daemon.stuck_after:
                found.append(f"writer stuck in one batch for {quiet:.0f}s")
        return found

    @staticmethod
    def watcher_stalled(watcher: Watcher) -> bool:
        """True when a watcher is down and could not be started again on a folder that is
        there (a missing folder is an outage of the source)."""
        return not watcher.healthy() and watcher.failure is not None and not watcher.missing

    def status(self) -> str:
        """Return the one-line STATUS: figures, then any problem."""
        # Only what changes with the site: STATUS= is sent again whenever this line changes.
        role = self.fleet.role()
        parts = [
            *([role] if role else []),
            f"{count(self.loop.live, 'URL')} live",
            f"last publish {self.loop.last_publish or 'never'}",
            f"{self.state.errors} errors",
        ]
        for name, waiting in list(self.loop.backlogs.items()):
            if waiting:
                parts.append(f"{name}: {waiting} change-log rows waiting")
        if self.state.courier.waiting():
            parts.append(f"{self.state.courier.waiting()} notifications waiting")
        for target, reason in list(self.state.courier.failing.items()):
            parts.append(f"{target} failing: {reason}")
        problems = self.problems()
        if problems:
            parts.append("UNHEALTHY: " + "; ".join(problems))
        if self.state.reload_error:
            parts.append(
                f"reload failed, running the previous configuration: {self.state.reload_error}"
            )
        return ", ".join(parts)

    def supervise(self) -> None:
        """Send WATCHDOG=1 every watchdog interval while healthy and STATUS when it changes
        (also written for `sitemapd status`), until stopping."""
        interval = self.state.notifier.watchdog_interval
        ping_at = time.monotonic() + (interval or 0.0)
        last_status = ""
        last_saved: tuple[str, tuple[str, str] | None] = ("", None)
        while True:
            # Wake every second for STATUS, and when WATCHDOG=1 is due.
            wait = 1.0 if interval is None else min(1.0, max(0.0, ping_at - time.monotonic()))
            if self.state.stopping.wait(wait):
                return
            if interval is not None and time.monotonic() >= ping_at:
                # WATCHDOG=1 only while the loops turn (as /livez): a stuck daemon gets
                # restarted, one whose sources or store are down does not.
                healthy = not self.stalls()
                if healthy:
                    self.state.notifier.send(WATCHDOG=1)
                # Unhealthy: look again soon, so that a recovery pings before the deadline.
                ping_at = time.monotonic() + (interval if healthy else min(1.0, interval))
            status = self.status()
            if status != last_status:
                self.state.notifier.send(STATUS=status)
            if (status, self.state.last_error) != last_saved:
                self.save(status)
            last_status, last_saved = status, (status, self.state.last_error)

    def save(self, status: str) -> None:
        """Write the daemon's health into the state folder, for `sitemapd status`."""
        if self.state.lost():
            return  # the folder is no longer ours to write
        problems = self.problems()
        report = {
            "pid": os.getpid(),
            "role": self.fleet.role(),
            "healthy": not problems,
            "problems": problems,
            "status": status,
            "last_error": self.state.last_error and self.state.last_error[1],
            "last_error_at": self.state.last_error and self.state.last_error[0],
            "reload_error": self.state.reload_error,
        }
        path = self.state.config.site.state_dir / DAEMON_FILE
        try:
            atomic_write(path, json.dumps(report, indent=2).encode())
        except SitemapdError as exc:
            log.warning("cannot save the health report: %s", exc)
