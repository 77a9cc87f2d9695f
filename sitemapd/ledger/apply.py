"""Applying observations: what each one changes in `urls`, the shards and the journal.

One `Apply` is one `Ledger.apply()` transaction. An empty ledger takes a bulk path: rows
are inserted without lookups and the indexes are built once at the end.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Collection, Iterable
from typing import Any

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
from sitemapd.ledger.changes import load_changes
from sitemapd.ledger.lists import ListLoad
from sitemapd.ledger.model import (
    BASELINE_CURSOR,
    NEW,
    ROBOTS_REASON,
    UPDATED,
    RobotsRules,
)
from sitemapd.ledger.removals import RemovalGuard, decide
from sitemapd.ledger.run import LedgerFile, Run
from sitemapd.ledger.schema import (
    EXCLUDED,
    GONE,
    LIVE,
    SEEDED,
    UPDATE_URL,
    URL_COLUMNS,
    UrlRow,
    create_url_indexes,
    drop_loc_index,
    insert_rows,
)
from sitemapd.render.sitemap import entry_size

log = logging.getLogger("sitemapd.ledger")

_CHUNK = 2000
_UNSEEN = "id NOT IN (SELECT id FROM temp.seen)"


def _facts(obs: Observation) -> tuple[str | None, str | None, int | None, str | None, str | None]:
    """Return `(language, news_title, article, alternates, extra)` columns of `obs`."""
    meta = obs.meta
    if meta is None:
        return None, None, None, None, obs.extra or None
    alternates = "".join(f"{lang}\t{href}\n" for lang, href in meta.alternates) or None
    return meta.language, meta.news_title, int(meta.article), alternates, obs.extra or None


def _unchanged(row: UrlRow, obs: Observation, source_id: int) -> bool:
    """True when `obs` repeats what `row` already records.

    The common case of a rescan, decided without building a row; robots.txt verdicts
    cannot differ because changed rules were re-applied before any observation.
    """
    return (
        row.source_id == source_id
        and row.status in (LIVE, EXCLUDED)
        and row.page_reason == obs.exclusion
        and row.title == obs.title
        and row.file_key == obs.file_key
        and (obs.content_hash is None or obs.content_hash == row.content_hash)
        and (obs.source_time is None or obs.source_time == row.source_time)
        and (row.language, row.news_title, row.article, row.alternates, row.extra) == _facts(obs)
        and (row.published is not None or obs.meta is None or not obs.meta.article)
        and (
            obs.bytes_hash is None
            or (row.bytes_hash, row.fp_settings, row.fp_fallback) == _fingerprint(obs)
        )
        and (row.published_stated == 1 or _stated(obs) is None)
    )


def _stated(obs: Observation) -> str | None:
    """Return the publication time an article's page states, or None."""
    meta = obs.meta
    return meta.published if meta is not None and meta.article else None


def _fingerprint(obs: Observation) -> tuple[str | None, str | None, int | None]:
    """Return `(bytes_hash, fp_settings, fp_fallback)` columns of `obs`."""
    return obs.bytes_hash, obs.fp_settings, int(obs.fallback) if obs.bytes_hash else None


class Apply(Run):
    """One `Ledger.apply()` run: what each observation changes, and the end of the run."""

    def __init__(
        self, ledger: LedgerFile, robots: RobotsRules, now: str, guard: RemovalGuard
    ) -> None:
        super().__init__(ledger, robots, now, guard)
        self.lists = ListLoad(self, self.update_chunk)

    def _reason(self, loc: str, page_reason: str | None) -> str | None:
        if page_reason:
            return page_reason
        if not self.robots.allows(loc):
            return ROBOTS_REASON
        return None

    def _new_row(self, obs: Observation) -> UrlRow:
        """Return the insert parameters of a URL seen for the first time."""
        reason = self._reason(obs.loc, obs.exclusion)
        lastmod = self._when(obs)
        size = entry_size(obs.loc) + len(obs.extra.encode())
        shard = None
        if reason is None:
            shard = self.shards.place(size, lastmod)
            self.changes.new += 1
        published, stated = self._published(None, None, obs, live=reason is None)
        return UrlRow(
            None,
            obs.loc,
            self.source_id(obs.source),
            EXCLUDED if reason else LIVE,
            reason,
            obs.exclusion,
            obs.content_hash,
            obs.source_time,
            lastmod,
            self.now,
            0,
            obs.title,
            obs.file_key,
            shard,
            size,
            published,
            *_facts(obs),
            *_fingerprint(obs),
            stated,
        )

    def _published(
        self, known: str | None, stated: int | None, obs: Observation, live: bool
    ) -> tuple[str | None, int | None]:
        """Return an article's publication time and 1 when its page stated it: the first
        date the page states once it is live (a noindex draft's dates do not count), never
        moved by edits. An undated article takes a provisional time, replaced once the
        page states one: the source's own (a file's mtime), so an old page found by the
        first build is not news; else the time it is first seen live."""
        if not live or obs.meta is None or not obs.meta.article or stated == 1:
            return known, stated
        page_says = _stated(obs)
        if page_says is not None:
            return min(page_says, self.now), 1
        if known is not None:
            return known, stated
        return min(obs.source_time or self.now, self.now), 0

    def _when(self, obs: Observation) -> str:
        """Return the source's time of `obs`, or now when it has none or a future one."""
        return min(obs.source_time or self.now, self.now)

    def _observe(self, row: UrlRow, obs: Observation) -> None:
        """Update `row` for what `obs` says of it now."""
        old_lastmod = row.lastmod
        if obs.content_hash is not None:
            # No stored hash (seeded or listed URL): first content, not a change. Taken by
            # other settings, the stored hash is compared with the content's by those.
            measure = obs.content_hash if obs.old_measure is None else obs.old_measure
            changed = row.content_hash is not None and row.content_hash != measure
            # A file's content changed when it was read; a change log's row says when.
            new_lastmod = self.now if obs.bytes_hash is not None else self._when(obs)
        else:
            changed = obs.source_time is not None and (
                row.source_time is None or obs.source_time > row.source_time
            )
            new_lastmod = self._when(obs)
        if row.status == SEEDED:
            row.status = GONE  # enters the sitemap below, keeping the seeded lastmod
            row.first_seen = self.now
        if changed:
            row.lastmod = max(row.lastmod, new_lastmod)
            row.change_count += 1
        row.source_id = self.source_id(obs.source)
        row.content_hash = obs.content_hash or row.content_hash
        if obs.bytes_hash is not None:
            row.bytes_hash, row.fp_settings, row.fp_fallback = _fingerprint(obs)
        row.source_time = obs.source_time or row.source_time
        row.title = obs.title
        row.file_key = obs.file_key
        row.page_reason = obs.exclusion
        reason = self._reason(row.loc, obs.exclusion)
        row.published, row.published_stated = self._published(
            row.published, row.published_stated, obs, reason is None
        )
        extra = row.extra
        alternates = row.alternates
        row.language, row.news_title, row.article, row.alternates, row.extra = _facts(obs)
        if row.alternates != alternates:
            self.links[row.id] = row.alternates
        if row.extra != extra:
            size = entry_size(row.loc) + len((row.extra or "").encode())
            if row.status == LIVE and row.shard is not None:
                self.shards.resize(row.shard, size - row.entry_bytes)
            row.entry_bytes = size
        self._set_status(row, reason, old_lastmod, changed=changed)

    def _set_status(
        self,
        row: UrlRow,
        reason: str | None,
        old_lastmod: str,
        gone: bool = False,
        changed: bool = False,
    ) -> None:
        """Move `row` to its new status, keeping shards and the journal in step.

        `changed` journals a content change even within the second of the last one,
        when lastmod cannot move: feeds and notifications still hear of it.
        """
        was_live = row.status == LIVE
        row.reason = None if gone else reason
        row.status = GONE if gone else EXCLUDED if reason else LIVE
        is_live = row.status == LIVE
        if was_live and not is_live:
            assert row.shard is not None
            self.shards.remove(row.shard, row.entry_bytes)
            row.shard = None
            self.changes.gone += 1
            self.journal.append((row.id, GONE, self.now))
        elif is_live and not was_live:
            row.shard = self.shards.place(row.entry_bytes, row.lastmod)
            self.changes.new += 1
            self.journal.append((row.id, NEW, self.now))
        elif is_live and (row.lastmod != old_lastmod or changed):
            assert row.shard is not None
            self.shards.touch(row.shard, row.lastmod)
            self.changes.updated += 1
            self.journal.append((row.id, UPDATED, self.now))

    def _remove(self, row: UrlRow) -> None:
        """Mark `row` gone: out of every sitemap, its hash and lastmod kept for its return."""
        self._set_status(row, None, row.lastmod, gone=True)
        row.file_key = None

    # Phases ------------------------------------------------------------------------

    def start(self, complete: Collection[str]) -> None:
        # An empty ledger takes a bulk path: no lookups, indexes built once at the end.
        self.bulk = self.conn.execute("SELECT 1 FROM urls LIMIT 1").fetchone() is None
        if self.bulk:
            drop_loc_index(self.conn)
            # The commit leaves the WAL to `Ledger._checkpoint_behind`.
            self.conn.execute("PRAGMA wal_autocheckpoint = 0")
        else:
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
            if isinstance(item, ListChunk) or (self.bulk and isinstance(item, Changes)):
                # Loaded or staged as it comes (a list's lines are never all held), after
                # what came before it.
                self._consume_batch(batch)
                batch = []
                if isinstance(item, ListChunk):
                    self.lists.take(item)
                else:
                    load_changes(self, item)
                continue
            for one in item.items() if isinstance(item, Changes) else (item,):
                batch.append(one)
                if len(batch) == _CHUNK:
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
            self.update_chunk(present)

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

    def update_chunk(self, items: list[Observation | Seen | Gone]) -> None:
        latest = {item.loc: item for item in items}  # the last word on a URL wins
        marks = ",".join("?" * len(latest))
        rows = {
            row.loc: row
            for row in (
                UrlRow(*values)
                for values in self.conn.execute(
                    f"SELECT {URL_COLUMNS} FROM urls WHERE loc IN ({marks})", list(latest)
                )
            )
        }
        inserts: list[UrlRow] = []
        updates: list[tuple[Any, ...]] = []
        seen: list[tuple[int | None]] = []
        touched: list[tuple[str, int | None]] = []
        pending: list[tuple[int | None]] = []
        for loc, item in latest.items():
            known = rows.get(loc)
            if known is None:
                if isinstance(item, Observation):
                    inserts.append(self._new_row(item))
                continue
            owned = known.source_id == self.source_id(item.source) and known.status != GONE
            if isinstance(item, Seen):
                if owned:
                    seen.append((known.id,))
                    if item.file_key is not None and item.file_key != known.file_key:
                        touched.append((item.file_key, known.id))
                continue
            if isinstance(item, Gone):
                # Only the owner's word removes a URL: another source may still have it.
                if owned:
                    if item.source in self.guard.sources:
                        # Decided in `finish`, with the rest of the source's removals.
                        pending.append((known.id,))
                        self.pending.add(item.source)
                        continue
                    row = known
                    self._remove(row)
                    updates.append(row.update_params())
                continue
            seen.append((known.id,))
            if _unchanged(known, item, self.source_id(item.source)):
                continue
            row = known
            before = row.update_params()
            self._observe(row, item)
            after = row.update_params()
            if after != before:
                updates.append(after)
        insert_rows(self.conn, inserts)
        for new in inserts:
            if new.alternates is not None:
                (url_id,) = self.conn.execute(
                    "SELECT id FROM urls WHERE loc = ?", (new.loc,)
                ).fetchone()
                self.links[url_id] = new.alternates
        self.conn.executemany(UPDATE_URL, updates)
        self.conn.executemany("UPDATE urls SET file_key = ? WHERE id = ?", touched)
        self.conn.executemany("INSERT OR IGNORE INTO temp.seen VALUES (?)", seen)
        # The last word on a URL wins across chunks too: seen and pending stay disjoint.
        self.conn.executemany("DELETE FROM temp.pending WHERE id = ?", seen)
        self.conn.executemany("DELETE FROM temp.seen WHERE id = ?", pending)
        self.conn.executemany("INSERT OR IGNORE INTO temp.pending VALUES (?)", pending)
        if inserts:
            self.conn.executemany(
                "INSERT OR IGNORE INTO temp.seen SELECT id FROM urls WHERE loc = ?",
                [(new.loc,) for new in inserts],
            )
            self.conn.executemany(
                "INSERT INTO journal (url_id, kind, at) SELECT id, ?, ? FROM urls WHERE loc = ?",
                [(NEW, self.now, new.loc) for new in inserts if new.status == LIVE],
            )

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
                    self._remove_missing(source, _UNSEEN)
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
        self.conn.executemany(
            "INSERT INTO journal (url_id, kind, at) VALUES (?, ?, ?)", self.journal
        )
        if not self.bulk:
            self.save_links()
            self.dirty_alternate_shards()
        self.changes.dirty_shards = self.shards.flush()

    def _finish_bulk(self) -> None:
        # SQLite sorts for an index build on as many threads as there are cores, each with
        # a buffer of the cache's size: a smaller cache keeps the sum as it was.
        self.conn.execute(f"PRAGMA threads = {os.cpu_count() or 1}")
        self.conn.execute("PRAGMA cache_size = -8192")
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
        self.conn.execute(
            "INSERT INTO journal (url_id, kind, at) SELECT id, ?, ? FROM urls "
            "WHERE status = ? ORDER BY id",
            (NEW, self.now, LIVE),
        )
        # Feeds and notifications treat the first build as the site's baseline, not news.
        self.conn.execute(
            "INSERT OR REPLACE INTO cursors (name, value) "
            "SELECT ?, coalesce(max(seq), 0) FROM journal",
            (BASELINE_CURSOR,),
        )
        if self.bulk_alternates:
            self.links = dict(
                self.conn.execute("SELECT id, alternates FROM urls WHERE alternates IS NOT NULL")
            )
            self.save_links()
        self.lists.finish_bulk(repeated)
        self.spooled = self.lists.spooled(trusted=not (repeated or deleted))

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

    def _mark_gone(self, source_id: int, which: str = _UNSEEN) -> int:
        """Remove what `source_id` owns and `which` names (default: not seen in this run);
        return how many."""
        last_id, removed = 0, 0
        # In batches: a source that lost a million URLs must not need them all in memory.
        while batch := self.conn.execute(
            f"SELECT {URL_COLUMNS} FROM urls WHERE id > ? AND source_id = ? "
            f"AND status IN (?, ?) AND {which} ORDER BY id LIMIT ?",
            (last_id, source_id, LIVE, EXCLUDED, _CHUNK),
        ).fetchall():
            rows = [UrlRow(*values) for values in batch]
            for row in rows:
                self._remove(row)
            self.conn.executemany(UPDATE_URL, [row.update_params() for row in rows])
            removed += len(rows)
            last_id = batch[-1][0]
        return removed

    def _recheck_robots(self) -> None:
        """Re-apply changed robots.txt rules to every present URL."""
        last_id, changed = 0, 0
        while batch := self.conn.execute(
            f"SELECT {URL_COLUMNS} FROM urls WHERE id > ? AND status IN (?, ?) ORDER BY id LIMIT ?",
            (last_id, LIVE, EXCLUDED, _CHUNK),
        ).fetchall():
            updates = []
            for values in batch:
                row = UrlRow(*values)
                reason = self._reason(row.loc, row.page_reason)
                if reason != row.reason:
                    self._set_status(row, reason, row.lastmod)
                    updates.append(row.update_params())
            self.conn.executemany(UPDATE_URL, updates)
            changed += len(updates)
            last_id = batch[-1][0]
        log.info("robots.txt rules changed: %d URLs changed status", changed)
