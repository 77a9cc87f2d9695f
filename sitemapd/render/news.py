"""Google News sitemaps: a `<urlset>` whose entries carry `<news:news>`.

Children follow sitemap-news.xsd's sequence: publication (name, language),
publication_date, title. Titles and publication names are free text, so they get full
XML text escaping; URLs are canonical and dates are stored in W3C form already.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import NamedTuple

from sitemapd.core.urls import xml_escape
from sitemapd.render.sitemap import XML_DECLARATION

NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"
MAX_NEWS_ITEMS = 1000
NEWS_HEAD = (
    XML_DECLARATION + '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
    f' xmlns:news="{NEWS_NS}">\n'
)
NEWS_TAIL = "</urlset>\n"

# Characters XML 1.0 cannot carry at all, even escaped.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


class NewsItem(NamedTuple):
    loc: str
    publication_name: str
    language: str
    published: str
    title: str


def xml_text(text: str) -> str:
    """Return `text` escaped for XML character data, with XML-illegal characters removed."""
    text = _XML_ILLEGAL.sub("", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def news_entry(item: NewsItem) -> str:
    """Return the `<url>` element of one news item, newline-terminated."""
    return (
        f"<url><loc>{xml_escape(item.loc)}</loc><news:news><news:publication>"
        f"<news:name>{xml_text(item.publication_name)}</news:name>"
        f"<news:language>{item.language}</news:language></news:publication>"
        f"<news:publication_date>{item.published}</news:publication_date>"
        f"<news:title>{xml_text(item.title)}</news:title></news:news></url>\n"
    )


def news_urlset(items: Iterable[NewsItem]) -> str:
    """Return a news sitemap of the first MAX_NEWS_ITEMS `items`, in the order given.

    With no items the `<urlset>` is empty: Google accepts that, sitemap.xsd does not.
    """
    body = "".join(news_entry(item) for item in islice(items, MAX_NEWS_ITEMS))
    return NEWS_HEAD + body + NEWS_TAIL


def news_files(items: Iterable[NewsItem], max_bytes: int) -> Iterator[tuple[str, list[NewsItem]]]:
    """Yield `(document, its items)` of news sitemaps holding `items` in order, each with
    at most MAX_NEWS_ITEMS items and `max_bytes` bytes (an item alone may exceed it)."""
    room = max_bytes - len(NEWS_HEAD) - len(NEWS_TAIL)
    entries: list[str] = []
    taken: list[NewsItem] = []
    size = 0
    for item in items:
        entry = news_entry(item)
        length = len(entry.encode())
        if taken and (len(taken) == MAX_NEWS_ITEMS or size + length > room):
            yield NEWS_HEAD + "".join(entries) + NEWS_TAIL, taken
            entries, taken, size = [], [], 0
        entries.append(entry)
        taken.append(item)
        size += length
    if taken:
        yield NEWS_HEAD + "".join(entries) + NEWS_TAIL, taken
