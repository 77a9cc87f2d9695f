"""URL lists in the ledger: loaded by chunks, re-read by the chunks that changed.

A list is remembered as its content-defined chunks in file order (`list_chunks`), the
ids of the URLs each chunk's bytes list (`list_chunk_urls`, by digest) and the URLs
listed in more than one chunk (`list_repeats`). Of a URL listed more than once, its
last line counts, as in a full read.

An empty ledger loads a list's lines straight into `urls`, with sizes, lastmods and
shards worked out a chunk at a time (listfirst.py). Otherwise the parsed lines are
staged in a temporary table and compared with `urls` in SQL at the end; only the URLs
that differ become observations, and the URLs of removed chunks that no line lists any
more are gone.
A re-read that parsed only the new chunks (the source checked with `conflicts` that no
URL of theirs is listed elsewhere) and a full read give the same ledger.
"""

# Annotations evaluated, not text: see core/observation.py.
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from itertools import islice
from typing import TYPE_CHECKING

from sitemapd.core import logs
from sitemapd.core.listlines import HELD, ListLines
from sitemapd.core.observation import Gone, ListChunk, Observation, Seen
from sitemapd.ledger.listqueries import batches, listed_ids
from sitemapd.ledger.redate import LINE_FIELDS, apply_redated
from sitemapd.ledger.run import Run
from sitemapd.ledger.schema import EXCLUDED, LIVE, source_time
from sitemapd.ledger.spool import ShardSpool, SpooledShard

if TYPE_CHECKING:
    from sitemapd.ledger.listfirst import FirstLoad

log = logs.Logger("sitemapd.ledger")

_BATCH = 2000
# Staged lines of a list whose URLs `ListLoad` keeps to tell that none is listed twice.
_STAGED_KEPT = 20_000
# The row of `urls` as a list line would leave it: anything else is a difference.
# (`IS`: a URL listed undated has no source time, and a datetime given it is a change.)
_AS_LISTED = (
    f"u.source_id = ? AND {LINE_FIELDS} "
    f"AND (w.stamp IN ('', '{HELD}') OR w.stamp IS {source_time('u')})"
)


# A list's chunk read in this run: pos, digest, first line, rejects, end, parsed.
_ReadChunk = tuple[int, bytes, int, int, int, bool]
# A list's chunk as `list_chunks` records it: source id, pos, digest, first line, rejects,
# end.
_ChunkRow = tuple[int, int, bytes, int, int, int]


class ListLoad:
    """The URL-list chunks of one `Ledger.apply()` run."""

    def __init__(
        self,
        run: Run,
        update_chunk: Callable[[list[Observation | Seen | Gone]], None],
        counted: Callable[[int], None],
    ) -> None:
        self.run = run
        # Applies the rows of a changed chunk, as `Apply` applies any observation.
        self.update_chunk = update_chunk
        # Told of the rows updated in SQL (redate.py), as `update_chunk` is of its rows.
        self.counted = counted
        self.conn = run.conn
        self.read: dict[str, list[_ReadChunk]] = {}  # source name -> its chunks read
        # Lists applied by `finish`: (read whole, the chunk records and their digests
        # before, digests now).
        self.finished: dict[str, tuple[bool, set[_ChunkRow], Counter[bytes], Counter[bytes]]] = {}
        # The URLs of the lines each list stages, while they are few (`_STAGED_KEPT`;
        # None past it): none listed twice, the staged lines are their own winners and
        # no chunk lists a URL another does (`_repeated`).
        self.staged: dict[str, list[str] | None] = {}
        # The lines an empty ledger loads (`start` makes it).
        self.first: FirstLoad | None = None

    @property
    def sources(self) -> set[str]:
        """Return the list sources read in this run."""
        return set(self.read)

    def start(self) -> None:
        """Make the staging tables of this run, empty."""
        if self.run.bulk:
            # Loaded for an empty ledger alone: a re-read stages its lines.
            from sitemapd.ledger.listfirst import FirstLoad

            self.first = FirstLoad(self.run)
            self.run.spool = ShardSpool(self.run.ledger.spool_folder)
            return
        self.conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS list_lines "
            "(pos INTEGER PRIMARY KEY, source_id INTEGER, chunk INTEGER, loc TEXT, stamp TEXT)"
        )
        self.conn.execute("DELETE FROM temp.list_lines")

    def take(self, chunk: ListChunk) -> None:
        """Load or stage the lines of `chunk`."""
        source_id = self.run.source_id(chunk.source)
        parsed = chunk.lines is not None
        self.read.setdefault(chunk.source, []).append(
            (chunk.pos, chunk.digest, chunk.first_line, chunk.rejects, chunk.end, parsed)
        )
        self.run.observed.add(chunk.source)
        if chunk.lines is None:
            return
        if self.first is not None:  # a bulk run's
            self.first.load(source_id, chunk.digest, chunk.lines)
        else:
            self.conn.executemany(
                "INSERT INTO temp.list_lines (source_id, chunk, loc, stamp) "
                f"VALUES ({source_id}, {chunk.pos}, ?, ?)",
                chunk.lines,
            )
            staged = self.staged.setdefault(chunk.source, [])
            if staged is not None:
                staged += ListLines.of(chunk.lines).locs
                if len(staged) > _STAGED_KEPT:
                    self.staged[chunk.source] = None

    # -- an empty ledger ------------------------------------------------------------------

    def finish_bulk(self, repeated: list[int]) -> None:
        """Record the chunks loaded, and `repeated`: ids of URLs listed more than once."""
        assert self.first is not None  # `start` made it for the bulk run
        self.first.finish()
        list_ids = {self.run.source_id(source) for source in self.read}
        self.conn.executemany(
            "INSERT OR IGNORE INTO list_repeats (source_id, url_id) "
            "SELECT source_id, id FROM urls WHERE id = ? AND source_id = ?",
            [(url_id, source_id) for url_id in repeated for source_id in list_ids],
        )
        for source, chunks in self.read.items():
            source_id = self.run.source_id(source)
            self._record(source_id, chunks, self._recorded(source_id))

    def spooled(self, trusted: bool) -> dict[int, SpooledShard]:
        """Return the shards the load spooled that hold what the ledger now does; none
        unless `trusted` (no row deleted or repeated since it was loaded)."""
        spool = self.run.spool
        if spool is None:
            return {}
        if not trusted:
            spool.drop()
            return {}
        return spool.keep(self.run.shards.states)

    def _recorded(self, source_id: int) -> set[_ChunkRow]:
        """Return the list's chunk records."""
        return set(
            self.conn.execute(
                "SELECT source_id, pos, digest, first_line, rejects, end_byte FROM list_chunks "
                "WHERE source_id = ?",
                (source_id,),
            )
        )

    def _record(self, source_id: int, chunks: list[_ReadChunk], recorded: set[_ChunkRow]) -> None:
        """Make the list's chunk records, `recorded` until now, those of `chunks`, writing
        only the rows that differ: a changed line rewrites one row, not the pages of every
        chunk's."""
        rows = {(source_id, *chunk) for *chunk, _ in chunks}
        positions = {pos for _, pos, *_ in rows}
        self.conn.executemany(
            "DELETE FROM list_chunks WHERE source_id = ? AND pos = ?",
            [(source_id, pos) for _, pos, *_ in recorded if pos not in positions],
        )
        self.conn.executemany(
            "INSERT OR REPLACE INTO list_chunks "
            "(source_id, pos, digest, first_line, rejects, end_byte) VALUES (?, ?, ?, ?, ?, ?)",
            sorted(rows - recorded),
        )

    # -- a ledger that knows the list -----------------------------------------------------

    def finish(self, complete: Collection[str]) -> None:
        """Run what each list read in full (`complete`) changed; `record` follows."""
        for source, chunks in self.read.items():
            if source in complete:
                self._finish_source(source, chunks)

    def record(self, held: Collection[str]) -> None:
        """Remember the chunks of each list applied, but of those whose removals are
        `held`: their next read must find the same changes again."""
        for source, (full, recorded, known, now_listed) in self.finished.items():
            if source not in held:
                source_id = self.run.source_id(source)
                self._record(source_id, self.read[source], recorded)
                self._record_urls(source, source_id, full, known, now_listed)

    def _finish_source(self, source: str, chunks: list[_ReadChunk]) -> None:
        source_id = self.run.source_id(source)
        full = all(parsed for *_, parsed in chunks)
        # Read once for the digests known here and for `record`, which rewrites those
        # that differ: nothing writes the list's chunk records in between.
        recorded = self._recorded(source_id)
        known = Counter(digest for _, _, digest, *_ in recorded)
        now_listed = Counter(digest for _, digest, *_ in chunks)
        self.conn.execute("DROP TABLE IF EXISTS temp.list_winners")
        self.conn.execute(
            "CREATE TEMP TABLE list_winners (loc TEXT PRIMARY KEY, stamp TEXT, pos INTEGER) "
            "WITHOUT ROWID"
        )
        if self._repeated(source):
            # Of a URL listed twice, its last line: SQLite takes the bare columns of max().
            self.conn.execute(
                "INSERT INTO temp.list_winners SELECT loc, stamp, max(pos) FROM temp.list_lines "
                "WHERE source_id = ? GROUP BY loc",
                (source_id,),
            )
        else:
            self.conn.execute(
                "INSERT INTO temp.list_winners SELECT loc, stamp, pos FROM temp.list_lines "
                "WHERE source_id = ?",
                (source_id,),
            )
        if full and self._empty(source, source_id):
            return
        apply_redated(self.run, source_id, full, self.counted)
        self._apply(self._differences(source, source_id))
        removed = [digest for digest in known if digest not in now_listed]
        self._apply(self._gone(source, source_id, full, removed))
        self.finished[source] = (full, recorded, known, now_listed)

    def _empty(self, source: str, source_id: int) -> bool:
        """True, logged, when a full read found no line while the list had URLs."""
        if self.conn.execute("SELECT 1 FROM temp.list_winners LIMIT 1").fetchone():
            return False
        if not self.run.owns_any(source):
            return False
        # A list that lost every line is far likelier a failed export than a site
        # deleting every page.
        self.run.changes.empty_scans.append(source)
        log.error(
            "%s: a full read found no URL while it has published URLs: treated as an "
            "outage, they stay (remove the source from the config to drop them)",
            source,
        )
        return True

    def _differences(self, source: str, source_id: int) -> Iterator[Observation]:
        query = (
            "SELECT w.loc, w.stamp FROM temp.list_winners w LEFT JOIN urls u ON u.loc = w.loc "
            f"WHERE u.id IS NULL OR NOT ({_AS_LISTED}) ORDER BY w.pos"
        )
        for loc, stamp in self._found([(query, (source_id,))]):
            # A held line changes nothing: a URL new or gone waits for its datetime.
            if stamp != HELD:
                yield Observation(loc, source, None, stamp or None)

    def _gone(
        self, source: str, source_id: int, full: bool, removed: list[bytes]
    ) -> Iterator[Gone]:
        queries: list[tuple[str, Sequence[object]]]
        if full:
            queries = [
                (
                    "SELECT loc, NULL FROM urls WHERE source_id = ? AND status IN (?, ?) "
                    "AND loc NOT IN (SELECT loc FROM temp.list_winners)",
                    (source_id, LIVE, EXCLUDED),
                )
            ]
        else:
            queries = [
                (
                    f"SELECT loc, NULL FROM urls WHERE id IN ({','.join('?' * len(batch))}) "
                    "AND loc NOT IN (SELECT loc FROM temp.list_winners)",
                    batch,
                )
                for batch in batches(sorted(listed_ids(self.conn, source_id, removed)))
            ]
        for loc, _ in self._found(queries):
            yield Gone(loc, source)

    def _found(
        self, queries: Collection[tuple[str, Sequence[object]]]
    ) -> Iterator[tuple[str, str | None]]:
        """Yield the `(loc, stamp)` rows `queries` select, in their order, a batch at a
        time: kept in a temporary table while the URLs they name are updated, not held in
        memory (a million re-dated lines took 230 MB as Python's)."""
        if not queries:  # a re-read that removed no chunk
            return
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS list_found (loc TEXT, stamp TEXT)")
        self.conn.execute("DELETE FROM temp.list_found")
        for query, params in queries:
            self.conn.execute(f"INSERT INTO temp.list_found (loc, stamp) {query}", params)
        last = 0
        while rows := self.conn.execute(
            "SELECT rowid, loc, stamp FROM temp.list_found WHERE rowid > ? ORDER BY rowid LIMIT ?",
            (last, _BATCH),
        ).fetchall():
            last = rows[-1][0]
            for _, loc, stamp in rows:
                yield loc, stamp

    def _apply(self, items: Iterator[Observation] | Iterator[Gone]) -> None:
        while batch := list[Observation | Seen | Gone](islice(items, _BATCH)):
            self.update_chunk(batch)

    def _record_urls(
        self,
        source: str,
        source_id: int,
        full: bool,
        known: Counter[bytes],
        now_listed: Counter[bytes],
    ) -> None:
        """Store the URL ids of the chunks parsed in this read, and which URLs their lines
        list more than once; forget the chunks no longer in the file."""
        if full:
            self.conn.execute("DELETE FROM list_chunk_urls WHERE source_id = ?", (source_id,))
            self.conn.execute("DELETE FROM list_repeats WHERE source_id = ?", (source_id,))
        else:
            self.conn.executemany(
                "DELETE FROM list_chunk_urls WHERE source_id = ? AND digest = ?",
                [(source_id, digest) for digest in known if digest not in now_listed],
            )
        digests = {pos: digest for pos, digest, *_ in self.read[source]}
        for chunk, ids in self._chunk_ids(source_id):
            first, count = ids[0], len(ids)
            # Consecutive ids (a first load's, read again) as their range: a million URLs'
            # took 8 MB of the ledger as arrays, 1 MB as ranges.
            row: tuple[int, bytes, bytes, int | None, int | None]
            if ids == array("q", range(first, first + count)):
                row = (source_id, digests[chunk], b"", first, count)
            else:
                row = (source_id, digests[chunk], ids.tobytes(), None, None)
            self.conn.execute(
                "INSERT OR REPLACE INTO list_chunk_urls (source_id, digest, ids, first_id, "
                "id_count) VALUES (?, ?, ?, ?, ?)",
                row,
            )
        if not self._repeated(source):
            return
        # The URLs listed twice are found among the staged lines first (most often none
        # is), and only they are looked up in `urls`.
        self.conn.execute(
            "INSERT OR IGNORE INTO list_repeats (source_id, url_id) "
            "SELECT ?, u.id FROM (SELECT loc FROM temp.list_lines WHERE source_id = ? "
            "GROUP BY loc HAVING count(DISTINCT chunk) > 1) l JOIN urls u ON u.loc = l.loc",
            (source_id, source_id),
        )

    def _chunk_ids(self, source_id: int) -> Iterator[tuple[int, "array[int]"]]:
        """Yield each staged chunk of list `source_id` with the ids of the URLs its lines
        list, in order, one chunk's at a time (a whole list's took 8 bytes a URL)."""
        chunk, ids = -1, array("q")
        # Read as it goes: `list_chunk_urls`, written meanwhile, is not among what it reads.
        for pos, url_id in self.conn.execute(
            "SELECT l.chunk, u.id FROM temp.list_lines l JOIN urls u ON u.loc = l.loc "
            "WHERE l.source_id = ? ORDER BY l.pos",
            (source_id,),
        ):
            if pos != chunk:
                if ids:
                    yield chunk, ids
                chunk, ids = pos, array("q")
            ids.append(url_id)
        if ids:
            yield chunk, ids

    def _repeated(self, source: str) -> bool:
        """True unless the lines staged of list `source` are known to list no URL twice
        (a re-read of a few chunks: their URLs in a set, against two queries that group
        the staged lines by URL). Asked again, it answers the same."""
        staged = self.staged.get(source, [])
        repeated = staged is None or len(set(staged)) < len(staged)
        self.staged[source] = None if repeated else []  # the answer kept, the URLs let go
        return repeated
