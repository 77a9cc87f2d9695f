"""Sitemaps.org documents: `<urlset>` shards and the `<sitemapindex>` that names them.

Entries are rendered by string formatting, not a DOM: URLs are canonical (urls.py), so
`&` and `'` are the only characters that need escaping, and lastmods are stored already
in W3C form.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..urls import xml_escape

XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'
URLSET_HEAD = XML_DECLARATION + '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
URLSET_TAIL = "</urlset>\n"
INDEX_HEAD = (
    XML_DECLARATION + '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
)
INDEX_TAIL = "</sitemapindex>\n"

# Length of an entry without its URL: `<url><loc></loc><lastmod>` + 25 + `</lastmod></url>\n`.
_ENTRY_OVERHEAD = len("<url><loc></loc><lastmod></lastmod></url>\n") + len(
    "2000-01-01T00:00:00+00:00"
)
SHARD_OVERHEAD = len(URLSET_HEAD) + len(URLSET_TAIL)


def url_entry(loc: str, lastmod: str) -> str:
    """Return the `<url>` element of one URL, newline-terminated."""
    return f"<url><loc>{xml_escape(loc)}</loc><lastmod>{lastmod}</lastmod></url>\n"


def entry_size(loc: str) -> int:
    """Return the UTF-8 size of `url_entry(loc, lastmod)` for any canonical lastmod."""
    # Canonical URLs are ASCII; escaping turns `&` into 5 bytes and `'` into 6.
    return _ENTRY_OVERHEAD + len(loc) + 4 * loc.count("&") + 5 * loc.count("'")


def urlset(rows: Iterable[tuple[str, str]]) -> Iterator[str]:
    """Yield the text of a `<urlset>` holding `(loc, lastmod)` rows, in order."""
    yield URLSET_HEAD
    # url_entry() inlined: this loop renders every URL of a shard.
    for loc, lastmod in rows:
        if "&" in loc or "'" in loc:
            loc = xml_escape(loc)
        yield f"<url><loc>{loc}</loc><lastmod>{lastmod}</lastmod></url>\n"
    yield URLSET_TAIL


def sitemap_index(entries: Iterable[tuple[str, str]]) -> str:
    """Return a `<sitemapindex>` naming `(absolute URL, lastmod)` sitemaps, in order."""
    body = "".join(
        f"<sitemap><loc>{xml_escape(loc)}</loc><lastmod>{lastmod}</lastmod></sitemap>\n"
        for loc, lastmod in entries
    )
    return INDEX_HEAD + body + INDEX_TAIL
