"""The engine: scan sources, apply to the ledger, publish. `build` and the daemon share it."""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from sitemapd import sources
from sitemapd.changelog import Reader, open_reader
from sitemapd.config import Config
from sitemapd.config.sources import AccessLogSource, ChangelogSource, ContentSource, DirectorySource
from sitemapd.core import w3c
from sitemapd.core.observation import Item, Unreadable
from sitemapd.core.urls import URLPolicy
from sitemapd.engine.progress import Progress, log_report
from sitemapd.errors import InvalidURL, PublishError, SourceError
from sitemapd.ledger import ALLOW_ALL, ChangeSet, Ledger, RobotsRules
from sitemapd.ledger.removals import RemovalGuard
from sitemapd.ledger.shards import Limits
from sitemapd.publish import manifest, robots
from sitemapd.publish.feedwindow import feed_page_of
from sitemapd.publish.lease import Lease, lease_key
from sitemapd.publish.partition import owned
from sitemapd.publish.publisher import Publisher, PublishReport
from sitemapd.publish.s3store import S3Store, client
from sitemapd.sources import accesslog, changelog

log = logging.getLogger("sitemapd.engine")


@dataclass
class BuildResult:
    changes: ChangeSet
    report: PublishReport
    seconds: float
    # Sources (or robots.txt) that could not be read, with why; what they gave is kept.
    failed: dict[str, str] = field(default_factory=dict)
    # Sources read in full (change logs: up to date).
    scanned: list[str] = field(default_factory=list)
    # Change-log sources that hold more rows than one batch took.
    more: set[str] = field(default_factory=set)
    # Change-log sources whose reconcile waits until their rows are read (`more`).
    deferred: set[str] = field(default_factory=set)
    # Files whose read failed for now (EMFILE, EIO...), per source, with why: retry them.
    unreadable: dict[str, dict[str, str]] = field(default_factory=dict)
    # Sources whose removal the mass-removal guard holds (this run or earlier), with why.
    held: dict[str, str] = field(default_factory=dict)


class Engine:
    """One site's ledger and publisher, opened for the lifetime of a build or daemon."""

    def __init__(
        self,
        config: Config,
        ledger_path: Path | None = None,
        dry_run: bool = False,
        alone: bool = False,
    ):
        """Open the site's ledger (or the copy at `ledger_path`); a `dry_run` engine
        writes no output file; `alone`: see Ledger."""
        self.config = config
        self.policy = URLPolicy(config.site.origin)
        limits = Limits(config.sitemap.max_urls, config.sitemap.max_bytes)
        self.ledger = Ledger(ledger_path or config.ledger_path, limits, alone)
        # Several daemons may publish to one bucket: they share it under a lease.
        self.lease: Lease | None = None
        target = config.publish.s3
        if target is None:
            self.publisher = Publisher(config, self.ledger, dry_run)
        else:
            s3 = client(target)
            key = lease_key(target.prefix, config.sitemap.index)
            self.lease = Lease(s3, target.bucket, key, target.lease_ttl)
            store = S3Store(target, s3)
            self.publisher = Publisher(config, self.ledger, dry_run, store, self.lease)
        # The published lastmods are adopted before the first publish of this engine and
        # after each takeover (see adopt): what its ledger lacks, the target remembers.
        self.adopting = True
        self.readers: dict[str, Reader] = {}
        self._readers_lock = threading.Lock()
        self._closed = False
        # Set on close: ends the renewals that `acquire` started.
        self._done = threading.Event()

    def close(self) -> None:
        """Close the change-log readers and the ledger."""
        with self._readers_lock:
            self._closed = True
            for reader in self.readers.values():
                reader.close()
        self._done.set()
        if self.lease is not None:
            self.lease.release()
        self.ledger.close()

    def acquire(self, wait: float) -> None:
        """Take the publisher lease within `wait` seconds (none: nothing to take). Raises
        PublishError when another daemon keeps it (renews it: its ETag moves)."""
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
        index = self.config.sitemap.index
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

    def robots_rules(self) -> RobotsRules:
        """Return the site's robots.txt rules (allowing all when none is configured)."""
        path = self.config.site.robots_txt
        if path is None:
            return ALLOW_ALL
        try:
            return robots.rules(path.read_bytes())
        except FileNotFoundError:
            if not path.parent.is_dir():
                # The folder is gone (a redeploy in progress): its rules are unknown, not
                # empty, and publishing now could list what they disallow.
                raise SourceError(f"robots.txt folder {path.parent} is missing") from None
            return robots.rules(b"")
        except OSError as exc:
            raise SourceError(f"cannot read robots.txt {path} ({exc.strerror})") from exc

    def build(
        self,
        now: str | None = None,
        confirm_removal: bool = False,
        progress: Progress | None = None,
    ) -> BuildResult:
        """Scan every source in full (change logs up to date), apply, publish; return it.

        `confirm_removal` lets removals through that the mass-removal guard would hold.
        Raises SourceError when a source cannot be read (nothing is applied then).
        """
        rescan = {source.name for source in self.config.sources}
        result = self.update(
            {}, rescan, now=now, confirm_removal=confirm_removal, progress=progress
        )
        while result.more:
            more = self.update({}, result.more, now=now, progress=progress)
            more.changes = result.changes.merged(more.changes)
            result = more
        return result

    def read_access_log(self, source: AccessLogSource) -> bool:
        """Record what crawlers fetched since the log was last read; return True when a
        crawler fetched a feed (its window may move). Raises SourceError."""
        fetched = False
        feed = self.config.feed
        name = f"accesslog:{source.name}"
        cursor = self.ledger.cursor(name)
        while True:
            chunk = accesslog.read_new(source.path, cursor)
            facts = accesslog.crawl_facts(
                chunk.hits, self.config.crawlers, functools.partial(feed_page_of, feed)
            )
            answers = []
            for target, (status, crawler, at) in facts.answers.items():
                try:
                    loc = self.policy.normalise(self.policy.origin.root + target.lstrip("/"))
                except InvalidURL:
                    continue
                answers.append((loc, status, crawler, at))
            if chunk.bad_lines:
                log.warning("%s: %d lines not in combined log format", source.name, chunk.bad_lines)
            if chunk.hits or chunk.cursor != cursor:
                self.ledger.record_crawls(facts.feed_fetches, answers, {name: chunk.cursor})
            fetched = fetched or bool(facts.feed_fetches)
            cursor = chunk.cursor
            if not chunk.more:
                return fetched

    def reader(self, source: ChangelogSource) -> Reader:
        """Return the change-log reader of `source`, opened on first use.

        Raises SourceError once the engine is closed (a listener racing a reload).
        """
        # The writer reads and a listener thread waits on the same reader.
        with self._readers_lock:
            if self._closed:
                raise SourceError(f"{source.name}: the engine was closed")
            found = self.readers.get(source.name)
            if found is None:
                found = self.readers[source.name] = open_reader(source.spec)
            return found

    def _scans(
        self, source: ContentSource, ctx: sources.Context, paths: set[str], rescan: bool
    ) -> list[sources.Scan]:
        """Return the scans a batch asks of `source`; raises SourceError."""
        if isinstance(source, DirectorySource):
            if rescan:
                return [sources.scan(source, ctx)]
            return [sources.observe(source, ctx, paths)] if paths else []
        if not (rescan or paths):
            return []
        if isinstance(source, ChangelogSource):
            return [sources.scan(source, ctx, self.reader(source))]
        return [sources.scan(source, ctx)]

    def update(
        self,
        paths: Mapping[str, set[str]],
        rescan: set[str],
        *,
        now: str | None = None,
        strict: bool = True,
        refresh: bool = False,
        confirm_removal: bool = False,
        progress: Progress | None = None,
    ) -> BuildResult:
        """Re-read `paths` of some sources and all of the `rescan` ones; apply and publish.

        With `strict` off, a source that cannot be read (a missing root) is logged and
        left as it was while the others proceed. A batch that changed nothing publishes
        nothing, unless it rescanned (which also repairs edited files) or `refresh` asks
        for what time changes (news ageing, the feed window). `progress` hears how many
        pages went by (by default, an INFO line every 10 s) and may interrupt the batch.
        """
        progress = progress or Progress(log_report)
        started = time.perf_counter()
        now = now or w3c.now()
        ctx = sources.Context(
            self.policy,
            self.ledger,
            now,
            self.config.site.not_content,
            self.config.sitemap.alternates,
            self.config.sitemap.images,
        )
        failed: dict[str, str] = {}
        refresh = self._read_access_logs(paths, rescan, strict, failed) or refresh
        scans: list[sources.Scan] = []
        for source in self.config.content_sources:
            try:
                scans += self._scans(
                    source, ctx, paths.get(source.name, set()), source.name in rescan
                )
            except SourceError as exc:
                if strict:
                    raise
                failed[source.name] = str(exc)
                log.error("%s", exc)
        robots_rules = self.robots_rules()
        reconciling = [
            s
            for s in self.config.content_sources
            if isinstance(s, ChangelogSource) and s.reconcile_query and s.name in rescan
        ]
        complete: list[str] = []
        unreadable: dict[str, dict[str, str]] = {}
        partition = self.config.site.partition
        for scan in scans:
            scan.items = _set_aside(scan.items, unreadable)
            if partition is not None:
                scan.items = owned(scan.items, partition)
        guard = self._guard(scans, confirm_removal)
        changes = self._apply(
            scans, complete, failed, strict, robots_rules, now, not reconciling, guard, progress
        )
        # A reconcile compares the database with the ledger once the log's rows are in it
        # (a second transaction), and only when the log is drained: rows still waiting
        # would otherwise look like missed upserts and deletions.
        deferred: set[str] = set()
        reconciles: list[sources.Scan] = []
        for source in reconciling:
            if source.name in failed:
                continue
            if any(s.more for s in scans if s.name == source.name):
                deferred.add(source.name)
            else:
                reconciles.append(changelog.reconcile(source, ctx, self.reader(source)))
        if reconciles:
            later = self._apply(
                reconciles, complete, failed, strict, robots_rules, now, True, guard, progress
            )
            changes = changes.merged(later)
        quiet = not (changes.changed or changes.moved or rescan or refresh)
        # A standby keeps its ledger current and publishes once it holds the lease.
        if not quiet and self.lease is not None and not self.publisher.dry_run:
            quiet = not self.lease.keep()
        if not quiet and self.adopting:
            # After the scan (a new ledger knows its URLs only now), before the publish.
            self.adopt()
        report = PublishReport() if quiet else self.publisher.publish(now)
        if not quiet:
            self.adopting = False
        seconds = time.perf_counter() - started
        log.log(
            logging.INFO if report.written or changes.changed else logging.DEBUG,
            "%s: %d new, %d updated, %d gone, %d invalid; wrote %d files (%d bytes) in %.2fs",
            "dry run, not published" if self.publisher.dry_run else "published",
            changes.new,
            changes.updated,
            changes.gone,
            changes.rejected,
            len(report.written),
            report.bytes_written,
            seconds,
        )
        for name in changes.empty_scans:
            failed[name] = "a full scan found nothing: treated as an outage"
        scanned = [s.name for s in scans if s.name not in failed and (s.complete or not s.more)]
        # Access logs read to their end count too: that is what clears a failed read.
        scanned += [name for name in self._access_logs(paths, rescan) if name not in failed]
        more = {s.name for s in scans if s.more and s.name not in failed}
        configured = {source.name for source in self.config.content_sources}
        held = {h.source: h.reason() for h in self.ledger.holds() if h.source in configured}
        return BuildResult(
            changes, report, seconds, failed, sorted(set(scanned)), more, deferred, unreadable, held
        )

    def _guard(self, scans: list[sources.Scan], confirm: bool) -> RemovalGuard:
        """Return the mass-removal guard of a batch: files and URL lists are guarded (a
        change log's deletions are statements of the CMS, not a half-copied folder)."""
        guarded = {
            source.name: frozenset(k for sc in scans if sc.name == source.name for k in sc.cursors)
            for source in self.config.content_sources
            if not isinstance(source, ChangelogSource)
        }
        site = self.config.site
        return RemovalGuard(
            guarded, site.max_removal, site.removal_grace, confirm, site.removal_window
        )

    def _read_access_logs(
        self, paths: Mapping[str, set[str]], rescan: set[str], strict: bool, failed: dict[str, str]
    ) -> bool:
        """Read the access logs a batch names; return True when a crawler fetched a feed.

        A log that cannot be read goes into `failed` (raises SourceError when `strict`).
        """
        fetched = False
        for source in self._access_logs(paths, rescan).values():
            try:
                fetched = self.read_access_log(source) or fetched
            except SourceError as exc:
                if strict:
                    raise
                failed[source.name] = str(exc)
                log.error("%s", exc)
        return fetched

    def _access_logs(
        self, paths: Mapping[str, set[str]], rescan: set[str]
    ) -> dict[str, AccessLogSource]:
        """Return the access logs a batch names, by name."""
        return {
            source.name: source
            for source in self.config.sources
            if isinstance(source, AccessLogSource)
            and (source.name in rescan or paths.get(source.name))
        }

    def _apply(
        self,
        scans: list[sources.Scan],
        complete: list[str],
        failed: dict[str, str],
        strict: bool,
        robots_rules: RobotsRules,
        now: str,
        retire: bool,
        guard: RemovalGuard,
        progress: Progress,
    ) -> ChangeSet:
        """Apply `scans` in one ledger transaction, adding to `complete` the sources they
        read in full; with `retire`, sources no longer configured are retired when every
        configured one was read in full. Raises SourceError when `strict`."""
        # The ledger reads both at the end of the transaction, after every item: a scan
        # that fails part-way (below) withdraws its claim to completeness and its cursor.
        earlier = list(complete)
        complete[:] = [scan.name for scan in scans if scan.complete]
        cursors = {k: v for sc in scans for k, v in sc.cursors.items()}
        streams = (
            sc.items if strict else self._soft(sc, complete, cursors, failed) for sc in scans
        )
        configured = [source.name for source in self.config.content_sources]
        changes = self.ledger.apply(
            progress.count(chain.from_iterable(streams)),
            complete=complete,
            robots=robots_rules,
            cursors=cursors,
            now=now,
            configured=configured if retire else None,
            complete_before=earlier,
            guard=guard,
        )
        complete += earlier
        return changes

    @staticmethod
    def _soft(
        scan: sources.Scan, complete: list[str], cursors: dict[str, str], failed: dict[str, str]
    ) -> Iterator[Item]:
        """Yield the scan's items; if reading fails part-way, log it and keep what came."""
        try:
            yield from scan.items
        except SourceError as exc:
            log.error("%s", exc)
            failed[scan.name] = str(exc)
            if scan.name in complete:
                complete.remove(scan.name)
            for key in scan.cursors:
                cursors.pop(key, None)


def _set_aside(items: Iterator[Item], unreadable: dict[str, dict[str, str]]) -> Iterator[Item]:
    """Yield `items` but the Unreadable ones, which go into `unreadable` to be read again:
    a file that cannot be read for now is neither invalid nor gone."""
    for item in items:
        if isinstance(item, Unreadable):
            log.warning("%s: cannot read %s for now (%s)", item.source, item.item, item.reason)
            unreadable.setdefault(item.source, {})[item.item] = item.reason
        else:
            yield item
