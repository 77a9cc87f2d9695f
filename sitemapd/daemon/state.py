"""What the parts of a running daemon share: its configuration and engine, the lock the
writer holds per batch, the work queue, and the errors a status report shows."""

from __future__ import annotations

import threading
from pathlib import Path

from sitemapd.config import Config
from sitemapd.core import logs, w3c
from sitemapd.daemon.metrics import Metrics
from sitemapd.daemon.systemd import Notifier
from sitemapd.daemon.workqueue import WorkQueue
from sitemapd.engine.engine import Engine
from sitemapd.ledger.lock import StateLock
from sitemapd.notify.outbox import Courier
from sitemapd.publish.folderlock import FolderLock

log = logs.Logger("sitemapd.daemon")


class DaemonState:
    """The state every part of the daemon reads; the writer and a reload change it."""

    def __init__(
        self,
        config: Config,
        lock: StateLock,
        queue: WorkQueue,
        courier: Courier,
        metrics: Metrics,
        folder_lock: FolderLock | None = None,
    ) -> None:
        self.config = config
        self.lock = lock
        self.queue = queue
        self.courier = courier
        self.metrics = metrics
        self.engine = Engine(config, folder_lock=folder_lock)
        self._ledger_file = _file_id(config.ledger_path)
        # Why the state folder is no longer ours (deleted, replaced): nothing is written then.
        self.state_lost: str | None = None
        # Held by the writer for each batch; a reload takes it to swap the engine.
        self.engine_lock = threading.Lock()
        self.stopping = threading.Event()
        self.terminate = threading.Event()
        self.notifier = Notifier()
        self.ready = False
        self.errors = 0
        # The last error logged, with when.
        self.last_error: tuple[str, str] | None = None
        self.reload_error: str | None = None

    def error(self, message: str) -> None:
        """Log an error and keep it for `sitemapd status`."""
        self.last_error = (w3c.now(), message)
        log.error("%s", message)

    def source_names(self) -> set[str]:
        return {source.name for source in self.config.sources}

    def reconcile_all(self) -> None:
        for name in self.source_names():
            self.queue.add_rescan(name)

    def lost(self) -> str | None:
        """Return why the state folder is no longer this daemon's, noticing it once."""
        if self.state_lost is None:
            why = self.lock.lost()
            if why is None and _file_id(self.config.ledger_path) != self._ledger_file:
                why = f"the ledger {self.config.ledger_path} was deleted or replaced while running"
            if why is not None:
                self.state_lost = why
                self.error(f"{why}: not writing any more; restart sitemapd to start over")
                # A `build` run meanwhile is the only writer: the output folder is its,
                # and a publish under way here writes no more.
                self.engine.target.let_go(f"{why}: not writing any more")
        return self.state_lost


def _file_id(path: Path) -> tuple[int, int] | None:
    """Return the (device, inode) of the file at `path`, None when there is none."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_dev, status.st_ino
