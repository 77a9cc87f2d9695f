"""Update feeds: the Atom 1.0 and RSS 2.0 bytes of one feed page, rendered with feedgen.

Rendering is a pure function of the page: every time feedgen would take from the clock is set
from the page, and the generator element carries no version, so the same page gives the same
bytes on any day and after any upgrade.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from feedgen.ext.base import BaseEntryExtension, BaseExtension
from feedgen.feed import FeedGenerator
from lxml import etree

from sitemapd.render.feedpage import ATOM_NS, FeedEntry, FeedPage, xml_text

ATOM_TYPE = "application/atom+xml"
RSS_TYPE = "application/rss+xml"
GENERATOR = "sitemapd"


def atom(page: FeedPage) -> bytes:
    """Return the Atom 1.0 document of `page`; raises ValueError for a time without a zone."""
    generator = _generator(page, ATOM_TYPE)
    if page.subtitle:
        generator.subtitle(xml_text(page.subtitle))
    for entry in page.entries:
        item = generator.add_entry(order="append")
        item.updated(_utc(entry.updated))
        _fill(item, entry)
    return bytes(generator.atom_str(pretty=True))


def rss(page: FeedPage) -> bytes:
    """Return the RSS 2.0 document of `page`; raises ValueError for a time without a zone."""
    generator = _generator(page, RSS_TYPE)
    generator.description(xml_text(page.subtitle or "") or _title(page))
    generator.pubDate(_utc(page.updated))
    for entry in page.entries:
        # RSS has no updated time: the item's pubDate carries the lastmod. Atom gets no
        # <published>, which would claim the lastmod as the page's first publication.
        item = generator.add_entry(order="append")
        item.pubDate(_utc(entry.updated))
        _fill(item, entry)
    return bytes(generator.rss_str(pretty=True))


def _links(page: FeedPage) -> list[tuple[str, str]]:
    """Return the page's `(rel, href)` links beyond self and alternate: hubs, then paging."""
    paging = (
        ("first", page.first_url),
        ("previous", page.previous_url),
        ("next", page.next_url),
        ("last", page.last_url),
    )
    return [("hub", hub) for hub in page.hubs] + [(rel, url) for rel, url in paging if url]


class _PageLinks(BaseExtension):  # type: ignore[misc]
    """Writes hub and paging links: feedgen's RSS output has no place for them, and one
    writer for both formats keeps the two documents' links the same."""

    def __init__(self, extra: list[tuple[str, str]]) -> None:
        self._extra = extra

    def extend_atom(self, feed: etree._Element) -> etree._Element:
        # feedgen declares the Atom namespace as a plain xmlns attribute, so its elements
        # (and ours, to match) carry no namespace inside lxml.
        for rel, href in self._extra:
            etree.SubElement(feed, "link", href=href, rel=rel)
        return feed

    def extend_rss(self, feed: etree._Element) -> etree._Element:
        channel = feed[0]  # feedgen writes <channel> as the only child of <rss>
        for rel, href in self._extra:
            etree.SubElement(channel, f"{{{ATOM_NS}}}link", href=href, rel=rel)
        return feed


class _EntryAlternate(BaseEntryExtension):  # type: ignore[misc]
    """Restores the rel="alternate" that feedgen 1.0 drops from Atom entry links."""

    def extend_atom(self, entry: etree._Element) -> etree._Element:
        for link in entry.iterfind("link"):
            link.set("rel", "alternate")
        return entry


def _generator(page: FeedPage, self_type: str) -> Any:
    """Return a FeedGenerator holding the feed-level fields both formats share."""
    generator = FeedGenerator()
    generator.register_extension(
        "sitemapd", functools.partial(_PageLinks, _links(page)), _EntryAlternate
    )
    generator.id(page.first_url or page.self_url)
    generator.title(_title(page))
    generator.author(name=_title(page))
    # The last link given becomes the RSS <link>: the site, not this file.
    generator.link(
        [
            {"href": page.self_url, "rel": "self", "type": self_type},
            {"href": page.site_url, "rel": "alternate"},
        ]
    )
    generator.updated(_utc(page.updated))
    generator.generator(GENERATOR)
    return generator


def _fill(item: Any, entry: FeedEntry) -> None:
    """Set the title, link and id of feedgen `item` from `entry`."""
    item.title(xml_text(entry.title or "").strip() or entry.loc)
    item.link(href=entry.loc, rel="alternate")
    item.guid(entry.loc, permalink=True)


def _title(page: FeedPage) -> str:
    """Return the feed title, or the site's host when the configured one is blank."""
    return xml_text(page.title).strip() or urlsplit(page.site_url).hostname or page.site_url


def _utc(value: str) -> datetime:
    """Return the UTC datetime of a W3C date-time; raises ValueError without a time zone."""
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"datetime without a time zone: {value!r}")
    return parsed.astimezone(UTC)
