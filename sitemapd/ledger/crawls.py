"""Ledger records of crawlers: which feed pages each fetched, and what URLs answered."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sitemapd.ledger.transaction import Transactions


class CrawlRecords(Transactions):
    """Crawler fetches of feed pages and non-2xx answers for known URLs."""

    def crawler_fetches(self) -> dict[tuple[str, int], str]:
        """Return `{(crawler, feed page): time of its last successful fetch}`."""
        rows = self.conn.execute("SELECT crawler, page, fetched_at FROM crawls")
        return {(crawler, page): at for crawler, page, at in rows}

    def record_crawls(
        self,
        fetches: Mapping[tuple[str, int], str],
        answers: Iterable[tuple[str, int, str, str]],
        cursors: Mapping[str, str],
    ) -> None:
        """Record feed page fetches per crawler and `(loc, status, crawler, at)` answers, with
        the access log cursors, in one transaction; a 2xx/304 answer clears a URL's record."""
        answers = list(answers)
        with self.transaction():
            self.conn.executemany(
                "INSERT INTO crawls (crawler, page, fetched_at) VALUES (?, ?, ?) "
                "ON CONFLICT (crawler, page) "
                "DO UPDATE SET fetched_at = max(fetched_at, excluded.fetched_at)",
                sorted((crawler, page, at) for (crawler, page), at in fetches.items()),
            )
            self.conn.executemany(
                "DELETE FROM crawl_answers WHERE loc = ?",
                [(loc,) for loc, status, _, _ in answers if status < 300 or status == 304],
            )
            # Only URLs the ledger knows: what a sitemap lists, or once listed.
            self.conn.executemany(
                "INSERT OR REPLACE INTO crawl_answers (loc, status, crawler, at) "
                "SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM urls WHERE loc = ?)",
                [(*a, a[0]) for a in answers if not (a[1] < 300 or a[1] == 304)],
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO cursors (name, value) VALUES (?, ?)",
                sorted(cursors.items()),
            )
