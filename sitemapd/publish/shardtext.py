"""A shard's document rendered from the ledger, for a shard the first load did not spool,
and the lines of its manifest."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from itertools import islice

from sitemapd.ledger import Ledger
from sitemapd.publish.manifest import lines_of, shard_rows
from sitemapd.render.extensions import without_alternates
from sitemapd.render.sitemap import plain_entries, plain_urlset, urlset


def plain_shard(
    conn: sqlite3.Connection, shard_id: int, manifest: bool
) -> tuple[bytes, str | None]:
    """Return the document of shard `shard_id` of plain entries (the ledger open on
    `conn`) and, with `manifest`, the lines of its manifest (else None): both from one
    read of its rows. A second read, on a connection of its own, cost more than the
    formatting it spares."""
    lines: list[str] = []

    def texts() -> Iterator[str]:
        # A thousand entries at a time: the rows of a shard are never all held.
        for rows in shard_rows(conn, shard_id):
            if manifest:
                lines.append(lines_of(rows))
            yield plain_entries([(loc, lastmod) for loc, lastmod, *_ in rows])

    document = b"".join(text.encode() for text in plain_urlset(texts()))
    return document, "\n".join(filter(None, lines)) if manifest else None


def extended_shard(ledger: Ledger, shard_id: int) -> bytes:
    """Return the document of shard `shard_id` whose members carry alternates or images,
    without alternates that left, rendered in pieces of a thousand entries."""
    rows: Iterable[tuple[str, str, str | None]] = ledger.shard_rows(shard_id)
    unlisted = ledger.unlisted_alternates(shard_id)
    if unlisted:
        rows = (
            (loc, lastmod, extra and without_alternates(extra, unlisted))
            for loc, lastmod, extra in rows
        )
    entries = urlset(rows, extended=True)
    texts = ("".join(batch) for batch in iter(lambda: list(islice(entries, 1000)), []))
    return b"".join(text.encode() for text in texts)
