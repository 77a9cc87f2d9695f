"""Ledger queries of the change journal: what changed since a point, and the feed pages
that hold older changes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator

from sitemapd.ledger.model import FeedPageRange
from sitemapd.ledger.schema import GONE, LIVE
from sitemapd.ledger.transaction import Transactions


def first_seq_since(conn: sqlite3.Connection, at: str, last_seq: int) -> int:
    """Return the first journal seq recorded at or after `at` (`last_seq` + 1 when none
    is), on any connection: a binary search on seq, as journal times grow with seq."""
    low, high = 1, last_seq + 1
    while low < high:
        middle = (low + high) // 2
        row = conn.execute(
            "SELECT at FROM journal WHERE seq >= ? ORDER BY seq LIMIT 1", (middle,)
        ).fetchone()
        if row is None or row[0] >= at:
            high = middle
        else:
            low = middle + 1
    return low


class JournalQueries(Transactions):
    """Reads of the journal, and the feed pages beyond the first."""

    def last_seq(self) -> int:
        """Return the newest journal sequence number (0 for an empty journal)."""
        (seq,) = self.conn.execute("SELECT max(seq) FROM journal").fetchone()
        return int(seq or 0)

    def first_seq_since(self, at: str) -> int:
        """Return the first journal seq recorded at or after `at`."""
        return first_seq_since(self.conn, at, self.last_seq())

    def recent_changes(self, after_seq: int) -> Iterator[tuple[int, str, str, str | None, str]]:
        """Yield `(seq, at, loc, title, lastmod)` of new/updated changes of live URLs after
        `after_seq`, newest change first; a URL may appear more than once."""
        yield from self.conn.execute(
            "SELECT j.seq, j.at, u.loc, u.title, u.lastmod FROM journal j "
            "JOIN urls u ON u.id = j.url_id WHERE j.seq > ? AND j.kind != ? AND u.status = ? "
            "ORDER BY j.seq DESC",
            (after_seq, GONE, LIVE),
        )

    def changed_urls(self, after_seq: int, upto_seq: int, limit: int) -> list[tuple[int, str]]:
        """Return `(seq, loc)` of every journalled change in `(after_seq, upto_seq]`, in
        order, at most `limit`."""
        return self.conn.execute(
            "SELECT j.seq, u.loc FROM journal j JOIN urls u ON u.id = j.url_id "
            "WHERE j.seq > ? AND j.seq <= ? ORDER BY j.seq LIMIT ?",
            (after_seq, upto_seq, limit),
        ).fetchall()

    def feed_pages(self) -> list[FeedPageRange]:
        """Return the feed pages beyond the first, oldest first."""
        rows = self.conn.execute(
            "SELECT number, low_seq, high_seq, opened_at, filled_at FROM feed_pages ORDER BY number"
        )
        return [FeedPageRange(*row) for row in rows]

    def save_feed_pages(self, pages: Iterable[FeedPageRange]) -> None:
        """Replace the recorded feed pages beyond the first with `pages`."""
        with self.transaction():
            self.conn.execute("DELETE FROM feed_pages")
            self.conn.executemany(
                "INSERT INTO feed_pages (number, low_seq, high_seq, opened_at, filled_at) "
                "VALUES (?, ?, ?, ?, ?)",
                pages,
            )
