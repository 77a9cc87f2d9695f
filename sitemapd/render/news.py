"""Google News sitemaps: a `<urlset>` whose entries carry `<news:news>`, and news languages.

Children follow sitemap-news.xsd's sequence: publication (name, language),
publication_date, title. Titles and publication names are free text, so they get full
XML text escaping; URLs are canonical and dates are stored in W3C form already.
"""

from __future__ import annotations

import functools
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
_SUBTAG = re.compile(r"[a-z0-9]{1,8}\Z")
_PRIMARY = re.compile(r"[a-z]{2,3}\Z")
# ISO 639 codes that name no language: undetermined, multiple, none, uncoded.
_NOT_A_LANGUAGE = {"und", "mul", "zxx", "mis"}
# Regions, and Cantonese (`yue`, `zh-yue`), mostly written in Traditional characters.
_TRADITIONAL = {"tw", "hk", "mo", "yue"}
# ISO 639-3 languages of the Chinese macrolanguage.
_CHINESE = {"cmn", "yue", "wuu", "hak", "nan", "gan", "hsn", "cdo", "cjy", "cpx", "czh", "czo"}


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


# Pages of a site share a handful of languages: each tag is worked out once.
@functools.lru_cache(maxsize=1024)
def news_language(tag: str | None) -> str | None:
    """Return the Google News language for a BCP 47 `tag` (`en`, `zh-cn`, `zh-tw`), or None."""
    if tag is None:
        return None
    primary, *subtags = tag.strip().lower().replace("_", "-").split("-")
    if not _PRIMARY.match(primary) or primary in _NOT_A_LANGUAGE:
        return None
    if not all(_SUBTAG.match(subtag) for subtag in subtags):
        return None
    if primary in _CHINESE:
        # Mandarin, Cantonese, ... (ISO 639-3) are Chinese to Google News.
        subtags.append(primary)
        primary = "zh"
    if primary != "zh":
        return primary
    # Google knows only Simplified (zh-cn) and Traditional (zh-tw) Chinese; a script
    # subtag says which outright, a region or language only implies it.
    if "hans" in subtags:
        return "zh-cn"
    if "hant" in subtags or _TRADITIONAL.intersection(subtags):
        return "zh-tw"
    return "zh-cn"
