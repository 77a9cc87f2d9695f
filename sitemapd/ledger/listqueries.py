"""What a URL list source asks the ledger before reading: the chunks it knows of the
list, and whether the URLs of new lines are listed by other chunks too (lists.py loads
what the source then reads)."""

# Annotations evaluated, not text: see core/observation.py.
import sqlite3
from array import array
from collections.abc import Collection, Iterable, Iterator
from typing import TypeVar

from sitemapd.ledger.schema import EXCLUDED, LIVE
from sitemapd.ledger.transaction import Transactions

_T = TypeVar("_T")


def listed_ids(conn: sqlite3.Connection, source_id: int, digests: Iterable[bytes]) -> set[int]:
    """Return the ids of the URLs that the chunks `digests` of a list list."""
    ids: set[int] = set()
    for digest in digests:
        row = conn.execute(
            "SELECT ids, first_id, id_count FROM list_chunk_urls "
            "WHERE source_id = ? AND digest = ?",
            (source_id, digest),
        ).fetchone()
        if row is not None:
            listed = array("q")
            listed.frombytes(row[0])
            ids.update(listed)
            if row[1] is not None:  # a first load's range (schema.py's version 10)
                ids.update(range(row[1], row[1] + row[2]))
    return ids


def batches(values: Collection[_T]) -> Iterator[list[_T]]:
    """Yield `values` in lists of at most 500: SQLite binds up to 999 parameters."""
    ordered = list(values)
    for start in range(0, len(ordered), 500):
        yield ordered[start : start + 500]


class KnownChunk:
    """A chunk of a list as the ledger recorded it."""

    __slots__ = ("digest", "end", "lines", "rejects")

    digest: bytes
    rejects: int  # lines refused
    lines: int | None  # line ends it holds; None for the last chunk (not recorded)
    end: int | None  # offset after its last byte; None when recorded before v8

    def __init__(self, digest: bytes, rejects: int, lines: int | None, end: int | None) -> None:
        self.digest = digest
        self.rejects = rejects
        self.lines = lines
        self.end = end


class ListQueries(Transactions):
    """What a list source asks before reading: the chunks known, and whether new lines
    name URLs that other chunks list too."""

    def _source_id(self, source: str) -> int | None:
        row = self._read().execute("SELECT id FROM sources WHERE name = ?", (source,)).fetchone()
        return None if row is None else int(row[0])

    def list_chunks(self, source: str) -> list[KnownChunk]:
        """Return the list's chunks at its last read, in order."""
        query = (
            "SELECT c.digest, c.rejects, c.first_line, c.end_byte "
            "FROM list_chunks c JOIN sources s ON s.id = c.source_id "
            "WHERE s.name = ? ORDER BY c.pos"
        )
        rows = self._read().execute(query, (source,)).fetchall()
        # A chunk's lines run to the next one's first line (the last one's are not known):
        # taken here, as a window function (`lead`) took SQLite three times as long as the
        # rows themselves.
        nexts = [*(first for _, _, first, _ in rows[1:]), None]
        return [
            KnownChunk(digest, rejects, None if after is None else after - first, end)
            for (digest, rejects, first, end), after in zip(rows, nexts, strict=False)
        ]

    def list_conflicts(
        self, source: str, locs: Collection[str], removed: Collection[bytes]
    ) -> bool:
        """True when a re-read of only the new chunks could be wrong: one of `locs` is
        listed by a chunk that stays, or a URL of a `removed` chunk is listed twice."""
        source_id = self._source_id(source)
        if source_id is None:
            return bool(locs or removed)
        gone_with = listed_ids(self._read(), source_id, removed)
        # A changed line mostly lists a URL its removed chunk listed: those are known by
        # their ids (one chunk's are neighbours, in a few pages of `urls`), and only the
        # others are looked up by loc (a thousand of those cost 2-5 ms more).
        elsewhere = set(locs) - self._locs(gone_with)
        for batch in batches(elsewhere):
            if (
                self._read()
                .execute(
                    f"SELECT 1 FROM urls WHERE loc IN ({','.join('?' * len(batch))}) "
                    "AND status IN (?, ?) LIMIT 1",
                    [*batch, LIVE, EXCLUDED],
                )
                .fetchone()
            ):
                return True
        for ids in batches(gone_with):
            if (
                self._read()
                .execute(
                    f"SELECT 1 FROM list_repeats WHERE source_id = ? AND url_id IN "
                    f"({','.join('?' * len(ids))}) LIMIT 1",
                    [source_id, *ids],
                )
                .fetchone()
            ):
                return True
        return False

    def list_repeats(self, source: str) -> bool:
        """True when the list's last read listed a URL more than once."""
        source_id = self._source_id(source)
        if source_id is None:
            return False
        found = self._read().execute(
            "SELECT 1 FROM list_repeats WHERE source_id = ? LIMIT 1", (source_id,)
        )
        return found.fetchone() is not None

    def _locs(self, ids: Collection[int]) -> set[str]:
        """Return the locs of the URLs `ids` (those still in the ledger)."""
        locs: set[str] = set()
        for batch in batches(sorted(ids)):
            locs.update(
                loc
                for (loc,) in self._read().execute(
                    f"SELECT loc FROM urls WHERE id IN ({','.join('?' * len(batch))})", batch
                )
            )
        return locs
