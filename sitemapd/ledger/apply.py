"""Applying observations: what each one changes in `urls`, the shards and the journal.

One `Apply` is one `Ledger.apply()` transaction. An empty ledger takes a bulk path: rows
are inserted without lookups and the indexes are built once at the end.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Collection, Iterable, Mapping

from sitemapd.core import logs
from sitemapd.core.observation import (
    Changes,
    Checkpoint,
    Gone,
    Item,
    ListChunk,
    Observation,
    Rejected,
    Seen,
)
from sitemapd.ledger.decide import CHUNK, UNSEEN, Decisions
from sitemapd.ledger.journal import MAX_RUNS, journal_first_load, order_by_lastmod
from sitemapd.ledger.lists import ListLoad
from sitemapd.ledger.model import (
    BASELINE_CURSOR,
    FIRST_LOAD_CURSOR,
    NEW,
    RobotsRules,
)
from sitemapd.ledger.removals import RemovalGuard, decide
from sitemapd.ledger.run import LedgerFile
from sitemapd.ledger.schema import (
    EXCLUDED,
    LIVE,
    create_url_indexes,
    drop_loc_index,
    insert_rows,
)

log = logs.Logger("sitemapd.ledger")
# Rows a run updates with the shard edits noted (edits.py): each costs SQLite twice its
# time, worth it for the few rows a publish splices into a shard's published bytes.
NOTED_MOST = 500


class Apply(Decisions):
    """One `Ledger.apply()` run: what each observation changes, and the end of the run."""

    def __init__(
        self,
        ledger: LedgerFile,
        robots: RobotsRules,
        now: str,
        guard: RemovalGuard,
        present: Mapping[str, Callable[[list[str]], set[str]]],
    ) -> None:
        super().__init__(ledger, robots, now, guard)
        self.lists = ListLoad(self, self._update, self._count)
        self.updated = 0  # rows given to `update_chunk`
        self.present = present

    # Phases ------------------------------------------------------------------------

    def start(self, complete: Collection[str]) -> None:
        # An empty ledger takes a bulk path: no lookups, indexes built once at the end.
        self.bulk = self.ledger.empty()
        if self.bulk:
            self.ledger.edits.stop()
            drop_loc_index(self.conn)
            # The commit leaves the WAL to `Ledger._checkpoint_behind`.
            self.conn.execute("PRAGMA wal_autocheckpoint = 0")
        else:
            # Before this run's first write: a publish splices what it changes (edits.py).
            self.ledger.edits.start()
            for table in ("seen", "pending"):
                self.conn.execute(
                    f"CREATE TEMP TABLE IF NOT EXISTS {table} (id INTEGER PRIMARY KEY)"
                )
                self.conn.execute(f"DELETE FROM temp.{table}")
        self.conn.executemany("DELETE FROM rejects WHERE source = ?", [(s,) for s in complete])
        if self.ledger.cursor("robots") != self.robots.fingerprint:
            if not self.bulk:
                self._recheck_robots()
            self.conn.execute(
                "INSERT OR REPLACE INTO cursors (name, value) VALUES ('robots', ?)",
                (self.robots.fingerprint,),
            )
        self.lists.start()
        self.changes.moved += self.shards.enforce_limits()

    def consume(self, items: Iterable[Item]) -> None:
        batch: list[Item] = []
        for item in items:
            if isinstance(item, Changes) and not self.bulk:
                # Its new URLs inserted at once, after what came before it. Change-log
                # rows' modules load with the first of them: a list's build has none.
                from sitemapd.ledger.changes import insert_new

                self._consume_batch(batch)
                batch = []
                item = insert_new(self, item)
            if isinstance(item, ListChunk) or (self.bulk and isinstance(item, Changes)):
                # Loaded or staged as it comes (a list's lines are never all held), after
                # what came before it.
                self._consume_batch(batch)
                batch = []
                if isinstance(item, ListChunk):
                    self.lists.take(item)
                else:
                    from sitemapd.ledger.changes import load_changes

                    load_changes(self, item)
                continue
            for one in item.items() if isinstance(item, Changes) else (item,):
                batch.append(one)
                if len(batch) == CHUNK:
                    self._consume_batch(batch)
                    batch = []
        self._consume_batch(batch)

    def _consume_batch(self, batch: list[Item]) -> None:
        if not batch:
            return
        rejects = [item for item in batch if isinstance(item, Rejected)]
        if rejects:
            self.changes.rejected += len(rejects)
            self.conn.executemany(
                "INSERT OR REPLACE INTO rejects (source, item, reason, at) VALUES (?, ?, ?, ?)",
                [(r.source, r.item, r.reason, self.now) for r in rejects],
            )
        checkpoints = [item for item in batch if isinstance(item, Checkpoint)]
        if checkpoints:
            self.conn.executemany(
                "INSERT OR REPLACE INTO cursors (name, value) VALUES (?, ?)", checkpoints
            )
        present = [item for item in batch if isinstance(item, Observation | Seen | Gone)]
        self.observed.update(item.source for item in present)
        if self.bulk:
            self._consume_bulk(present)
        else:
            self._update(present)

    def _update(self, items: list[Observation | Seen | Gone]) -> None:
        """Apply `items` to rows the ledger may hold."""
        self._count(len(items))
        self.update_chunk(items)

    def _count(self, rows: int) -> None:
        """Count `rows` about to be updated: what changed in place is noted until the run
        has updated more rows than a publish would splice."""
        self.updated += rows
        if self.updated > NOTED_MOST:
            self.ledger.edits.stop()

    def _consume_bulk(self, items: list[Observation | Seen | Gone]) -> None:
        """Insert new rows, noting for each Gone how far the rows inserted before it go."""
        run: list[Observation] = []
        for item in items:
            if isinstance(item, Observation):
                run.append(item)
            elif isinstance(item, Gone):
                self._insert_new(run)
                run = []
                (last,) = self.conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()
                self.bulk_gone[item.loc] = last
        self._insert_new(run)

    def _insert_new(self, observations: list[Observation]) -> None:
        """Insert rows for URLs `observations` see for the first time, in their order."""
        rows = [self._new_row(obs) for obs in observations]
        self.bulk_alternates = self.bulk_alternates or any(row.alternates for row in rows)
        # Of a URL given twice to the bulk path, the row inserted last is the one kept.
        insert_rows(self.conn, rows)

    def finish(
        self,
        complete: Collection[str],
        configured: Collection[str] | None,
        complete_before: Collection[str],
    ) -> None:
        if self.bulk:
            self._finish_bulk()
        else:
            self.lists.finish(complete)
            # Lists say what is gone themselves (`ListLoad`): decided like partial reads.
            lists = self.lists.sources
            for source in self.pending - (set(complete) - lists):
                self._remove_missing(source, "id IN (SELECT id FROM temp.pending)")
            for source in set(complete) - lists:
                if source in self.observed or not self.owns_any(source):
                    self._keep_present(source)
                    self._remove_missing(source, UNSEEN)
                else:
                    # A full scan that finds nothing at all is far likelier an empty mount
                    # or a failed export than a site deleting every page.
                    self.changes.empty_scans.append(source)
                    log.error(
                        "%s: a full scan found nothing while it has published URLs: treated "
                        "as an outage, they stay (remove the source from the config to drop "
                        "them)",
                        source,
                    )
            self.lists.record({hold.source for hold in self.changes.held})
            # Only a run that read every configured source in full may retire the others:
            # their URLs may be waiting to be claimed by a renamed source.
            if configured is not None and set(configured) <= {*complete, *complete_before}:
                for name, source_id in list(self._source_ids.items()):
                    gone = 0 if name in configured else self._mark_gone(source_id)
                    if gone:
                        log.warning("source %r is no longer configured: %d URLs gone", name, gone)
        self.changes.moved += self.shards.enforce_limits()
        self.write_journal()
        if not self.bulk:
            order_by_lastmod(self.conn, self.first_seq, self.now)
            self.save_links()
            self.dirty_alternate_shards()
        self.changes.dirty_shards = self.shards.flush()

    def _finish_bulk(self) -> None:
        # SQLite sorts for an index build on as many threads as there are cores, each with
        # a buffer of the cache's size. At the end of a first load the parse worker is
        # done and the second core idle: a 10M load's index, merged from temporary files,
        # took 4 s less (27.8 s against 31.9). Buffers of 4 MiB rather than 8 (the
        # writer's 16 MiB cache before) hand the second thread its first run sooner: a
        # million URLs' index 0.29 s against 0.32 s, a 10M load's no slower.
        self.conn.execute(f"PRAGMA threads = {os.cpu_count() or 1}")
        self.conn.execute("PRAGMA cache_size = -4096")
        if self.spool is not None:
            # Its last shard is complete: synced while the index is built, not after.
            self.spool.seal()
        repeated: list[int] = []
        try:
            create_url_indexes(self.conn)
        except sqlite3.IntegrityError:
            # A source listed a URL twice: keep its last line, then rebuild the counts.
            repeated = [
                url_id
                for (url_id,) in self.conn.execute(
                    "SELECT max(id) FROM urls GROUP BY loc HAVING count(*) > 1"
                )
            ]
            self.conn.execute(
                "DELETE FROM urls WHERE id NOT IN (SELECT max(id) FROM urls GROUP BY loc)"
            )
            self.recount_shards()
            create_url_indexes(self.conn)
            # `_new_row` counted the duplicates too.
            self.changes.new = sum(state.url_count for state in self.shards.states.values())
        # A URL deleted later in the same first run (a change log replaying a create and a
        # delete) was never published: it leaves no row.
        deleted = False
        for loc, upto in self.bulk_gone.items():
            row = self.conn.execute(
                "SELECT id, status, shard, entry_bytes FROM urls WHERE loc = ?", (loc,)
            ).fetchone()
            if row is None:
                continue
            url_id, status, shard, size = row
            if url_id <= upto:
                if shard is not None:
                    self.shards.remove(shard, size)
                if status == LIVE:
                    self.changes.new -= 1
                self.conn.execute("DELETE FROM urls WHERE id = ?", (url_id,))
                deleted = True
        self._journal_live()
        # Feeds and notifications treat the first build as the site's baseline, not news.
        self.conn.execute(
            "INSERT OR REPLACE INTO cursors (name, value) "
            "SELECT ?, coalesce(max(seq), 0) FROM journal",
            (BASELINE_CURSOR,),
        )
        # What the rows a list's first load wrote hold as `first_seen` stands for.
        self.conn.execute(
            "INSERT OR REPLACE INTO cursors (name, value) VALUES (?, ?)",
            (FIRST_LOAD_CURSOR, self.now),
        )
        if self.bulk_alternates:
            self.links = dict(
                self.conn.execute("SELECT id, alternates FROM urls WHERE alternates IS NOT NULL")
            )
            self.save_links()
        self.lists.finish_bulk(repeated)
        self.spooled = self.lists.spooled(trusted=not (repeated or deleted))

    def _journal_live(self) -> None:
        """Journal every live URL as new, in id order: as runs of consecutive ids where
        they make few (journal.py), else a row each."""
        # Every live URL has a shard and no other has: the shards count them.
        live = sum(state.url_count for state in self.shards.states.values())
        if not live:
            return
        # Each in a query of its own: a query asking both reads every row.
        low, high = self.conn.execute(
            "SELECT (SELECT min(id) FROM urls), (SELECT max(id) FROM urls)"
        ).fetchone()
        spans = [(low, high)]
        if high - low + 1 != live:
            # Gaps (excluded URLs, a repeated URL's dropped row): the islands of live ids.
            spans = self.conn.execute(
                "SELECT min(id), max(id) FROM (SELECT id, id - row_number() OVER "
                "(ORDER BY id) AS island FROM urls WHERE status = ?) "
                "GROUP BY island ORDER BY 1 LIMIT ?",
                (LIVE, MAX_RUNS + 1),
            ).fetchall()
        if len(spans) > MAX_RUNS:
            self.conn.execute(
                "INSERT INTO journal (url_id, kind, at) SELECT id, ?, ? FROM urls "
                "WHERE status = ? ORDER BY id",
                (NEW, self.now, LIVE),
            )
        else:
            journal_first_load(self.conn, spans, self.now)

    def _keep_present(self, source: str) -> None:
        """Count as seen the URLs of `source` its full scan did not see but a page is there
        for now: a folder moved away and back while the scan walked past it (a deploy
        swapping folders) is not the deletion of its pages. Read again at the next scan."""
        present = self.present.get(source)
        if present is None:
            return
        unseen = dict(
            self.conn.execute(
                f"SELECT loc, id FROM urls WHERE source_id = ? AND status IN (?, ?) AND {UNSEEN}",
                (self.source_id(source), LIVE, EXCLUDED),
            )
        )
        there = present(list(unseen)) if unseen else set()
        if there:
            self.conn.executemany(
                "INSERT OR IGNORE INTO temp.seen VALUES (?)", [(unseen[loc],) for loc in there]
            )
            log.warning(
                "%s: %d pages the scan did not find are there now (moved while it ran): "
                "kept, and read at the next scan",
                source,
                len(there),
            )

    def _remove_missing(self, source: str, which: str) -> None:
        """Remove the URLs of `source` that `which` (SQL over `urls`) names, unless the
        guard holds that removal."""
        source_id = self.source_id(source)
        if source in self.guard.sources:
            hold = decide(
                self.conn, self.guard, source, f"source_id = ? AND {which}", (source_id,), self.now
            )
            if hold is not None:
                self.changes.held.append(hold)
                log.error("%s: %s", source, hold.reason())
                return
        self._mark_gone(source_id, which)
