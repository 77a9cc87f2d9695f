"""A URL list's lines loaded into an empty ledger: straight into `urls`, with sizes,
lastmods and shards worked out a chunk at a time, the shards rendered as they fill
(spool.py), and the rows inserted and journalled on a thread of their own (bulk.py)
while the next chunk is worked out."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from operator import itemgetter
from typing import NamedTuple

from sitemapd.errors import LedgerError
from sitemapd.ledger.bulk import Inserts
from sitemapd.ledger.model import NEW, ROBOTS_REASON
from sitemapd.ledger.run import JOURNAL_NEW, Run
from sitemapd.ledger.schema import EXCLUDED, LIVE
from sitemapd.render.sitemap import entry_sizes

# Rows of the longest insert of a list's lines: SQLite lets go of the GIL for as long as
# one runs, which the thread formatting the next chunk's rows needs (bulk.py).
_STATEMENT_ROWS = 512
_LOC, _STAMP = itemgetter(0), itemgetter(1)


class _Rows(NamedTuple):
    """A chunk's lines as `urls` rows, column by column, as `FirstLoad._insert` binds them."""

    locs: Sequence[str]
    times: Sequence[str | None]  # the line's datetime
    lastmods: Sequence[str]
    sizes: Sequence[int]  # entry bytes

    @classmethod
    def of(cls, lines: list[tuple[str, str]], now: str) -> _Rows:
        """Return the rows of `(loc, datetime or "")` lines read at `now`."""
        # Not `zip(*lines)`: it runs an iterator for each line, which costs 7 times more.
        locs, stamps = list(map(_LOC, lines)), list(map(_STAMP, lines))
        times: Sequence[str | None] = stamps
        lastmods: Sequence[str] = stamps
        # A line's lastmod is its datetime, or the build's time when it has none or a
        # later one. Almost always, every line has a datetime already past.
        if "" in stamps:
            times = [s or None for s in stamps]
        if "" in stamps or max(stamps) > now:
            lastmods = [now if s == "" or s > now else s for s in stamps]
        return cls(locs, times, lastmods, entry_sizes(locs))

    def part(self, start: int, end: int) -> _Rows:
        """Return rows `start` to `end` (not included)."""
        return _Rows(
            self.locs[start:end],
            self.times[start:end],
            self.lastmods[start:end],
            self.sizes[start:end],
        )


class FirstLoad:
    """The lines of URL lists one `Ledger.apply()` run loads into an empty ledger."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.conn = run.conn
        # The inserts, on a thread of their own, and the id of the last row they insert
        # while some are pending (ids follow on in a bulk load).
        self.inserts = Inserts(self.conn)
        self._last_id: int | None = None

    def settle(self) -> None:
        """Wait for the inserts of the chunks loaded (before anything else uses the
        connection); raises their error (sqlite3.Error), or LedgerError when the rows
        were not given the ids counted for them."""
        self.inserts.settle()
        if self._last_id is not None:
            (last,) = self.conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()
            if last != self._last_id:
                raise LedgerError("the ledger's URL ids are exhausted; rebuild it from its sources")
            self._last_id = None

    def load(self, source_id: int, digest: bytes, lines: list[tuple[str, str]]) -> None:
        """Insert a chunk's lines as new URLs, placed in shards as they come."""
        if self._last_id is None:
            (self._last_id,) = self.conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()
        before = self._last_id
        excluded: list[tuple[str, str]] = []
        if self.run.robots.fingerprint != "none":
            allows = self.run.robots.allows
            excluded = [line for line in lines if not allows(line[0])]
            if excluded:
                lines = [line for line in lines if allows(line[0])]
                self._insert(source_id, None, ROBOTS_REASON, _Rows.of(excluded, self.run.now))
        if lines:
            self._insert_live(source_id, _Rows.of(lines, self.run.now))
        # A row inserted without an id takes the one after the largest (checked at `settle`).
        after = self._last_id = before + len(excluded) + len(lines)
        if self.run.journaled == before:
            # Journalled now, on the inserts' thread, rather than at the end of the load,
            # where nothing goes on beside it.
            if lines:
                first = before + len(excluded) + 1
                self.inserts.execute(JOURNAL_NEW, (NEW, self.run.now, first, after, LIVE))
            self.run.journaled = after
        # Written now, not held: ten million URLs take 80 MB of ids.
        self.inserts.execute(
            "INSERT OR REPLACE INTO list_chunk_urls (source_id, digest, ids) VALUES (?, ?, ?)",
            (source_id, digest, array("q", range(before + 1, after + 1)).tobytes()),
        )

    def _insert_live(self, source_id: int, rows: _Rows) -> None:
        self.run.changes.new += len(rows.locs)
        lastmods = rows.lastmods
        start = 0
        for shard, count in self.run.shards.fill(rows.sizes, lambda a, b: max(lastmods[a:b])):
            part = rows.part(start, start + count)
            self._insert(source_id, shard, None, part)
            if self.run.spool is not None:
                # A list's URL has no content hash: its fingerprint is its datetime.
                self.run.spool.add(shard, part.locs, part.times, part.lastmods)
            start += count

    def _insert(self, source_id: int, shard: int | None, reason: str | None, rows: _Rows) -> None:
        """Insert `rows` into shard `shard` (NULL and excluded for `reason`)."""
        now = self.run.now  # canonical: digits, "-", ":", "T", "+"
        status = EXCLUDED if reason else LIVE
        reason_sql = f"'{reason}'" if reason else "NULL"
        # The shard bound, not written into the statement: a statement of many rows holds
        # a few hundred KB once prepared, and the connection keeps 128 of them.
        self.inserts.values(
            "INSERT OR FAIL INTO urls (loc, source_time, lastmod, entry_bytes, source_id, status, "
            "reason, first_seen, change_count, shard)",
            f"(?, ?, ?, ?, {source_id}, '{status}', {reason_sql}, '{now}', 0, ?)",
            (*rows, [shard] * len(rows.locs)),
            _STATEMENT_ROWS,
        )
