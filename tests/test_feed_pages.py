"""Property: feed pages lose no update a crawler has not read, and never reshuffle.

Random updates, removals, waits and crawler fetches of whichever pages exist run against a
real ledger. A model remembers which change of each URL every crawler has read (the
entries of each page it fetched, as published then) and checks, after every publish:
every update of the last `min_window`, and every update listed since a crawler began
reading the feed that it has not read, is on a page; no URL is listed twice or gone;
pages hold at most `max_entries`; an unchanged entry on a later page stays on that page
while it exists.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from sitemapd.config.feeds import FeedConfig
from sitemapd.core import w3c
from sitemapd.core.observation import Gone, Observation
from sitemapd.ledger.ledger import Ledger
from sitemapd.ledger.shards import Limits
from sitemapd.publish.feedwindow import feed_pages

ROOT = "https://example.com/"
T0 = w3c.to_epoch("2026-01-01T00:00:00+00:00")
CRAWLERS = ("googlebot", "bingbot")
FEED = FeedConfig(
    title="T",
    atom="atom.xml",
    rss="rss.xml",
    atom_url=ROOT + "atom.xml",
    rss_url=ROOT + "rss.xml",
    min_window=7200.0,
    max_entries=3,
    max_pages=10_000,
)
URLS = 8

steps = st.lists(
    st.one_of(
        st.tuples(st.just("update"), st.integers(0, URLS - 1)),
        st.tuples(st.just("remove"), st.integers(0, URLS - 1)),
        st.tuples(st.just("fetch"), st.sampled_from(CRAWLERS), st.integers(0, 3)),
        st.tuples(st.just("wait"), st.integers(10, 300)),
    ),
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(steps=steps)
# A crawler that reads only the first page, while older updates wait on a later one.
@example(steps=[("update", n) for n in range(4)] + [("fetch", "googlebot", 0), ("wait", 150)])
# A crawler that read a later page before it took in an update the crawler never saw.
@example(
    steps=[("fetch", "googlebot", 0)]
    + [("update", n) for n in range(4)]
    + [("fetch", "googlebot", 1), ("update", 4), ("wait", 150)]
)
def test_no_unread_update_is_lost_and_pages_never_reshuffle(steps: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        ledger = Ledger(Path(folder) / "ledger.db", Limits(50_000, 52_428_800))
        try:
            run(ledger, steps)
        finally:
            ledger.close()


def run(ledger: Ledger, steps: list[tuple]) -> None:
    minute = 0
    counter = 0

    def now() -> str:
        return w3c.format_epoch(T0 + minute * 60)

    # The site as it was: the first build's URLs are not updates.
    ledger.apply([Observation(f"{ROOT}{n}", "s", f"v0-{n}", None) for n in range(URLS)], now=now())
    live = {f"{ROOT}{n}" for n in range(URLS)}
    version = {loc: 0 for loc in live}
    changed_at: dict[str, float] = {}  # minute of each URL's latest update
    read: dict[str, set[tuple[str, int]]] = {crawler: set() for crawler in CRAWLERS}
    readers: set[str] = set()
    where: dict[str, tuple[int, int]] = {}  # loc -> (page, version) on a later page
    pages = feed_pages(ledger, FEED, CRAWLERS, now())
    for step in steps:
        minute += step[1] if step[0] == "wait" else 1
        if step[0] == "update":
            loc = f"{ROOT}{step[1]}"
            counter += 1
            ledger.apply([Observation(loc, "s", f"v{counter}", None)], now=now())
            live.add(loc)
            version[loc] = counter
            changed_at[loc] = minute
        elif step[0] == "remove":
            loc = f"{ROOT}{step[1]}"
            ledger.apply([Gone(loc, "s")], now=now())
            live.discard(loc)
        elif step[0] == "fetch":
            crawler, number = step[1], step[2]
            if number >= len(pages):
                continue
            page_number, entries = pages[number]
            read[crawler] |= {(e.loc, version[e.loc]) for e in entries}
            ledger.record_crawls({(crawler, page_number): now()}, [], {})
            if page_number == 1 and crawler not in readers:
                # A new reader is owed what the feed holds now, not what left it before.
                listed_now = {e.loc for _, page in pages for e in page}
                read[crawler] |= {(loc, version[loc]) for loc in live - listed_now}
                readers.add(crawler)
        pages = feed_pages(ledger, FEED, CRAWLERS, now())

        listed = [(number, e.loc) for number, entries in pages for e in entries]
        locs = [loc for _, loc in listed]
        assert len(locs) == len(set(locs)), "a URL listed twice"
        assert set(locs) <= live, "a removed URL listed"
        assert all(len(entries) <= FEED.max_entries for _, entries in pages)
        assert pages[0][0] == 1
        for loc in live & changed_at.keys():
            recent = minute - changed_at[loc] <= FEED.min_window / 60
            unread = any((loc, version[loc]) not in read[c] for c in readers)
            if recent or unread:
                assert loc in locs, f"{loc} changed at minute {changed_at[loc]} is not listed"
        for number, loc in listed:
            before = where.get(loc)
            if before is not None and before[1] == version[loc]:
                assert before[0] == number, f"{loc} moved from page {before[0]} to {number}"
        where = {loc: (number, version[loc]) for number, loc in listed if number != 1}
