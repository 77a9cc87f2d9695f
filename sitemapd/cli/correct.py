"""Operator corrections to one URL: forget its history, or have its file read again.

Both change one ledger row in one transaction; the build that follows (the CLI runs
one) reads the URL anew.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitemapd.errors import SitemapdError
from sitemapd.ledger.journal import split_run
from sitemapd.ledger.schema import EXCLUDED, LIVE
from sitemapd.ledger.shards import Shards

if TYPE_CHECKING:
    from sitemapd.ledger.ledger import Ledger


def forget(ledger: Ledger, loc: str) -> None:
    """Remove every trace of `loc` (row, journal, crawl answers, shard membership): the
    next scan sees it for the first time. Raises SitemapdError for an unknown URL."""
    with ledger.transaction():
        row = ledger.conn.execute(
            "SELECT id, shard, entry_bytes FROM urls WHERE loc = ?", (loc,)
        ).fetchone()
        if row is None:
            raise SitemapdError(f"{loc}: not in the ledger")
        url_id, shard, size = row
        ledger.conn.execute("DELETE FROM urls WHERE id = ?", (url_id,))
        # Row ids can be reused: nothing may still point at this one. Its journal entries
        # stay, naming no URL: a seq is never given out twice, or the notifiers and feeds,
        # whose cursors passed it, would never see the entry that reused it.
        ledger.conn.execute("UPDATE journal SET url_id = NULL WHERE url_id = ?", (url_id,))
        split_run(ledger.conn, url_id)
        ledger.conn.execute("DELETE FROM alternate_links WHERE url_id = ?", (url_id,))
        ledger.conn.execute("DELETE FROM crawl_answers WHERE loc = ?", (loc,))
        if shard is not None:
            shards = Shards(ledger.conn, ledger.limits)
            shards.remove(shard, size)
            shards.flush()


def reread(ledger: Ledger, loc: str) -> None:
    """Make the next scan read the file of `loc` again, whatever its size and mtime.

    Raises SitemapdError when `loc` is not a present URL read from a file.
    """
    with ledger.transaction():
        cursor = ledger.conn.execute(
            "UPDATE urls SET file_key = NULL, bytes_hash = NULL "
            "WHERE loc = ? AND file_key IS NOT NULL AND status IN (?, ?)",
            (loc, LIVE, EXCLUDED),
        )
        if cursor.rowcount == 0:
            raise SitemapdError(f"{loc}: not a present URL read from a file")
