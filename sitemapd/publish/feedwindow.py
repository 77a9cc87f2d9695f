"""Which updates the feeds hold: every update since the crawlers' last fetch, paged.

Search engines crawl a big sitemap rarely and a small feed often; the feed should hold
every update a crawler has not fetched yet. The first page holds the newest updates since
the oldest crawler's last fetch of it, but never fewer than those of the last
`min_window`, so a forged crawler request can shorten the window only that far. At most
`max_entries` fit on it; older updates of the window move to RFC 5005 pages (`rel="next"`)
instead of being dropped.

Later pages are numbered in the order they open and never reshuffle: each holds the
latest changes whose journal seq is in its range, so an update moves an entry to the
first page and a removal takes it out, but no entry moves between older pages. The newest
later page takes entries until it holds `max_entries`, then a new one opens. A page goes
when it is empty, or when all of it is older than `min_window` and every crawler that
reads the feed has fetched it since it last took entries (or read its entries on the
first page before they moved).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Collection
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sitemapd.config.feeds import FeedConfig
from sitemapd.core import logs, w3c
from sitemapd.ledger.model import BASELINE_CURSOR, FeedPageRange
from sitemapd.render.feedpage import FeedEntry
from sitemapd.render.parts import part_number

if TYPE_CHECKING:
    from sitemapd.ledger.ledger import Ledger

log = logs.Logger("sitemapd.feedwindow")

NEXT_PAGE_CURSOR = "feed_next_page"

# (journal seq, journal time, entry) of one URL's latest change.
_Item = tuple[int, str, FeedEntry]


def feed_page_of(feed: FeedConfig | None, path: str) -> int | None:
    """Return the page of either feed that URL path `path` names (1 for a feed itself)."""
    if feed is None:
        return None
    for first, url in ((feed.atom, feed.atom_url), (feed.rss, feed.rss_url)):
        first_path = urlsplit(url).path
        if path == first_path:
            return 1
        folder, _, name = path.rpartition("/")
        if folder == first_path.rpartition("/")[0]:
            number = part_number(first, name)
            if number is not None and number > 1:
                return number
    return None


def feed_file_page(feed: FeedConfig, name: str) -> int | None:
    """Return the page of either feed that output file `name` is (1 for a feed itself)."""
    for first in (feed.atom, feed.rss):
        number = part_number(first, name)
        if number is not None:
            return number
    return None


def feed_pages(
    ledger: Ledger, feed: FeedConfig, crawlers: Collection[str], now: str
) -> list[tuple[int, list[FeedEntry]]]:
    """Return `(page number, entries)` of each feed page: the first page, then the later
    ones newest first; records pages opened, filled and closed in the ledger."""
    floor = w3c.format_epoch(w3c.to_epoch(now) - feed.min_window)
    # Fetches by crawlers no longer configured hold nothing open.
    fetches = {key: at for key, at in ledger.crawler_fetches().items() if key[0] in crawlers}
    readers = {crawler: at for (crawler, page), at in fetches.items() if page == 1}
    start = min(floor, *readers.values()) if readers else floor
    recorded = ledger.feed_pages()
    ranges = recorded
    head_floor = ranges[-1].high_seq if ranges else 0
    scan_from = ranges[0].low_seq if ranges else ledger.first_seq_since(start) - 1
    head: list[_Item] = []
    older: dict[int, list[_Item]] = {r.number: [] for r in ranges}
    highs = [r.high_seq for r in ranges]
    skipped = False
    listed: set[str] = set()
    for seq, at, loc, title, lastmod in ledger.recent_changes(scan_from):
        if loc in listed:
            continue  # an older change of a URL already listed with its latest one
        listed.add(loc)
        item = (seq, at, FeedEntry(loc, title, lastmod))
        if seq > head_floor:
            if at < start:
                skipped = True  # every reader fetched it on the first page
            else:
                head.append(item)
            continue
        where = bisect.bisect_left(highs, seq)
        if where < len(ranges) and ranges[where].low_seq < seq:
            older[ranges[where].number].append(item)
    if len(head) > feed.max_entries:
        # The first build's URLs are the site's baseline, not updates: they fill the room
        # the updates leave, newest lastmod first (the order of a list's lines or of a
        # folder's walk says nothing of their age), and no page takes the rest.
        baseline = int(ledger.cursor(BASELINE_CURSOR) or 0)
        updates = [item for item in head if item[0] > baseline]
        room = max(feed.max_entries - len(updates), 0)
        first = heapq.nlargest(
            room, (item for item in head if item[0] <= baseline), key=lambda i: i[2].updated
        )
        head, overflow = (updates + first)[: feed.max_entries], updates[feed.max_entries :]
        moving = list(reversed(overflow))
        ranges = _move_to_pages(ledger, feed, ranges, older, moving, skipped, now)
    kept = _prune(feed, ranges, older, fetches, readers, floor)
    if kept != recorded:
        ledger.save_feed_pages(kept)
    pages = [(1, head)] + [(r.number, older[r.number]) for r in reversed(kept)]
    # Newest first by the date each entry shows; ties keep the journal order.
    return [
        (number, sorted((e for _, _, e in items), key=lambda e: e.updated, reverse=True))
        for number, items in pages
    ]


def _move_to_pages(
    ledger: Ledger,
    feed: FeedConfig,
    ranges: list[FeedPageRange],
    older: dict[int, list[_Item]],
    moving: list[_Item],
    skipped: bool,
    now: str,
) -> list[FeedPageRange]:
    """Put `moving` (oldest first) on the newest later page while it has room, then on
    new pages; return the pages, oldest first."""
    ranges = list(ranges)
    size = feed.max_entries
    newest = ranges[-1] if ranges else None
    # Widening the newest page's range is only sound when nothing between its top and
    # the first moving entry was left out of the feed.
    if moving and newest is not None and not skipped and len(older[newest.number]) < size:
        room = size - len(older[newest.number])
        taken, moving = moving[:room], moving[room:]
        older[newest.number][:0] = reversed(taken)
        ranges[-1] = newest._replace(high_seq=taken[-1][0], filled_at=now)
    number = max(int(ledger.cursor(NEXT_PAGE_CURSOR) or 2), 2)
    for at in range(0, len(moving), size):
        chunk = moving[at : at + size]
        ranges.append(FeedPageRange(number, chunk[0][0] - 1, chunk[-1][0], now, now))
        older[number] = list(reversed(chunk))
        number += 1
    if moving:
        ledger.set_cursor(NEXT_PAGE_CURSOR, str(number))
    return ranges


def _prune(
    feed: FeedConfig,
    ranges: list[FeedPageRange],
    older: dict[int, list[_Item]],
    fetches: dict[tuple[str, int], str],
    readers: dict[str, str],
    floor: str,
) -> list[FeedPageRange]:
    """Return the later pages still needed, oldest first."""

    def read_by(crawler: str, page: FeedPageRange, newest: str) -> bool:
        fetched = fetches.get((crawler, page.number))
        if fetched is not None and fetched > page.filled_at:
            return True
        # Opened after the crawler's fetch of the first page, which then held them all.
        first = readers[crawler]
        return page.opened_at > first and newest < first

    kept = []
    for page in ranges:
        items = older[page.number]
        if not items:
            continue
        newest = max(at for _, at, _ in items)
        if newest < floor and all(read_by(crawler, page, newest) for crawler in readers):
            continue
        kept.append(page)
    limit = feed.max_pages - 1
    if len(kept) > limit:
        log.warning(
            "%d feed pages of updates crawlers have not fetched: the oldest %d leave the "
            "feed (raise feed.max_pages)",
            len(kept) + 1,
            len(kept) - limit,
        )
        kept = kept[len(kept) - limit :]
    return kept
