"""The engine: scan sources, apply to the ledger, publish. `build` and the daemon share it."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain

from . import robots, sources, w3c
from .config import Config
from .errors import SourceError
from .ledger import ALLOW_ALL, ChangeSet, Ledger, RobotsRules
from .observation import Item
from .publish import Publisher, PublishReport
from .shards import Limits
from .urls import URLPolicy

log = logging.getLogger(__name__)


@dataclass
class BuildResult:
    changes: ChangeSet
    report: PublishReport
    seconds: float
    # Sources (or robots.txt) that could not be read, with why; what they gave is kept.
    failed: dict[str, str] = field(default_factory=dict)
    # Sources read in full.
    scanned: list[str] = field(default_factory=list)


class Engine:
    """One site's ledger and publisher, opened for the lifetime of a build or daemon."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.policy = URLPolicy(config.site.origin)
        limits = Limits(config.sitemap.max_urls, config.sitemap.max_bytes)
        self.ledger = Ledger(config.ledger_path, limits)
        self.publisher = Publisher(config, self.ledger)

    def close(self) -> None:
        """Close the ledger."""
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

    def build(self, now: str | None = None) -> BuildResult:
        """Scan every source in full, apply in one transaction, publish; return it all.

        Raises SourceError when a source cannot be read (nothing is applied then).
        """
        return self.update({}, {source.name for source in self.config.sources}, now=now)

    def update(
        self,
        paths: Mapping[str, set[str]],
        rescan: set[str],
        *,
        now: str | None = None,
        strict: bool = True,
    ) -> BuildResult:
        """Re-read `paths` of some sources and all of the `rescan` ones; apply and publish.

        With `strict` off, a source that cannot be read (a missing root) is logged and
        left as it was while the others proceed.
        """
        started = time.perf_counter()
        now = now or w3c.now()
        skip = self.config.site.not_content
        scans: list[sources.Scan] = []
        failed: dict[str, str] = {}
        for source in self.config.sources:
            try:
                if source.name in rescan:
                    scans.append(sources.scan(source, self.policy, self.ledger, skip))
                elif paths.get(source.name):
                    scans.append(
                        sources.observe(source, self.policy, self.ledger, skip, paths[source.name])
                    )
            except SourceError as exc:
                if strict:
                    raise
                failed[source.name] = str(exc)
                log.error("%s", exc)
        # The ledger reads both at the end of the transaction, after every item: a scan
        # that fails part-way (below) withdraws its claim to completeness and its cursor.
        complete = [scan.name for scan in scans if scan.complete]
        cursors = {k: v for sc in scans for k, v in sc.cursors.items()}
        streams = (
            sc.items if strict else self._soft(sc, complete, cursors, failed) for sc in scans
        )
        items: Iterator[Item] = chain.from_iterable(streams)
        changes = self.ledger.apply(
            items,
            complete=complete,
            robots=self.robots_rules(),
            cursors=cursors,
            now=now,
            configured=[source.name for source in self.config.sources],
        )
        report = self.publisher.publish(now)
        seconds = time.perf_counter() - started
        log.log(
            logging.INFO if report.written or changes.changed else logging.DEBUG,
            "published: %d new, %d updated, %d gone, %d invalid; "
            "wrote %d files (%d bytes) in %.2fs",
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
        scanned = [s.name for s in scans if s.name in complete and s.name not in failed]
        return BuildResult(changes, report, seconds, failed, scanned)

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
