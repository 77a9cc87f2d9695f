"""A URL list's lines loaded into an empty ledger: straight into `urls`, with sizes,
lastmods and shards worked out a chunk at a time, and the shards rendered as they fill
(spool.py)."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from operator import itemgetter
from typing import NamedTuple

from sitemapd.ledger.bulk import insert_values
from sitemapd.ledger.model import ROBOTS_REASON
from sitemapd.ledger.run import Run
from sitemapd.ledger.schema import EXCLUDED, LIVE
from sitemapd.render.sitemap import entry_sizes

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

    def load(self, source_id: int, digest: bytes, lines: list[tuple[str, str]]) -> None:
        """Insert a chunk's lines as new URLs, placed in shards as they come."""
        (before,) = self.conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()
        if self.run.robots.fingerprint != "none":
            allows = self.run.robots.allows
            excluded = [line for line in lines if not allows(line[0])]
            if excluded:
                lines = [line for line in lines if allows(line[0])]
                self._insert(source_id, None, ROBOTS_REASON, _Rows.of(excluded, self.run.now))
        if lines:
            self._insert_live(source_id, _Rows.of(lines, self.run.now))
        (after,) = self.conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()
        # Written now, not held: ten million URLs take 80 MB of ids.
        self.conn.execute(
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
        insert_values(
            self.conn,
            "INSERT OR FAIL INTO urls (loc, source_time, lastmod, entry_bytes, source_id, status, "
            "reason, first_seen, change_count, shard)",
            f"(?, ?, ?, ?, {source_id}, '{status}', {reason_sql}, '{now}', 0, "
            f"{'NULL' if shard is None else shard})",
            rows,
        )
