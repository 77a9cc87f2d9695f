"""The news sitemaps a publish writes: the articles of the last two days (or the
configured age), split by the sitemap limits."""

from __future__ import annotations

from collections.abc import Callable

from sitemapd.config import NewsConfig, SitemapConfig
from sitemapd.core import w3c
from sitemapd.ledger.ledger import Ledger
from sitemapd.render.news import NewsItem, news_files, news_urlset
from sitemapd.render.newslanguage import news_language
from sitemapd.render.parts import part_name


def publish_news(
    news: NewsConfig,
    ledger: Ledger,
    now: str,
    sitemap: SitemapConfig,
    write: Callable[[str, bytes], None],
) -> list[tuple[str, str | None]]:
    """Write the news sitemaps of `ledger` at `now` through `write(name, bytes)`; return
    `(name, newest publication)` of each the index names."""
    since = w3c.format_epoch(w3c.to_epoch(now) - news.max_age)
    articles = ledger.articles(since)
    changed = {loc: max(published, lastmod) for loc, published, *_, lastmod in articles}
    items = (
        NewsItem(
            loc,
            news.publication_name,
            news_language(language) or news.language.lower(),
            published,
            news_title or title or loc,
        )
        for loc, published, language, news_title, title, _ in articles
    )
    listed: list[tuple[str, str | None]] = []
    for number, (document, part) in enumerate(news_files(items, sitemap.max_bytes), 1):
        name = part_name(news.file, number)
        write(name, document.encode())
        # What moves a news file for a crawler: a new article or an edited one.
        listed.append((name, max(changed[item.loc] for item in part)))
    if not listed:
        # No article is recent: the first file stays, empty (crawlers that know it read
        # no items rather than an error), but the index names it only while it has
        # items: the sitemap schema wants at least one <url> in a document.
        write(news.file, news_urlset([]).encode())
    return listed
