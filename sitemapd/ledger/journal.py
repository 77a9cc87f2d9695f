"""Ledger queries of the change journal: what changed since a point, and the feed pages
that hold older changes.

The journal is its rows and the runs of a first load: a run stands for one `new` entry a
URL id from `first_id` to `last_id`, all at `at`, entry `seq + id - first_id` for URL
`id`: the rows a first load would write, one per live URL in id order, without writing
them. The newest entry of a first load is a row, so `max(seq)` of the rows is the
journal's newest seq and the next row's seq follows the run's. Every reader below takes
both parts, each by its own index, and merges them by seq.
"""

# Annotations evaluated, not text: see core/observation.py.
import heapq
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from operator import itemgetter
from typing import Any

from sitemapd.ledger.model import NEW, FeedPageRange
from sitemapd.ledger.schema import GONE, LIVE
from sitemapd.ledger.transaction import Transactions

# A first load journals its URLs as runs when its live ids make at most this many (a
# reader takes the runs one by one); more gaps than that, a row a URL.
MAX_RUNS = 1000


# The entries after seq `?1` as `(seq, url_id, kind, at)`, each part by its index.
ENTRIES_AFTER = (
    "SELECT seq, url_id, kind, at FROM journal WHERE seq > ?1 UNION ALL "
    "SELECT r.seq + u.id - r.first_id, u.id, 'new', r.at FROM journal_runs r "
    "JOIN urls u ON u.id BETWEEN max(r.first_id, r.first_id + ?1 + 1 - r.seq) AND r.last_id"
)


def order_by_lastmod(conn: sqlite3.Connection, after: int, now: str) -> None:
    """Renumber the journal's rows after seq `after` (those of one run) by their URLs'
    lastmods, oldest first, a URL whose last row says it is gone as of `now`. A URL's
    rows keep their order, and so do URLs of the same time.

    A feed's first page holds the newest entries: a run that changes more URLs than a
    page holds then puts its newest pages there, whatever order its source gave them in
    (a list exported newest first journals its URLs in that order)."""
    (count,) = conn.execute("SELECT count(*) FROM journal WHERE seq > ?", (after,)).fetchone()
    if count < 2 or _in_order(conn, after, count):
        return
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS ordered (url_id INTEGER, kind TEXT, at TEXT)")
    # Each row by its URL's last row in the run: gone, then back, stays in that order.
    conn.execute(
        "INSERT INTO temp.ordered SELECT j.url_id, j.kind, j.at FROM journal j "
        "JOIN (SELECT url_id, max(seq) AS last FROM journal WHERE seq > ?1 GROUP BY url_id) l "
        "ON l.url_id IS j.url_id JOIN journal z ON z.seq = l.last "
        "LEFT JOIN urls u ON u.id = j.url_id WHERE j.seq > ?1 "
        "ORDER BY CASE WHEN z.kind = ?2 THEN ?3 ELSE coalesce(u.lastmod, '') END, j.seq",
        (after, GONE, now),
    )
    conn.execute("DELETE FROM journal WHERE seq > ?", (after,))
    # The rows take the seqs they had, in the new order: nothing read them meanwhile.
    conn.execute(
        "INSERT INTO journal (seq, url_id, kind, at) "
        "SELECT ? + row_number() OVER (ORDER BY rowid), url_id, kind, at FROM temp.ordered",
        (after,),
    )
    conn.execute("DELETE FROM temp.ordered")


def _in_order(conn: sqlite3.Connection, after: int, count: int) -> bool:
    """True when the journal's `count` rows after seq `after` are in the order
    `order_by_lastmod` gives them: none says gone, and their URLs' lastmods never go back
    from one row to the next (a URL's rows all share its lastmod then, and keep their
    order). A million re-dated URLs journalled in order are read so in 0.3 s, against
    4 s to renumber them."""
    (last,) = conn.execute("SELECT max(seq) FROM journal").fetchone()
    if last - after != count:
        return False  # not one stretch of seqs: each row's next is not seq + 1
    found = conn.execute(
        "SELECT 1 FROM journal a JOIN journal b ON b.seq = a.seq + 1 "
        "LEFT JOIN urls x ON x.id = a.url_id LEFT JOIN urls y ON y.id = b.url_id "
        "WHERE a.seq > ?1 AND (a.kind = ?2 OR b.kind = ?2 OR x.id IS NULL OR y.id IS NULL "
        "OR y.lastmod < x.lastmod) LIMIT 1",
        (after, GONE),
    ).fetchone()
    return found is None


class Run:
    """Journal entries `seq` to `last_seq`: URLs `first_id` to `last_id`, new at `at`."""

    __slots__ = ("at", "first_id", "last_id", "seq")

    seq: int
    first_id: int
    last_id: int
    at: str

    def __init__(self, seq: int, first_id: int, last_id: int, at: str) -> None:
        self.seq = seq
        self.first_id = first_id
        self.last_id = last_id
        self.at = at

    @property
    def last_seq(self) -> int:
        """Return the seq of the run's last entry."""
        return self.seq + self.last_id - self.first_id

    def first_id_after(self, seq: int) -> int:
        """Return the first URL id of the run whose entry comes after `seq`."""
        return max(self.first_id, self.first_id + seq + 1 - self.seq)


def runs(conn: sqlite3.Connection, after: int, upto: int | None = None) -> list[Run]:
    """Return the runs with entries in `(after, upto]`, oldest first (none in a ledger
    not yet upgraded to them: `status` and `explain` read ledgers as they find them)."""
    try:
        found = conn.execute(
            "SELECT seq, first_id, last_id, at FROM journal_runs "
            "WHERE seq + last_id - first_id > ? AND seq <= ? ORDER BY seq",
            (after, upto if upto is not None else 1 << 62),
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return []
    return [Run(*row) for row in found]


def run_of(conn: sqlite3.Connection, url_id: int) -> Run | None:
    """Return the run that journals URL `url_id` as new, if one does."""
    for run in runs(conn, 0):
        if run.first_id <= url_id <= run.last_id:
            return run
    return None


def journal_first_load(conn: sqlite3.Connection, spans: Sequence[tuple[int, int]], at: str) -> None:
    """Journal the URLs of the id `spans` (`(first, last)`, ascending, disjoint) as new
    at `at`, in id order: as runs, the newest entry as a row."""
    (seq,) = conn.execute("SELECT coalesce(max(seq), 0) + 1 FROM journal").fetchone()
    for first, last in spans[:-1]:
        conn.execute("INSERT INTO journal_runs VALUES (?, ?, ?, ?)", (seq, first, last, at))
        seq += last - first + 1
    first, last = spans[-1]
    if last > first:
        conn.execute("INSERT INTO journal_runs VALUES (?, ?, ?, ?)", (seq, first, last - 1, at))
    conn.execute(
        "INSERT INTO journal (seq, url_id, kind, at) VALUES (?, ?, ?, ?)",
        (seq + last - first, last, NEW, at),
    )


def split_run(conn: sqlite3.Connection, url_id: int) -> None:
    """Take URL `url_id` out of the run that journals it, leaving its entry a row that
    names no URL (as `forget` leaves a row): its seq is never given out again."""
    run = run_of(conn, url_id)
    if run is None:
        return
    conn.execute("DELETE FROM journal_runs WHERE seq = ?", (run.seq,))
    seq = run.seq + url_id - run.first_id
    if url_id > run.first_id:
        conn.execute(
            "INSERT INTO journal_runs VALUES (?, ?, ?, ?)",
            (run.seq, run.first_id, url_id - 1, run.at),
        )
    if url_id < run.last_id:
        conn.execute(
            "INSERT INTO journal_runs VALUES (?, ?, ?, ?)",
            (seq + 1, url_id + 1, run.last_id, run.at),
        )
    conn.execute(
        "INSERT INTO journal (seq, url_id, kind, at) VALUES (?, NULL, ?, ?)", (seq, NEW, run.at)
    )


def count_between(conn: sqlite3.Connection, after: int, upto: int) -> int:
    """Return how many journal entries have a seq in `(after, upto]`."""
    (count,) = conn.execute(
        "SELECT count(*) FROM journal WHERE seq > ? AND seq <= ?", (after, upto)
    ).fetchone()
    return int(count) + sum(
        max(min(run.last_seq, upto) - max(run.seq, after + 1) + 1, 0)
        for run in runs(conn, after, upto)
    )


def merged(parts: Iterable[Iterable[Any]], newest_first: bool) -> Iterator[Any]:
    """Return the rows of `parts` (each ordered by its first column, the seq) in one order."""
    return heapq.merge(*parts, key=itemgetter(0), reverse=newest_first)


def first_seq_since(conn: sqlite3.Connection, at: str, last_seq: int) -> int:
    """Return the first journal seq recorded at or after `at` (`last_seq` + 1 when none
    is), on any connection: a binary search on seq, as journal times grow with seq."""
    spans = runs(conn, 0)
    low, high = 1, last_seq + 1
    while low < high:
        middle = (low + high) // 2
        row = conn.execute(
            "SELECT seq, at FROM journal WHERE seq >= ? ORDER BY seq LIMIT 1", (middle,)
        ).fetchone()
        for run in spans:
            if run.last_seq >= middle and (row is None or run.seq < row[0]):
                row = (run.seq, run.at)
                break
        if row is None or row[1] >= at:
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
        rows = self.conn.execute(
            "SELECT j.seq, j.at, u.loc, u.title, u.lastmod FROM journal j "
            "JOIN urls u ON u.id = j.url_id WHERE j.seq > ? AND j.kind != ? AND u.status = ? "
            "ORDER BY j.seq DESC",
            (after_seq, GONE, LIVE),
        )
        parts = [
            self.conn.execute(
                "SELECT ? + id, ?, loc, title, lastmod FROM urls "
                "WHERE id BETWEEN ? AND ? AND status = ? ORDER BY id DESC",
                (run.seq - run.first_id, run.at, run.first_id_after(after_seq), run.last_id, LIVE),
            )
            for run in runs(self.conn, after_seq)
        ]
        yield from merged([rows, *parts], newest_first=True)

    def changed_urls(self, after_seq: int, upto_seq: int, limit: int) -> list[tuple[int, str]]:
        """Return `(seq, loc)` of every journalled change in `(after_seq, upto_seq]`, in
        order, at most `limit`."""
        rows = self.conn.execute(
            "SELECT j.seq, u.loc FROM journal j JOIN urls u ON u.id = j.url_id "
            "WHERE j.seq > ? AND j.seq <= ? ORDER BY j.seq LIMIT ?",
            (after_seq, upto_seq, limit),
        ).fetchall()
        parts = [
            self.conn.execute(
                "SELECT ? + id, loc FROM urls WHERE id BETWEEN ? AND ? ORDER BY id LIMIT ?",
                (
                    run.seq - run.first_id,
                    run.first_id_after(after_seq),
                    min(run.last_id, run.first_id + upto_seq - run.seq),
                    limit,
                ),
            ).fetchall()
            for run in runs(self.conn, after_seq, upto_seq)
        ]
        return list(islice(merged([rows, *parts], newest_first=False), limit))

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
