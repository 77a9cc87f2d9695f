"""`[feed]` and `[news]`: the update feeds and the Google News sitemap."""

from __future__ import annotations

import re
from typing import NamedTuple

from sitemapd.config.site import SiteConfig
from sitemapd.config.table import HOUR, LANGUAGE, Table

# Google News takes articles from the last two days only.
MAX_NEWS_AGE = 48 * HOUR


class FeedConfig(NamedTuple):
    """RSS 2.0 and Atom 1.0 feeds of recent updates, on when `[feed]` exists."""

    title: str
    atom: str
    rss: str
    # Public URLs of the two feeds (rel="self", WebSub topics).
    atom_url: str
    rss_url: str
    subtitle: str | None = None
    # Updates since the oldest crawler fetch of a feed are kept, but never fewer than
    # those of the last `min_window` seconds.
    min_window: float = 48 * HOUR
    max_entries: int = 1000
    # Ceiling on RFC 5005 pages of updates some crawler has not fetched yet.
    max_pages: int = 50


class NewsConfig(NamedTuple):
    """The Google News sitemap, on when `[news]` exists."""

    publication_name: str
    language: str
    file: str = "news-sitemap.xml"
    max_age: float = MAX_NEWS_AGE


def read_feed(table: Table, site: SiteConfig) -> FeedConfig:
    title = table.required_text("title")
    atom = table.file_name("atom", "atom.xml", ".xml")
    rss = table.file_name("rss", "rss.xml", ".xml")
    if atom == rss:
        raise table.error("rss", f"must differ from feed.atom ({atom!r})")
    subtitle = table.text("subtitle", "") or None
    config = FeedConfig(
        title=title,
        atom=atom,
        rss=rss,
        atom_url=table.web_url("atom_url", site.output_url + atom),
        rss_url=table.web_url("rss_url", site.output_url + rss),
        subtitle=subtitle,
        min_window=table.duration("min_window", 48 * HOUR, 60, 365 * 24 * HOUR),
        max_entries=table.integer("max_entries", 1000, 1, 50_000),
        max_pages=table.integer("max_pages", 50, 1, 10_000),
    )
    table.done()
    return config


def read_news(table: Table) -> NewsConfig:
    language = table.required_text("language")
    if not re.fullmatch(LANGUAGE, language.lower()):
        raise table.error(
            "language", f"must be an ISO 639 code like 'en' or 'zh-cn', got {language!r}"
        )
    config = NewsConfig(
        publication_name=table.required_text("publication_name"),
        language=language,
        file=table.file_name("file", "news-sitemap.xml", ".xml"),
        max_age=table.duration("max_age", MAX_NEWS_AGE, 60, MAX_NEWS_AGE),
    )
    table.done()
    return config
