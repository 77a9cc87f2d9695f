"""A URL list's lines loaded into an empty ledger: straight into `urls`, with sizes,
lastmods and shards worked out a chunk at a time, and the shards rendered as they fill
(spool.py)."""

# Annotations evaluated, not text: see core/observation.py.
from collections.abc import Sequence
from typing import cast

from sitemapd.core.listlines import HELD, ListLines, Rendered
from sitemapd.ledger.bulk import insert_values
from sitemapd.ledger.model import FIRST_LOAD_SEEN, ROBOTS_REASON
from sitemapd.ledger.run import Run
from sitemapd.ledger.schema import EXCLUDED, LIVE
from sitemapd.render.sitemap import entry_sizes

# Chunks whose ranges of ids are stored in one statement (a quarter of a million URLs):
# a bigger load holds no more of them meanwhile.
_RANGES = 256


class _Rows:
    """A chunk's lines as `urls` rows, column by column, as `FirstLoad._insert` binds them."""

    __slots__ = ("lastmods", "locs", "rendered", "sizes", "times")

    locs: Sequence[str]
    times: Sequence[str | None]  # the line's datetime
    lastmods: Sequence[str]
    sizes: Sequence[int]  # entry bytes
    # The rows' entries and manifest lines as the parse worker formatted them, when
    # those are the spool's (each row's lastmod its datetime, or the build's time where
    # the worker capped them all).
    rendered: Rendered | None

    def __init__(
        self,
        locs: Sequence[str],
        times: Sequence[str | None],
        lastmods: Sequence[str],
        sizes: Sequence[int],
        rendered: Rendered | None = None,
    ) -> None:
        self.locs = locs
        self.times = times
        self.lastmods = lastmods
        self.sizes = sizes
        self.rendered = rendered

    @classmethod
    def of(cls, lines: ListLines, now: str) -> "_Rows":
        """Return the rows of `lines` read at `now`."""
        stamps = lines.stamps
        times: Sequence[str | None] = stamps
        lastmods: Sequence[str] = stamps
        rendered = lines.rendered
        sizes = entry_sizes(lines.locs) if rendered is None else rendered.sizes
        # A line's lastmod is its datetime, or the build's time when it has none or a
        # later one. Almost always, every line has a datetime already past. Rendered lines
        # all have one (`Rendered`): only others are searched for a line without.
        undated = rendered is None and "" in stamps
        if undated:
            times = [s or None for s in stamps]
        if undated or (rendered.latest if rendered else max(stamps, default="")) > now:
            lastmods = [now if s == "" or s > now else s for s in stamps]
            # Kept where the worker formatted every lastmod as this very time (a chunk
            # dated after it throughout: `listworker._rendered`).
            if rendered is None or rendered.capped != now:
                rendered = None
        return cls(lines.locs, times, lastmods, sizes, rendered)

    def part(self, start: int, end: int) -> "_Rows":
        """Return rows `start` to `end` (not included), without what was rendered."""
        times = self.times[start:end]
        # The same column twice stays one: `insert_values` binds it once.
        lastmods = (
            cast("Sequence[str]", times)
            if self.lastmods is self.times
            else self.lastmods[start:end]
        )
        return _Rows(self.locs[start:end], times, lastmods, self.sizes[start:end])


class FirstLoad:
    """The lines of URL lists one `Ledger.apply()` run loads into an empty ledger."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.conn = run.conn
        # Each chunk's range of ids, as `list_chunk_urls` rows, written by `finish`.
        self._ranges: list[tuple[int, bytes, int, int]] = []

    def load(self, source_id: int, digest: bytes, lines: Sequence[tuple[str, str]]) -> None:
        """Insert a chunk's lines (`(loc, datetime or "")`) as new URLs, placed in shards
        as they come."""
        (before,) = self.conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()
        # A line held for its datetime lists no URL an empty ledger could keep, and of a
        # URL listed again before it (in this chunk or an earlier one) its last line is
        # the held one: that URL waits too (`bulk_gone`, as a change log's delete).
        every = ListLines.of(lines)
        columns = listed = every.listed()
        if self.run.robots.fingerprint != "none":
            columns, excluded = columns.split(self.run.robots.allows)
            if excluded:
                self._insert(source_id, None, ROBOTS_REASON, _Rows.of(excluded, self.run.now))
        if columns:
            self._insert_live(source_id, _Rows.of(columns, self.run.now))
        # Each line's row took the next id (the bulk load leaves the uniqueness of URLs to
        # the end): the chunk's ids are a range, a few bytes where an array of them took 8
        # an id (and an overflow page a chunk, half of it empty).
        self._ranges.append((source_id, digest, before + 1, len(listed)))
        if len(listed) < len(every):
            upto = before + len(listed)
            for loc, stamp in zip(every.locs, every.stamps, strict=True):
                if stamp == HELD:
                    self.run.bulk_gone[loc] = upto
        if len(self._ranges) >= _RANGES:
            self.finish()

    def finish(self) -> None:
        """Store the range of ids of each chunk loaded since, in the order they were."""
        # Many at once: a statement a chunk (a thousand for a million URLs), run between
        # the chunk's inserts, took 15-25 us at best and often ten times that, waiting
        # for the GIL or a core the spool's thread and the parse worker held (0.12-0.43 s
        # of the loading thread in a million-URL build on a busy machine).
        self.conn.executemany(
            "INSERT OR REPLACE INTO list_chunk_urls (source_id, digest, ids, first_id, id_count) "
            "VALUES (?, ?, x'', ?, ?)",
            self._ranges,
        )
        self._ranges = []

    def _insert_live(self, source_id: int, rows: _Rows) -> None:
        self.run.changes.new += len(rows.locs)
        lastmods = rows.lastmods
        spool = self.run.spool
        start = 0
        # Where the part being spooled starts in the rendered entries and manifest lines.
        entries_at = lines_at = 0
        for shard, count in self.run.shards.fill(rows.sizes, lambda a, b: max(lastmods[a:b])):
            end = start + count
            part = rows.part(start, end) if count < len(rows.locs) else rows
            self._insert(source_id, shard, None, part)
            if spool is not None and rows.rendered is None:
                # A list's URL has no content hash: its fingerprint is its datetime.
                spool.add(shard, part.locs, part.times, part.lastmods)
            elif spool is not None and rows.rendered is not None:
                entries, lines = rows.rendered.entries, rows.rendered.manifest
                entries_to, lines_to = len(entries), len(lines)
                if end < len(rows.locs):  # a shard ends within the chunk
                    entries_to = entries_at + sum(part.sizes)  # entry bytes are their sizes
                    lines_to = _line_end(lines, lines_at, count)
                spool.add_formatted(
                    shard, count, entries[entries_at:entries_to], lines[lines_at:lines_to]
                )
                entries_at, lines_at = entries_to, lines_to
            start = end

    def _insert(self, source_id: int, shard: int | None, reason: str | None, rows: _Rows) -> None:
        """Insert `rows` into shard `shard` (NULL and excluded for `reason`)."""
        status = EXCLUDED if reason else LIVE
        reason_sql = f"'{reason}'" if reason else "NULL"
        # Each line's datetime is its lastmod (almost always): stored once, `source_time`
        # '' (schema.source_time).
        same = rows.times is rows.lastmods
        time_sql = "''" if same else "?"
        insert_values(
            self.conn,
            "INSERT OR FAIL INTO urls (loc, source_time, lastmod, entry_bytes, source_id, status, "
            "reason, first_seen, change_count, shard)",
            f"(?, {time_sql}, ?, ?, {source_id}, '{status}', {reason_sql}, "
            f"'{FIRST_LOAD_SEEN}', 0, {'NULL' if shard is None else shard})",
            (rows.locs, rows.lastmods, rows.sizes)
            if same
            else (rows.locs, rows.times, rows.lastmods, rows.sizes),
        )


def _line_end(lines: bytes, start: int, count: int) -> int:
    """Return the offset after the `count`th line end from offset `start` of `lines`."""
    at = start
    for _ in range(count):
        at = lines.index(b"\n", at) + 1
    return at
