"""Decisions of a `Ledger.apply()` run, row by row: whether an observation changes a URL
(its content, status or facts), what its lastmod becomes, which shard holds it."""

from __future__ import annotations

from typing import Any

from sitemapd.core import logs
from sitemapd.core.observation import (
    Gone,
    Observation,
    Seen,
)
from sitemapd.ledger.model import (
    NEW,
    ROBOTS_REASON,
    UPDATED,
)
from sitemapd.ledger.run import Run
from sitemapd.ledger.schema import (
    EXCLUDED,
    GONE,
    LIVE,
    SEEDED,
    URL_SELECT,
    insert_rows,
    update_rows,
)
from sitemapd.ledger.urlrow import UrlRow
from sitemapd.render.sitemap import entry_size

log = logs.Logger("sitemapd.ledger")

# Rows read or written per statement: a source that lost a million URLs is not held whole.
CHUNK = 2000
# Rows of a source not seen in this run (`temp.seen`).
UNSEEN = "id NOT IN (SELECT id FROM temp.seen)"


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


def _manifest_fields(row: UrlRow) -> tuple[str, str]:
    """Return what the publish manifest says of `row` besides its loc and lastmod."""
    fingerprint = row.content_hash if row.content_hash is not None else row.source_time
    return fingerprint or "", row.bytes_hash or ""


def _fingerprint(obs: Observation) -> tuple[str | None, str | None, int | None]:
    """Return `(bytes_hash, fp_settings, fp_fallback)` columns of `obs`."""
    return obs.bytes_hash, obs.fp_settings, int(obs.fallback) if obs.bytes_hash else None


class Decisions(Run):
    """What each observation changes in a row: its status, lastmod, shard and journal."""

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
        old_line = _manifest_fields(row)
        # A page that keeps itself out (noindex, canonical elsewhere) says so in what its
        # fingerprint covers: its content is neither compared nor kept, so that the page
        # back as it was keeps its lastmod, and one edited meanwhile moves as it returns.
        kept = obs.exclusion is not None and row.content_hash is not None
        if kept:
            changed = False
            new_lastmod = row.lastmod
        elif obs.content_hash is not None:
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
        if not kept:
            row.content_hash = obs.content_hash or row.content_hash
            if obs.bytes_hash is not None:
                row.bytes_hash, row.fp_settings, row.fp_fallback = _fingerprint(obs)
        elif obs.bytes_hash is not None:
            # The bytes read, so that these are not parsed again and the page's return is.
            row.bytes_hash = obs.bytes_hash
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
        if row.status == LIVE and row.shard is not None and _manifest_fields(row) != old_line:
            # A fingerprint moved, its lastmod maybe not: the shard's manifest is rewritten.
            self.shards.dirty.add(row.shard)

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
            self.shards.touch(row.shard, row.lastmod, old_lastmod)
            self.changes.updated += 1
            self.journal.append((row.id, UPDATED, self.now))
        if len(self.journal) >= CHUNK:
            # Written as the run goes: a run re-dating a million URLs held 90 MB of them.
            self.write_journal()

    def _remove(self, row: UrlRow) -> None:
        """Mark `row` gone: out of every sitemap, its hash and lastmod kept for its return."""
        self._set_status(row, None, row.lastmod, gone=True)
        row.file_key = None

    def update_chunk(self, items: list[Observation | Seen | Gone]) -> None:
        latest = {item.loc: item for item in items}  # the last word on a URL wins
        marks = ",".join("?" * len(latest))
        rows = {
            row.loc: row
            for row in (
                UrlRow(*values)
                for values in self.conn.execute(
                    f"SELECT {URL_SELECT} FROM urls WHERE loc IN ({marks})", list(latest)
                )
            )
        }
        inserts: list[UrlRow] = []
        updates: list[tuple[tuple[Any, ...], tuple[Any, ...]]] = []
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
                    before = known.update_params()
                    self._remove(known)
                    updates.append((before, known.update_params()))
                continue
            seen.append((known.id,))
            if _unchanged(known, item, self.source_id(item.source)):
                continue
            before = known.update_params()
            self._observe(known, item)
            updates.append((before, known.update_params()))
        ids = insert_rows(self.conn, inserts)
        for new, url_id in zip(inserts, ids, strict=True):
            if new.alternates is not None:
                self.links[url_id] = new.alternates
        update_rows(self.conn, updates)
        self.conn.executemany("UPDATE urls SET file_key = ? WHERE id = ?", touched)
        self.conn.executemany("INSERT OR IGNORE INTO temp.seen VALUES (?)", seen)
        # The last word on a URL wins across chunks too: seen and pending stay disjoint
        # (pending holds rows once a guarded source said a URL is gone in this run).
        if self.pending:
            self.conn.executemany("DELETE FROM temp.pending WHERE id = ?", seen)
        self.conn.executemany("DELETE FROM temp.seen WHERE id = ?", pending)
        self.conn.executemany("INSERT OR IGNORE INTO temp.pending VALUES (?)", pending)
        if ids:
            self.note_new(ids[0], ids[-1])

    def _mark_gone(self, source_id: int, which: str = UNSEEN) -> int:
        """Remove what `source_id` owns and `which` names (default: not seen in this run);
        return how many."""
        last_id, removed = 0, 0
        # In batches: a source that lost a million URLs must not need them all in memory.
        while batch := self.conn.execute(
            f"SELECT {URL_SELECT} FROM urls WHERE id > ? AND source_id = ? "
            f"AND status IN (?, ?) AND {which} ORDER BY id LIMIT ?",
            (last_id, source_id, LIVE, EXCLUDED, CHUNK),
        ).fetchall():
            updates = []
            for values in batch:
                row = UrlRow(*values)
                before = row.update_params()
                self._remove(row)
                updates.append((before, row.update_params()))
            update_rows(self.conn, updates)
            removed += len(batch)
            last_id = batch[-1][0]
        return removed

    def _recheck_robots(self) -> None:
        """Re-apply changed robots.txt rules to every present URL."""
        last_id, changed = 0, 0
        while batch := self.conn.execute(
            f"SELECT {URL_SELECT} FROM urls WHERE id > ? AND status IN (?, ?) ORDER BY id LIMIT ?",
            (last_id, LIVE, EXCLUDED, CHUNK),
        ).fetchall():
            updates = []
            for values in batch:
                row = UrlRow(*values)
                reason = self._reason(row.loc, row.page_reason)
                if reason != row.reason:
                    before = row.update_params()
                    self._set_status(row, reason, row.lastmod)
                    updates.append((before, row.update_params()))
            update_rows(self.conn, updates)
            changed += len(updates)
            last_id = batch[-1][0]
        log.info("robots.txt rules changed: %d URLs changed status", changed)
