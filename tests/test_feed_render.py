"""Atom and RSS update feeds, read back by real consumers: the Atom RELAX NG schema, feedparser."""

from __future__ import annotations

import calendar
import os
import subprocess
import sys
import time
from functools import cache
from typing import Any

import feedparser
import pytest
from conftest import REPO, SCHEMAS
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from sitemapd.render.feedpage import FeedEntry, FeedPage, xml_text
from sitemapd.render.feeds import atom, rss

ATOM_RNG = SCHEMAS / "atom.rng"
A = "{http://www.w3.org/2005/Atom}"

SITE = "https://example.com/"
SELF = "https://example.com/feeds/updates.atom"
HUBS = ("https://hub.example.net/", "https://pubsubhubbub.appspot.com/")
HOSTILE = (
    "Fish & Chips <b>\"bold\"</b> 'q' caf\u00e9 \u65e5\u672c \U0001f600 bell\x07 nul\x00 esc\x1b"
)
HOSTILE_URL = "https://example.com/search?q=fish&lang=en&x='1'"

ENTRIES = (
    FeedEntry("https://example.com/news/c.html", "Third story", "2026-11-03T10:00:00+00:00"),
    FeedEntry("https://example.com/news/a.html", "First story", "2026-11-02T09:30:15+00:00"),
    FeedEntry("https://example.com/news/b.html", None, "2026-11-01T08:00:00+00:00"),
)


@cache
def _atom_schema() -> etree.RelaxNG:
    return etree.RelaxNG(etree.parse(str(ATOM_RNG), etree.XMLParser(no_network=True)))


def assert_valid_atom(data: bytes) -> etree._Element:
    """Validate `data` against RFC 4287's schema and return its root."""
    root = etree.fromstring(data, etree.XMLParser(no_network=True, resolve_entities=False))
    schema = _atom_schema()
    assert schema.validate(root), schema.error_log
    return root


def parse(data: bytes) -> Any:
    """Return feedparser's reading of `data`, which must be free of any complaint."""
    parsed = feedparser.parse(data)
    assert parsed.bozo == 0, parsed.get("bozo_exception")
    return parsed


def epoch(canonical: str) -> int:
    return calendar.timegm(time.strptime(canonical, "%Y-%m-%dT%H:%M:%S+00:00"))


def make_page(entries: tuple[FeedEntry, ...] = ENTRIES, **fields: Any) -> FeedPage:
    updated = entries[0].updated if entries else "2026-10-31T00:00:00+00:00"
    values: dict[str, Any] = {
        "title": "Example News",
        "self_url": SELF,
        "site_url": SITE,
        "entries": entries,
        "updated": updated,
    }
    values.update(fields)
    return FeedPage(**values)


PAGED = make_page(
    self_url="https://example.com/feeds/updates-2.atom",
    hubs=HUBS,
    first_url=SELF,
    previous_url=SELF,
    next_url="https://example.com/feeds/updates-3.atom",
    last_url="https://example.com/feeds/updates-9.atom",
    subtitle="Every change, newest first",
)
HOSTILE_PAGE = make_page(
    (
        FeedEntry(HOSTILE_URL, HOSTILE, "2026-11-02T00:00:00+00:00"),
        FeedEntry("https://example.com/blank", " \x01\x02 ", "2026-11-01T00:00:00+00:00"),
    ),
    title=HOSTILE,
    subtitle=HOSTILE,
    self_url="https://example.com/feed?format=atom&page=1",
)
CLEAN_HOSTILE = xml_text(HOSTILE)


def links_by_rel(links: list[Any]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for link in links:
        found.setdefault(link["rel"], []).append(link["href"])
    return found


@pytest.mark.parametrize(
    "page",
    [make_page(), make_page(()), PAGED, HOSTILE_PAGE],
    ids=["plain", "empty", "paged-with-hubs", "hostile"],
)
def test_atom_validates_against_rfc4287_schema(page: FeedPage) -> None:
    assert_valid_atom(atom(page))


def test_atom_entries_read_back_in_order() -> None:
    parsed = parse(atom(make_page()))
    assert parsed.version == "atom10"
    assert [e.id for e in parsed.entries] == [e.loc for e in ENTRIES]
    assert [e.link for e in parsed.entries] == [e.loc for e in ENTRIES]
    assert [e.links[0]["rel"] for e in parsed.entries] == ["alternate"] * 3
    assert [e.title for e in parsed.entries] == ["Third story", "First story", ENTRIES[2].loc]
    assert [calendar.timegm(e.updated_parsed) for e in parsed.entries] == [
        epoch(e.updated) for e in ENTRIES
    ]
    # The lastmod is not the page's first publication.
    assert all("published" not in e for e in parsed.entries)


def test_atom_feed_fields_and_paging_links() -> None:
    data = atom(PAGED)
    feed = parse(data).feed
    assert feed.id == SELF  # the first page's URL: every page shares one identity
    assert feed.title == "Example News"
    assert feed.subtitle == "Every change, newest first"
    assert feed.author == "Example News"
    assert calendar.timegm(feed.updated_parsed) == epoch(ENTRIES[0].updated)
    assert links_by_rel(feed.links) == {
        "self": ["https://example.com/feeds/updates-2.atom"],
        "alternate": [SITE],
        "hub": list(HUBS),
        "first": [SELF],
        "previous": [SELF],
        "next": ["https://example.com/feeds/updates-3.atom"],
        "last": ["https://example.com/feeds/updates-9.atom"],
    }
    self_link = next(link for link in feed.links if link["rel"] == "self")
    assert self_link["type"] == "application/atom+xml"


def test_atom_without_paging_has_only_self_and_alternate() -> None:
    root = assert_valid_atom(atom(make_page()))
    assert [(e.get("rel"), e.get("href")) for e in root.findall(f"{A}link")] == [
        ("self", SELF),
        ("alternate", SITE),
    ]
    assert root.findtext(f"{A}id") == SELF
    assert root.find(f"{A}subtitle") is None
    # feedparser reads a missing rel as "alternate"; check the attribute itself.
    assert [(e.get("rel"), e.get("href")) for e in root.iterfind(f"{A}entry/{A}link")] == [
        ("alternate", e.loc) for e in ENTRIES
    ]


def test_rss_items_read_back_in_order() -> None:
    parsed = parse(rss(make_page()))
    assert parsed.version == "rss20"
    assert [e.id for e in parsed.entries] == [e.loc for e in ENTRIES]
    assert [e.link for e in parsed.entries] == [e.loc for e in ENTRIES]
    assert [e.title for e in parsed.entries] == ["Third story", "First story", ENTRIES[2].loc]
    assert [calendar.timegm(e.published_parsed) for e in parsed.entries] == [
        epoch(e.updated) for e in ENTRIES
    ]


def test_rss_channel_fields_and_paging_links() -> None:
    page = make_page(
        self_url="https://example.com/feeds/updates-2.rss",
        hubs=HUBS,
        first_url="https://example.com/feeds/updates.rss",
        next_url="https://example.com/feeds/updates-3.rss",
    )
    data = rss(page)
    feed = parse(data).feed
    assert feed.link == SITE
    assert feed.title == "Example News"
    assert feed.subtitle == "Example News"  # <description> is required: the title stands in
    assert calendar.timegm(feed.updated_parsed) == epoch(page.updated)  # lastBuildDate
    assert calendar.timegm(feed.published_parsed) == epoch(page.updated)  # pubDate
    rels = links_by_rel(feed.links)
    assert rels["self"] == ["https://example.com/feeds/updates-2.rss"]
    assert rels["hub"] == list(HUBS)
    assert rels["first"] == ["https://example.com/feeds/updates.rss"]
    assert rels["next"] == ["https://example.com/feeds/updates-3.rss"]
    assert "previous" not in rels
    assert "last" not in rels
    channel = etree.fromstring(data).find("channel")
    assert channel is not None
    assert [g.get("isPermaLink") for g in channel.iterfind("item/guid")] == ["true"] * 3
    self_link = channel.find(f"{A}link[@rel='self']")
    assert self_link is not None
    assert self_link.get("type") == "application/rss+xml"


def test_rss_description_is_the_subtitle_when_given() -> None:
    channel = etree.fromstring(rss(PAGED)).find("channel")
    assert channel is not None
    assert channel.findtext("description") == "Every change, newest first"


def test_empty_feeds_are_valid() -> None:
    page = make_page(())
    root = assert_valid_atom(atom(page))
    assert root.findtext(f"{A}updated") == "2026-10-31T00:00:00+00:00"
    assert root.find(f"{A}entry") is None
    for data in (atom(page), rss(page)):
        assert parse(data).entries == []


def test_hostile_titles_and_urls_round_trip() -> None:
    assert "\x00" not in CLEAN_HOSTILE
    assert "\x07" not in CLEAN_HOSTILE
    assert "&" in CLEAN_HOSTILE
    assert "\U0001f600" in CLEAN_HOSTILE
    atom_data = atom(HOSTILE_PAGE)
    root = assert_valid_atom(atom_data)
    assert root.findtext(f"{A}title") == CLEAN_HOSTILE
    assert root.findtext(f"{A}entry/{A}title") == CLEAN_HOSTILE
    for data in (atom_data, rss(HOSTILE_PAGE)):
        parsed = parse(data)
        assert parsed.feed.title == CLEAN_HOSTILE
        assert parsed.feed.subtitle == CLEAN_HOSTILE
        first, blank = parsed.entries
        assert first.title == CLEAN_HOSTILE
        assert first.link == HOSTILE_URL
        assert first.id == HOSTILE_URL
        # A title that is nothing but control characters and spaces falls back to the URL.
        assert blank.title == "https://example.com/blank"
    assert links_by_rel(parse(atom_data).feed.links)["self"] == [HOSTILE_PAGE.self_url]


def test_blank_feed_title_falls_back_to_the_site_host() -> None:
    page = make_page(title=" \x00 ")
    root = assert_valid_atom(atom(page))
    assert root.findtext(f"{A}title") == "example.com"
    assert root.findtext(f"{A}author/{A}name") == "example.com"
    assert parse(rss(page)).feed.title == "example.com"


def test_times_are_converted_to_utc_and_naive_times_rejected() -> None:
    entry = FeedEntry("https://example.com/x", "x", "2026-11-02T01:30:00+02:00")
    page = make_page((entry,), updated="2026-11-02T01:30:00+02:00")
    root = assert_valid_atom(atom(page))
    assert root.findtext(f"{A}updated") == "2026-11-01T23:30:00+00:00"
    assert root.findtext(f"{A}entry/{A}updated") == "2026-11-01T23:30:00+00:00"
    assert b"<pubDate>Sun, 01 Nov 2026 23:30:00 +0000</pubDate>" in rss(page)
    with pytest.raises(ValueError, match="time zone"):
        atom(make_page(updated="2026-11-02T01:30:00"))
    with pytest.raises(ValueError, match="time zone"):
        rss(make_page((FeedEntry("https://example.com/x", "x", "2026-11-02T01:30:00"),)))


def test_output_is_byte_identical_across_time() -> None:
    before = (atom(PAGED), rss(PAGED))
    time.sleep(1.1)  # feedgen's defaults are whole-second "now" stamps
    assert (atom(PAGED), rss(PAGED)) == before
    atom_generator = etree.fromstring(before[0]).find(f"{A}generator")
    assert atom_generator is not None
    assert (atom_generator.text, atom_generator.keys()) == ("sitemapd", [])
    assert etree.fromstring(before[1]).findtext("channel/generator") == "sitemapd"


def test_output_does_not_depend_on_the_time_zone() -> None:
    script = (
        "import sys\n"
        "from test_feed_render import PAGED\n"
        "from sitemapd.render.feeds import atom, rss\n"
        "sys.stdout.buffer.write(atom(PAGED) + rss(PAGED))\n"
    )
    env = dict(os.environ, TZ="Pacific/Kiritimati")  # UTC+14: any local-time slip shows
    child = subprocess.run(
        [sys.executable, "-c", script],
        cwd=REPO / "tests",  # `-c` puts the working directory on sys.path
        env=env,
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert child.returncode == 0, child.stderr.decode()
    assert child.stdout == atom(PAGED) + rss(PAGED)


def test_a_thousand_entries_render_in_order() -> None:
    entries = tuple(
        FeedEntry(
            f"https://example.com/news/{i}.html", f"Story {i} & more", "2026-11-01T00:00:00+00:00"
        )
        for i in range(1000)
    )
    page = make_page(entries, hubs=HUBS, next_url="https://example.com/feeds/updates-2.atom")
    for render in (atom, rss):
        data = render(page)
        assert [e.link for e in parse(data).entries] == [e.loc for e in entries]


@settings(max_examples=60, deadline=None)
@given(titles=st.lists(st.text(max_size=40), min_size=1, max_size=4))
def test_any_title_gives_a_valid_atom_feed(titles: list[str]) -> None:
    entries = tuple(
        FeedEntry(f"https://example.com/p{i}?a=1&b=2", title, "2026-11-01T00:00:00+00:00")
        for i, title in enumerate(titles)
    )
    root = assert_valid_atom(atom(make_page(entries)))
    assert [e.findtext(f"{A}title") for e in root.iterfind(f"{A}entry")] == [
        xml_text(t).strip() or e.loc for t, e in zip(titles, entries, strict=True)
    ]
    etree.fromstring(rss(make_page(entries)))
