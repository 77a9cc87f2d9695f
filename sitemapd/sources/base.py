"""What every source shares: the shape of a scan and how a bad item is reported."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ..observation import Item, Rejected

log = logging.getLogger("sitemapd.sources")


def skipped_below(folder: Path, skip: tuple[str, ...]) -> set[str]:
    """Return the real paths of the `skip` folders that can hold content of `folder`.

    A skipped folder that holds `folder` itself (sitemaps written into the web root)
    skips nothing: there only sitemapd's own files are left out, as dotfiles or by name.
    """
    inside = os.path.realpath(folder) + os.sep
    return {
        real
        for real in (os.path.realpath(path) for path in skip)
        if not inside.startswith(real + os.sep)
    }


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
