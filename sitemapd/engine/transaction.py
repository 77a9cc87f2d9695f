"""A batch's scans applied to the ledger: one transaction each, guarded against mass
removals, keeping what a source gave before it failed part-way."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain
from typing import TYPE_CHECKING

from sitemapd import sources
from sitemapd.config import Config
from sitemapd.config.sources import ChangelogSource
from sitemapd.core import logs
from sitemapd.core.observation import Item, Unreadable
from sitemapd.engine.progress import Progress
from sitemapd.errors import SourceError
from sitemapd.ledger.model import ChangeSet, RobotsRules
from sitemapd.ledger.removals import RemovalGuard

if TYPE_CHECKING:
    from sitemapd.ledger.ledger import Ledger

log = logs.Logger("sitemapd.engine")


def removal_guard(config: Config, scans: list[sources.Scan], confirm: bool) -> RemovalGuard:
    """Return the mass-removal guard of a batch: files and URL lists are guarded (a
    change log's deletions are statements of the CMS, not a half-copied folder)."""
    guarded = {
        source.name: frozenset(k for sc in scans if sc.name == source.name for k in sc.cursors)
        for source in config.content_sources
        if not isinstance(source, ChangelogSource)
    }
    site = config.site
    return RemovalGuard(guarded, site.max_removal, site.removal_grace, confirm, site.removal_window)


def apply_scans(
    ledger: Ledger,
    config: Config,
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
    streams = (sc.items if strict else _soft(sc, complete, cursors, failed) for sc in scans)
    configured = [source.name for source in config.content_sources]
    changes = ledger.apply(
        progress.count(chain.from_iterable(streams)),
        complete=complete,
        robots=robots_rules,
        cursors=cursors,
        now=now,
        configured=configured if retire else None,
        complete_before=earlier,
        guard=guard,
        present={scan.name: scan.present for scan in scans if scan.present is not None},
    )
    complete += earlier
    return changes


def _soft(
    scan: sources.Scan, complete: list[str], cursors: dict[str, str], failed: dict[str, str]
) -> Iterator[Item]:
    """Yield the scan's items; if reading fails part-way, log it and keep what came."""
    try:
        yield from scan.items
    except SourceError as exc:
        log.error("%s", exc)
        failed[scan.name] = exc.reason(scan.name)
        if scan.name in complete:
            complete.remove(scan.name)
        for key in scan.cursors:
            cursors.pop(key, None)


def set_aside(items: Iterator[Item], unreadable: dict[str, dict[str, str]]) -> Iterator[Item]:
    """Yield `items` but the Unreadable ones, which go into `unreadable` to be read again:
    a file that cannot be read for now is neither invalid nor gone."""
    for item in items:
        if isinstance(item, Unreadable):
            log.warning("%s: cannot read %s for now (%s)", item.source, item.item, item.reason)
            unreadable.setdefault(item.source, {})[item.item] = item.reason
        else:
            yield item
