"""Which updates the feeds hold: every update since the crawlers' last fetch, paged.

Search engines crawl a big sitemap rarely and a small feed often; the feed should hold
every update a crawler has not fetched yet. The window starts at the oldest crawler's
last successful fetch of a feed, but never later than `min_window` ago, so a forged
crawler request can only shorten it that far. The first page holds `max_entries`; when
more updates remain that some crawler has not fetched, they go on RFC 5005 pages
(`rel="next"`) instead of being dropped, up to `max_pages`.
"""

from __future__ import annotations

import logging

from . import w3c
from .config import FeedConfig
from .ledger import BASELINE_CURSOR, Ledger
from .render.feeds import FeedEntry

log = logging.getLogger(__name__)


def window_start(ledger: Ledger, feed: FeedConfig, now: str) -> tuple[str, str | None]:
    """Return `(start of the window, oldest crawler fetch or None)`."""
    floor = w3c.format_epoch(w3c.to_epoch(now) - feed.min_window)
    fetches = ledger.crawler_fetches()
    oldest = min(fetches.values()) if fetches else None
    return (min(floor, oldest) if oldest else floor), oldest


def feed_pages(ledger: Ledger, feed: FeedConfig, now: str) -> list[list[FeedEntry]]:
    """Return the entries of each feed page, newest change first; page 1 always exists."""
    start, oldest = window_start(ledger, feed, now)
    baseline = int(ledger.cursor(BASELINE_CURSOR) or 0)
    limit = feed.max_entries * feed.max_pages
    entries: list[FeedEntry] = []
    listed: set[str] = set()
    for seq, at, loc, title, lastmod in ledger.recent_changes(ledger.first_seq_since(start) - 1):
        if loc in listed:
            continue  # an older change of a URL already listed with its latest one
        # Past the first page, only updates some crawler has not fetched yet are kept.
        unfetched = oldest is not None and at > oldest and seq > baseline
        if len(entries) >= feed.max_entries and not unfetched:
            break
        if len(entries) >= limit:
            log.warning(
                "more than %d unfetched updates: the oldest leave the feed (raise feed.max_pages)",
                limit,
            )
            break
        listed.add(loc)
        entries.append(FeedEntry(loc, title, lastmod))
    size = feed.max_entries
    return [entries[n : n + size] for n in range(0, len(entries), size)] or [[]]
