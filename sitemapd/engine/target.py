"""The engine's target: the publisher over a local folder or an S3 bucket, the lock or
lease that keeps one writer per folder or bucket, and the lastmods a new ledger adopts
from what is published."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from sitemapd.config import Config
from sitemapd.core import logs, w3c
from sitemapd.errors import PublishError
from sitemapd.publish import manifest
from sitemapd.publish.folderlock import FolderLock
from sitemapd.publish.publisher import Publisher

if TYPE_CHECKING:
    from sitemapd.ledger.ledger import Ledger
    from sitemapd.publish.lease import Lease

log = logs.Logger("sitemapd.engine")


class Target:
    """Where one engine publishes, and whether it may."""

    def __init__(
        self, config: Config, ledger: Ledger, dry_run: bool, folder_lock: FolderLock | None = None
    ) -> None:
        """`folder_lock`: the output folder's lock when taken already (before the ledger
        opened, or handed over by the engine this one replaces: see hand_over); else
        taken at the first publish."""
        self.config = config
        self.ledger = ledger
        # Several daemons may publish to one bucket: they share it under a lease.
        self.lease: Lease | None = None
        # One folder has one writer: another daemon with its own ledger is refused.
        self.folder_lock = None if dry_run else folder_lock or FolderLock.of(config)
        target = config.publish.s3
        if target is None:
            self.publisher = Publisher(config, ledger, dry_run, lease=self.folder_lock)
        else:
            # Imported for a bucket only: a local folder needs no HTTP client or lease.
            from sitemapd.publish.lease import Lease, lease_key
            from sitemapd.publish.s3store import S3Store, client

            s3 = client(target)
            key = lease_key(target.prefix, config.sitemap.index_name)
            self.lease = Lease(s3, target.bucket, key, target.lease_ttl)
            store = S3Store(target, s3)
            self.publisher = Publisher(config, ledger, dry_run, store, self.lease)
        # Set on close: ends the renewals that `acquire` started.
        self._done = threading.Event()

    def close(self) -> None:
        """End the renewals and give the lease or the folder's lock up."""
        self._done.set()
        if self.lease is not None:
            self.lease.release()
        if self.folder_lock is not None:
            self.folder_lock.release()

    def claim(self) -> None:
        """Take the output folder's lock (a bucket's lease is the fleet's to take). Raises
        PublishError naming the process that publishes there, or when the folder cannot
        be written."""
        if self.folder_lock is not None:
            self.folder_lock.take()

    def let_go(self, why: str) -> None:
        """Give the output folder's lock up for good: from here on this engine's
        publisher refuses every write (PublishError `why`)."""
        if self.folder_lock is not None:
            self.folder_lock.retire(why)

    def hand_over(self, config: Config) -> FolderLock | None:
        """Return the output folder's lock for the engine of `config` that replaces this
        one, taken, with this target's own locks of the same files in it: no moment
        leaves them free (this target keeps the rest until it closes, and publishes
        unfenced meanwhile: the process holds every lock). Raises PublishError when
        another process holds one, or the folder cannot be written, this target's lock
        then as it was."""
        lock = FolderLock.of(config)
        if lock is None:
            return None
        own = self.folder_lock
        if own is not None:
            lock.succeed(own)
            self.publisher.lease = None
            return lock
        try:
            lock.take()
        except PublishError:
            lock.release()
            raise
        return lock

    def acquire(self, wait: float) -> None:
        """Take the output folder's lock, or the publisher lease within `wait` seconds.
        Raises PublishError when another process publishes into the folder, or keeps
        the lease (renews it: its ETag moves)."""
        self.claim()
        if self.lease is None:
            return
        deadline = time.monotonic() + wait
        while not self.lease.tick():
            if time.monotonic() > deadline:
                raise PublishError(
                    f"another sitemapd publishes to {self.publisher.store.where} "
                    "(its lease is being renewed)"
                )
            time.sleep(min(1.0, self.lease.ttl / 4))
        # Renewed while the build scans: a scan longer than the TTL keeps the lease.
        threading.Thread(target=self._renew, name="sitemapd-lease", daemon=True).start()

    def _renew(self) -> None:
        """Renew the lease `acquire` took several times per TTL until the engine closes
        or the lease is lost."""
        lease = self.lease
        assert lease is not None
        while not self._done.wait(lease.ttl / 6):
            try:
                if not lease.keep():
                    return
            except PublishError as exc:
                log.warning("cannot renew the publisher lease: %s", exc)

    def adopt(self) -> int:
        """Give URLs whose content matches what the target's manifests list the lastmods
        published there (unless the last publish was this ledger's); return how many
        moved, also kept for `status`. Raises PublishError."""
        started = time.perf_counter()
        store = self.publisher.store
        store.prepare(write=False)
        index = self.config.sitemap.index_name
        record = self.ledger.published(index)
        if record is not None and store.intact(index, record):
            return 0  # the index out there is our own: our lastmods are the published ones
        shards = [name for name in store.names() if self.publisher.names.is_shard(name)]
        if not shards:
            return 0  # nothing published: nothing to adopt (and a first load keeps its spool)
        moved = manifest.adopt(self.ledger, store.manifest_rows(shards))
        log.info(
            "kept the published lastmod of %d URLs (%s) in %.2fs",
            moved,
            store.where,
            time.perf_counter() - started,
        )
        self.ledger.set_cursor(manifest.ADOPTED, f"{moved} {w3c.now()}")
        return moved
