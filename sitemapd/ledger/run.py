"""The state of one `Ledger.apply()` run, which the list and change-log loads share with
the decisions of `Apply`: its connection, the shard moves, the journal and the sources."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Protocol

from sitemapd.ledger.edits import ShardEdits
from sitemapd.ledger.model import NEW, UPDATED, ChangeSet, RobotsRules
from sitemapd.ledger.removals import RemovalGuard
from sitemapd.ledger.schema import EXCLUDED, LIVE
from sitemapd.ledger.shards import Limits, Shards
from sitemapd.ledger.spool import ShardSpool, SpooledShard


class LedgerFile(Protocol):
    """What a run reads of the `Ledger` that runs it (the ledger sits above its runs)."""

    conn: sqlite3.Connection
    limits: Limits
    spool_folder: Path

    def empty(self) -> bool: ...

    def last_seq(self) -> int: ...

    def cursor(self, name: str) -> str | None: ...

    @property
    def edits(self) -> ShardEdits: ...


class Run:
    """What one transaction has decided so far; `Apply` decides, loads add to it."""

    def __init__(
        self, ledger: LedgerFile, robots: RobotsRules, now: str, guard: RemovalGuard
    ) -> None:
        self.conn = ledger.conn
        self.ledger = ledger
        self.robots = robots
        self.now = now
        self.guard = guard
        # Guarded sources that said some URLs are gone (in temp.pending until `finish`).
        self.pending: set[str] = set()
        self.changes = ChangeSet()
        self.shards = Shards(self.conn, ledger.limits)
        # (url id, kind, at); rows read from the ledger always have their id.
        self.journal: list[tuple[int | None, str, str]] = []
        # Sources that gave at least one present URL in this run.
        self.observed: set[str] = set()
        self._source_ids: dict[str, int] = dict(
            (name, id_) for id_, name in self.conn.execute("SELECT id, name FROM sources")
        )
        self.bulk = False
        # url id -> its new alternates text, for alternate_links.
        self.links: dict[int | None, str | None] = {}
        self.first_seq = ledger.last_seq()
        # Bulk runs: loc -> the last row id inserted before a Gone for it.
        self.bulk_gone: dict[str, int] = {}
        # Bulk runs: whether a row with alternates was inserted (only observations of
        # pages have them), for `_finish_bulk` to record.
        self.bulk_alternates = False
        # Bulk runs: the shards the loads of URL lists and change logs fill, rendered as
        # they fill (spool.py), then shard id -> the file of those the ledger holds as is.
        self.spool: ShardSpool | None = None
        self.spooled: dict[int, SpooledShard] = {}

    def source_id(self, name: str) -> int:
        """Return the id of source `name`, registering it on first use."""
        found = self._source_ids.get(name)
        if found is None:
            cursor = self.conn.execute("INSERT INTO sources (name) VALUES (?)", (name,))
            found = self._source_ids[name] = cursor.lastrowid or 0
        return found

    def write_journal(self) -> None:
        """Write the journal rows of the run not yet written."""
        self.conn.executemany(
            "INSERT INTO journal (url_id, kind, at) VALUES (?, ?, ?)", self.journal
        )
        self.journal.clear()

    def note_new(self, first: int, last: int) -> None:
        """Note the rows inserted with ids `first` to `last` as seen, and journal the live
        ones as new (a ledger with URLs: its first load journals at its end)."""
        # The new rows' ids are a range: one statement each, not one a row.
        self.conn.execute(
            "INSERT OR IGNORE INTO temp.seen SELECT id FROM urls WHERE id BETWEEN ? AND ?",
            (first, last),
        )
        self.conn.execute(
            "INSERT INTO journal (url_id, kind, at) SELECT id, ?, ? FROM urls "
            "WHERE id BETWEEN ? AND ? AND status = ? ORDER BY id",
            (NEW, self.now, first, last, LIVE),
        )

    # Decisions ---------------------------------------------------------------------

    def save_links(self) -> None:
        """Record the alternates of URLs whose alternates changed in this run."""
        self.conn.executemany(
            "DELETE FROM alternate_links WHERE url_id = ?", [(i,) for i in self.links]
        )
        self.conn.executemany(
            "INSERT OR IGNORE INTO alternate_links (href, url_id) VALUES (?, ?)",
            [
                (line.split("\t", 1)[1], url_id)
                for url_id, text in self.links.items()
                for line in (text or "").splitlines()
            ],
        )

    def dirty_alternate_shards(self) -> None:
        """Mark dirty the shards of pages naming, as an alternate, a URL that entered or
        left the sitemaps in this run: their entries list it or leave it out."""
        if self.conn.execute("SELECT 1 FROM alternate_links LIMIT 1").fetchone() is None:
            return  # no page names alternates (URL lists, most sites)
        # Rows alone: only a first load journals runs, and it does not come here.
        # CROSS JOIN fixes the order, from this run's journal rows out: without statistics
        # SQLite would start from every URL in a shard (0.15 s a run at a million URLs).
        for (shard_id,) in self.conn.execute(
            "SELECT DISTINCT m.shard FROM journal j CROSS JOIN urls t CROSS JOIN "
            "alternate_links l CROSS JOIN urls m WHERE j.seq > ? AND j.kind != ? "
            "AND t.id = j.url_id AND l.href = t.loc AND m.id = l.url_id "
            "AND m.shard IS NOT NULL",
            (self.first_seq, UPDATED),
        ):
            self.shards.dirty.add(shard_id)

    def recount_shards(self) -> None:
        for state in self.shards.states.values():
            state.url_count = state.bytes = 0
        for shard_id, count, size, lastmod in self.conn.execute(
            "SELECT shard, count(*), sum(entry_bytes), max(lastmod) FROM urls "
            "WHERE shard IS NOT NULL GROUP BY shard"
        ):
            state = self.shards.states[shard_id]
            state.url_count, state.bytes, state.lastmod = count, size, lastmod
        self.shards.dirty.update(self.shards.states)

    def owns_any(self, source: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM urls WHERE source_id = ? AND status IN (?, ?) LIMIT 1",
            (self.source_id(source), LIVE, EXCLUDED),
        ).fetchone()
        return row is not None
