"""The daemon's role in a fleet: renew or take the publisher lease, several times per TTL,
and publish everything owed when it is taken."""

from __future__ import annotations

import threading

from sitemapd.core import logs
from sitemapd.daemon.state import DaemonState
from sitemapd.daemon.workqueue import TAKEOVER
from sitemapd.errors import SitemapdError

log = logs.Logger("sitemapd.daemon")


class Fleet:
    """The lease loop of a daemon whose target is shared; inert with a local target."""

    def __init__(self, state: DaemonState) -> None:
        self.state = state
        # Why the last lease renewal or take failed (the store unreachable), until one works.
        self.lease_error: str | None = None
        self._leasing: threading.Thread | None = None

    def role(self) -> str | None:
        """Return "publisher" or "standby" when daemons share the target, else None."""
        lease = self.state.engine.lease
        if lease is None:
            return None
        return "publisher" if lease.held else "standby"

    def tick(self) -> bool:
        """Renew or take the publisher lease; return True when it was just taken."""
        lease = self.state.engine.lease
        if lease is None:
            return False
        was = lease.held
        try:
            held = lease.tick()
        except SitemapdError as exc:
            if self.lease_error != str(exc):
                self.state.error(f"publisher lease: {exc}")
            self.lease_error = str(exc)
            return False
        self.lease_error = None
        return held and not was

    def start(self) -> None:
        """Start the lease loop when the target is shared and it does not run (at start,
        and after a reload switched to a bucket: the loop ends with a local target)."""
        running = self._leasing is not None and self._leasing.is_alive()
        if self.state.engine.lease is not None and not running:
            self._leasing = threading.Thread(target=self._loop, name="sitemapd-lease")
            self._leasing.start()

    def _loop(self) -> None:
        """Renew the lease (or watch for it to lapse) several times per TTL."""
        while True:
            lease = self.state.engine.lease
            if lease is None or self.state.stopping.wait(lease.ttl / 6):
                return
            with self.state.engine_lock:  # a reload swaps the engine and its lease
                taken = self.tick()
            if taken:
                log.info("now the publisher of %s", self.state.engine.publisher.store.where)
                self.state.queue.add_task(TAKEOVER)

    def join(self) -> None:
        """Wait for the lease loop to end (it ends once the daemon is stopping)."""
        if self._leasing is not None and self._leasing.is_alive():
            self._leasing.join()
