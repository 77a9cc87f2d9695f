"""What every source shares: the shape of a scan and how a bad item is reported."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..observation import Item, Rejected

log = logging.getLogger("sitemapd.sources")


def rejected(source: str, item: str, reason: str) -> Rejected:
    """Log why `item` cannot become a sitemap URL and return it as a Rejected item."""
    log.warning("%s: skipped %s: %s", source, item, reason)
    return Rejected(source, item, reason)


@dataclass
class Scan:
    """Items from one source; `complete` when they describe everything it holds."""

    name: str
    items: Iterator[Item]
    complete: bool
    cursors: dict[str, str] = field(default_factory=dict)
