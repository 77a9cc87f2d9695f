"""A shard's document to store, and what gives its manifest: as the first load spooled
it, or rendered from the ledger."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from itertools import islice

from sitemapd.ledger.ledger import Ledger
from sitemapd.ledger.spool import SpooledShard
from sitemapd.publish.manifest import Reader, lines_of, shard_rows
from sitemapd.publish.manifestfile import encode
from sitemapd.render.extensions import without_alternates
from sitemapd.render.sitemap import plain_entries, plain_urlset, urlset

log = logging.getLogger("sitemapd.publish")


def shard_document(
    ledger: Ledger, shard_id: int, spooled: SpooledShard | None, reader: Reader, manifest: bool
) -> tuple[bytes, Callable[[], bytes] | None]:
    """Return the document of shard `shard_id`, as `spooled` (read, then deleted) or else
    rendered from the ledger, and, with `manifest`, what gives its manifest file."""
    if spooled is not None:
        try:
            document = spooled.path.read_bytes()
            spooled.path.unlink()
        except OSError as exc:
            log.debug("%s: rendered from the ledger instead (%s)", spooled.path, exc)
        else:
            return document, partial(
                reader.spooled, spooled.manifest, shard_id
            ) if manifest else None
    if not ledger.shard_has_extras(shard_id):
        document, text = plain_shard(ledger.conn, shard_id, manifest)
        # The manifest is compressed by the thread that stores the shard.
        return document, None if text is None else partial(encode, text)
    file_of = reader.ahead(shard_id) if manifest else None  # read as this renders
    return extended_shard(ledger, shard_id), file_of


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
