"""The engine: scan sources, apply to the ledger, publish. `build` and the daemon share it."""

# Annotations evaluated, not text: see core/observation.py.
import contextlib
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from sitemapd import sources
from sitemapd.config import Config
from sitemapd.config.sources import ChangelogSource, ContentSource, DirectorySource
from sitemapd.core import logs, w3c
from sitemapd.core.urls import URLPolicy
from sitemapd.core.words import count
from sitemapd.engine.accesslogs import access_logs, read_access_logs
from sitemapd.engine.progress import Progress, log_report
from sitemapd.engine.target import Target
from sitemapd.engine.transaction import apply_scans, removal_guard, set_aside
from sitemapd.errors import SitemapdError, SourceError
from sitemapd.ledger.ledger import Ledger
from sitemapd.ledger.model import ALLOW_ALL, PUBLISH_FAILED_CURSOR, ChangeSet, RobotsRules
from sitemapd.ledger.shards import Limits
from sitemapd.publish import robots
from sitemapd.publish.publisher import Publisher, PublishReport

if TYPE_CHECKING:
    from sitemapd.changelog import Reader
    from sitemapd.publish.folderlock import FolderLock
    from sitemapd.publish.lease import Lease

log = logs.Logger("sitemapd.engine")


class BuildResult:
    """What a build or batch changed, published and could not read."""

    __slots__ = (
        "changes",
        "deferred",
        "failed",
        "held",
        "more",
        "report",
        "scanned",
        "seconds",
        "unreadable",
    )

    changes: ChangeSet
    report: PublishReport
    seconds: float
    # Sources (or robots.txt) that could not be read, with why; what they gave is kept.
    failed: dict[str, str]
    # Sources read in full (change logs: up to date).
    scanned: list[str]
    # Change-log sources that hold more rows than one batch took.
    more: set[str]
    # Change-log sources whose reconcile waits until their rows are read (`more`).
    deferred: set[str]
    # Files whose read failed for now (EMFILE, EIO...), per source, with why: retry them.
    unreadable: dict[str, dict[str, str]]
    # Sources whose removal the mass-removal guard holds (this run or earlier), with why.
    held: dict[str, str]

    def __init__(
        self,
        changes: ChangeSet,
        report: PublishReport,
        seconds: float,
        failed: dict[str, str],
        scanned: list[str],
        more: set[str],
        deferred: set[str],
        unreadable: dict[str, dict[str, str]],
        held: dict[str, str],
    ) -> None:
        self.changes = changes
        self.report = report
        self.seconds = seconds
        self.failed = failed
        self.scanned = scanned
        self.more = more
        self.deferred = deferred
        self.unreadable = unreadable
        self.held = held

    def merged(self, later: "BuildResult") -> "BuildResult":
        """Return this batch and the `later` one of the same build as one result: what
        either changed, wrote, read or could not read, in both batches' time; what is
        still to read and held as `later` says."""
        return BuildResult(
            self.changes.merged(later.changes),
            # Each file written or removed named once, every byte written counted.
            PublishReport(
                list(dict.fromkeys(self.report.written + later.report.written)),
                list(dict.fromkeys(self.report.removed + later.report.removed)),
                self.report.bytes_written + later.report.bytes_written,
            ),
            self.seconds + later.seconds,
            {**self.failed, **later.failed},
            sorted({*self.scanned, *later.scanned}),
            later.more,
            later.deferred,
            {**self.unreadable, **later.unreadable},
            later.held,
        )


class Engine:
    """One site's ledger and publisher, opened for the lifetime of a build or daemon."""

    def __init__(
        self,
        config: Config,
        ledger_path: Path | None = None,
        dry_run: bool = False,
        alone: bool = False,
        folder_lock: "FolderLock | None" = None,
    ):
        """Open the site's ledger (or the copy at `ledger_path`); a `dry_run` engine
        writes no output file; `alone`: see Ledger; `folder_lock`: see Target."""
        self.config = config
        self.policy = URLPolicy(config.site.origin)
        limits = Limits(config.sitemap.max_urls, config.sitemap.max_bytes)
        self.ledger = Ledger(ledger_path or config.ledger_path, limits, alone)
        self.target = Target(config, self.ledger, dry_run, folder_lock)
        # The published lastmods are adopted before the first publish of this engine and
        # after each takeover (see adopt): what its ledger lacks, the target remembers.
        self.adopting = True
        self.readers: dict[str, Reader] = {}
        self._readers_lock = threading.Lock()
        self._closed = False

    @property
    def publisher(self) -> Publisher:
        """Return the publisher of the engine's target."""
        return self.target.publisher

    @property
    def lease(self) -> "Lease | None":
        """Return the lease of a shared target (None for a local folder)."""
        return self.target.lease

    def close(self) -> None:
        """Close the change-log readers and the ledger."""
        with self._readers_lock:
            self._closed = True
            for reader in self.readers.values():
                reader.close()
        self.target.close()
        self.ledger.close()

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
            # The summary is the whole build's: a change log's first batch may publish
            # all there is (a snapshot) and the next ones nothing.
            result = result.merged(self.update({}, result.more, now=now, progress=progress))
        return result

    def _publish(self, now: str) -> PublishReport | None:
        """Publish what the ledger holds; return None for a standby, which leaves that to
        the lease's holder. A failure (the lease's renewal and the adoption of what a
        target holds too) is recorded in the ledger for `status` before it is raised; the
        record goes once a publish succeeds, or this process finds itself a standby."""
        try:
            # A standby keeps its ledger current and publishes once it holds the lease.
            if self.lease is not None and not self.publisher.dry_run and not self.lease.keep():
                self._failed("")
                return None
            if self.adopting:
                # After the scan (a new ledger knows its URLs only now), before the publish.
                self.target.adopt()
            report = self.publisher.publish(now)
        except Exception as exc:
            self._failed(f"{w3c.now()} {str(exc) or type(exc).__name__}")
            raise
        self._failed("")
        return report

    def _failed(self, record: str) -> None:
        """Record why the last publish failed ("" once none did), unless it says so
        already; a ledger that cannot take it (a full disk) leaves the error to tell."""
        with contextlib.suppress(SitemapdError, sqlite3.Error):
            if (self.ledger.cursor(PUBLISH_FAILED_CURSOR) or "") != record:
                self.ledger.set_cursor(PUBLISH_FAILED_CURSOR, record)

    def reader(self, source: ChangelogSource) -> "Reader":
        """Return the change-log reader of `source`, opened on first use.

        Raises SourceError once the engine is closed (a listener racing a reload).
        """
        # The writer reads and a listener thread waits on the same reader.
        with self._readers_lock:
            if self._closed:
                raise SourceError(f"{source.name}: the engine was closed")
            found = self.readers.get(source.name)
            if found is None:
                # The change-log readers load for a site with a change log only: a build
                # of files and URL lists starts faster without them.
                from sitemapd.changelog import open_reader

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
        logs_read = read_access_logs(
            self.config, self.ledger, self.policy, paths, rescan, strict, failed
        )
        refresh = logs_read or refresh
        scans: list[sources.Scan] = []
        for source in self.config.content_sources:
            try:
                scans += self._scans(
                    source, ctx, paths.get(source.name, set()), source.name in rescan
                )
            except SourceError as exc:
                if strict:
                    raise
                failed[source.name] = exc.reason(source.name)
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
            scan.items = set_aside(scan.items, unreadable)
            if partition is not None:
                # Loaded for a partitioned site alone (with hashlib, and OpenSSL's start).
                from sitemapd.publish.partition import owned

                scan.items = owned(scan.items, partition)
        guard = removal_guard(self.config, scans, confirm_removal)
        changes = apply_scans(
            self.ledger,
            self.config,
            scans,
            complete,
            failed,
            strict,
            robots_rules,
            now,
            not reconciling,
            guard,
            progress,
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
                from sitemapd.sources import changelog

                reconciles.append(changelog.reconcile(source, ctx, self.reader(source)))
        if reconciles:
            later = apply_scans(
                self.ledger,
                self.config,
                reconciles,
                complete,
                failed,
                strict,
                robots_rules,
                now,
                True,
                guard,
                progress,
            )
            changes = changes.merged(later)
        quiet = not (changes.changed or changes.moved or rescan or refresh)
        published = None if quiet else self._publish(now)
        report = published or PublishReport()
        if published is not None:
            self.adopting = False
        seconds = time.perf_counter() - started
        log.log(
            logs.INFO if report.written or changes.changed else logs.DEBUG,
            "%s: %d new, %d updated, %d gone, %d invalid; wrote %s (%d bytes) in %.2fs",
            "dry run, not published" if self.publisher.dry_run else "published",
            changes.new,
            changes.updated,
            changes.gone,
            changes.rejected,
            count(len(report.written), "file"),
            report.bytes_written,
            seconds,
        )
        for name in changes.empty_scans:
            failed[name] = "a full scan found nothing: treated as an outage"
        scanned = [s.name for s in scans if s.name not in failed and (s.complete or not s.more)]
        # Access logs read to their end count too: that is what clears a failed read.
        scanned += [name for name in access_logs(self.config, paths, rescan) if name not in failed]
        more = {s.name for s in scans if s.more and s.name not in failed}
        configured = {source.name for source in self.config.content_sources}
        held = {h.source: h.reason() for h in self.ledger.holds() if h.source in configured}
        return BuildResult(
            changes, report, seconds, failed, sorted(set(scanned)), more, deferred, unreadable, held
        )
