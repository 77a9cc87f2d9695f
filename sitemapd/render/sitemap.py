"""Sitemaps.org documents: `<urlset>` shards and the `<sitemapindex>` that names them.

Entries are rendered by string formatting, not a DOM: URLs are canonical (urls.py), so
`&` and `'` are the only characters that need escaping, and lastmods are stored already
in W3C form.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import cast

from sitemapd.core.urls import xml_escape

XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XHTML_NS = "http://www.w3.org/1999/xhtml"
IMAGE_NS = "http://www.google.com/schemas/sitemap-image/1.1"
URLSET_HEAD = XML_DECLARATION + f'<urlset xmlns="{SITEMAP_NS}">\n'
# Shards whose entries carry hreflang alternates or images declare their namespaces.
URLSET_EXTENDED_HEAD = (
    XML_DECLARATION + f'<urlset xmlns="{SITEMAP_NS}" xmlns:xhtml="{XHTML_NS}" '
    f'xmlns:image="{IMAGE_NS}">\n'
)
URLSET_TAIL = "</urlset>\n"
INDEX_HEAD = (
    XML_DECLARATION + '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
)
INDEX_TAIL = "</sitemapindex>\n"

# Length of an entry without its URL: `<url><loc></loc><lastmod>` + 25 + `</lastmod></url>\n`.
ENTRY_OVERHEAD = len("<url><loc></loc><lastmod></lastmod></url>\n") + len(
    "2000-01-01T00:00:00+00:00"
)


# The markup around a `<url>` entry's two values, and a manifest line's three.
_ENTRY = ("<url><loc>", "</loc><lastmod>", "</lastmod></url>\n")
_MANIFEST_LINE = ("", "\t", "\t", "\t\n")


def envelope_size(extended: bool) -> int:
    """Return the bytes of a shard's `<urlset>` head and tail."""
    return len(URLSET_EXTENDED_HEAD if extended else URLSET_HEAD) + len(URLSET_TAIL)


# The envelope a shard's entries must leave room for: the longer, extended one.
SHARD_OVERHEAD = envelope_size(extended=True)


def url_entry(loc: str, lastmod: str) -> str:
    """Return the `<url>` element of one URL, newline-terminated."""
    return f"<url><loc>{xml_escape(loc)}</loc><lastmod>{lastmod}</lastmod></url>\n"


def entry_size(loc: str) -> int:
    """Return the UTF-8 size of `url_entry(loc, lastmod)` for any canonical lastmod."""
    # Canonical URLs are ASCII; escaping turns `&` into 5 bytes and `'` into 6.
    return ENTRY_OVERHEAD + len(loc) + 4 * loc.count("&") + 5 * loc.count("'")


def entry_sizes(locs: Sequence[str]) -> list[int]:
    """Return the `entry_size` of each of `locs`, worked out at once when none needs
    escaping (almost always)."""
    joined = "".join(locs)
    if "&" in joined or "'" in joined:
        return [entry_size(loc) for loc in locs]
    return [ENTRY_OVERHEAD + n for n in map(len, locs)]


def entry_size_sql(loc: str, escaped: bool = True) -> str:
    """Return the SQL expression of `entry_size` of the URL that SQL `loc` gives (all
    canonical URLs are ASCII: characters count as bytes); without `escaped`, of one that
    holds no `&` or `'`, which SQLite works out in half the time."""
    if not escaped:
        return f"{ENTRY_OVERHEAD} + length({loc})"
    return (
        f"{ENTRY_OVERHEAD} + length({loc}) + 4 * (length({loc}) - length(replace({loc}, '&', '')))"
        f" + 5 * (length({loc}) - length(replace({loc}, '''', '')))"
    )


def urlset(rows: Iterable[tuple[str, str, str | None]], extended: bool = False) -> Iterator[str]:
    """Yield the text of a `<urlset>` holding `(loc, lastmod, extra elements)` rows.

    `extended` declares the xhtml and image namespaces the extra elements use.
    """
    yield URLSET_EXTENDED_HEAD if extended else URLSET_HEAD
    # url_entry() inlined: this loop renders every URL of a shard.
    for loc, lastmod, extra in rows:
        if "&" in loc or "'" in loc:
            loc = xml_escape(loc)
        yield f"<url><loc>{loc}</loc><lastmod>{lastmod}</lastmod>{extra or ''}</url>\n"
    yield URLSET_TAIL


def column_entries(locs: Sequence[str], lastmods: Sequence[str]) -> str:
    """Return the `<url>` elements of URLs `locs` with their `lastmods`, as `url_entry`
    gives them; raises ValueError unless both have the same length."""
    text = _interleaved(_ENTRY, (locs, lastmods))
    # Only a URL can hold them (almost never): the markup and datetimes hold neither, so
    # escaping the whole text escapes each URL.
    return xml_escape(text) if "&" in text or "'" in text else text


def _interleaved(markup: tuple[str, ...], columns: tuple[Sequence[str], ...]) -> str:
    """Return, row after row, `markup[0]`, the row's value of `columns[0]`, `markup[1]`,
    and so on, ending with `markup[-1]`; raises ValueError unless the columns have the
    same length."""
    # Each value is put in its place in a list of the markup repeated, all of a column
    # at once, and the list joined: no Python code runs per row (a shard is 50,000 rows),
    # and no string is made per row (joining each row's values first took twice as long).
    width = len(markup) + len(columns)
    pieces = [""] * width
    pieces[::2] = markup
    text = pieces * len(columns[0])
    for at, column in enumerate(columns):
        text[2 * at + 1 :: width] = column
    return "".join(text)


def manifest_lines(
    locs: Sequence[str], fingerprints: Sequence[str | None], lastmods: Sequence[str]
) -> str:
    """Return the publish manifest's lines (publish/manifestfile.py) of URLs read from no
    file: `loc <TAB> fingerprint <TAB> lastmod <TAB>` (no bytes hash), each ended by a
    newline; a fingerprint of None is written empty, as the manifest's query writes it."""
    # Lines with no datetime have none.
    given = (
        [fingerprint or "" for fingerprint in fingerprints]
        if None in fingerprints
        else cast("Sequence[str]", fingerprints)
    )
    return _interleaved(_MANIFEST_LINE, (locs, given, lastmods))


def plain_urlset(pieces: Iterable[str]) -> Iterator[str]:
    """Yield the text of a `<urlset>` whose entries (from `column_entries`) come joined in
    `pieces`, in order."""
    yield URLSET_HEAD
    yield from pieces
    yield URLSET_TAIL


def sitemap_index(entries: Iterable[tuple[str, str | None]]) -> str:
    """Return a `<sitemapindex>` naming `(absolute URL, lastmod or None)` sitemaps, in order."""
    body = "".join(
        f"<sitemap><loc>{xml_escape(loc)}</loc>"
        + (f"<lastmod>{lastmod}</lastmod>" if lastmod else "")
        + "</sitemap>\n"
        for loc, lastmod in entries
    )
    return INDEX_HEAD + body + INDEX_TAIL
