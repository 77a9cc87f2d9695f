"""The engine: scan sources, apply to the ledger, publish. `build` and the daemon share it."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import chain

from . import robots, sources, w3c
from .config import Config
from .errors import SourceError
from .ledger import ChangeSet, Ledger, RobotsRules
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

    def robots_rules(self) -> RobotsRules | None:
        """Return the site's robots.txt rules, or None when no robots.txt is configured."""
        path = self.config.site.robots_txt
        if path is None:
            return None
        try:
            return robots.rules(path.read_bytes())
        except FileNotFoundError:
            return robots.rules(b"")
        except OSError as exc:
            raise SourceError(f"cannot read robots.txt {path} ({exc.strerror})") from exc

    def build(self, now: str | None = None) -> BuildResult:
        """Scan every source, apply what changed in one transaction, publish; return it all."""
        started = time.perf_counter()
        now = now or w3c.now()
        site = self.config.site
        skip = (str(site.output_dir), str(site.state_dir))
        scans = [sources.scan(s, self.policy, self.ledger, skip) for s in self.config.sources]
        complete = [
            src.name for src, sc in zip(self.config.sources, scans, strict=True) if sc.complete
        ]
        cursors = {k: v for sc in scans for k, v in sc.cursors.items()}
        items: Iterator[Item] = chain.from_iterable(sc.items for sc in scans)
        changes = self.ledger.apply(
            items, complete=complete, robots=self.robots_rules(), cursors=cursors, now=now
        )
        report = self.publisher.publish(now)
        seconds = time.perf_counter() - started
        log.info(
            "build: %d new, %d updated, %d gone, %d rejected; wrote %d files (%d bytes) in %.2fs",
            changes.new,
            changes.updated,
            changes.gone,
            changes.rejected,
            len(report.written),
            report.bytes_written,
            seconds,
        )
        return BuildResult(changes, report, seconds)
