"""Ledger queries of the renderers and the publisher: shards, their members, the index,
news articles, and which files were published."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from sitemapd.ledger.edits import ShardEdits
from sitemapd.ledger.model import PUBLISHED_CURSOR, PUBLISHED_TARGET_CURSOR
from sitemapd.ledger.schema import LIVE
from sitemapd.ledger.transaction import Transactions


class RenderQueries(Transactions):
    """Reads for rendering and the record of what was published."""

    _edits: ShardEdits | None = None

    @property
    def edits(self) -> ShardEdits:
        """Return which shards' members changed since their last publish (edits.py)."""
        if self._edits is None:
            self._edits = ShardEdits(self.conn)
        return self._edits

    def shards_to_render(self) -> list[tuple[int, int]]:
        """Return `(id, url_count)` of every shard changed since its last publish."""
        return self.conn.execute(
            "SELECT id, url_count FROM shards WHERE dirty = 1 ORDER BY id"
        ).fetchall()

    def shard_rows(self, shard_id: int) -> Iterator[tuple[str, str, str | None]]:
        """Yield `(loc, lastmod, extra elements)` of the shard's members in stable order."""
        yield from self.conn.execute(
            "SELECT loc, lastmod, extra FROM urls WHERE shard = ? ORDER BY id", (shard_id,)
        )

    def shard_has_extras(self, shard_id: int) -> bool:
        """True when a member of the shard carries alternates or images."""
        # Named: without statistics (a first build) SQLite takes urls_shard instead and
        # reads every member of the shard.
        row = self.conn.execute(
            "SELECT 1 FROM urls INDEXED BY urls_extra WHERE shard = ? AND extra IS NOT NULL "
            "LIMIT 1",
            (shard_id,),
        ).fetchone()
        return row is not None

    def unlisted_alternates(self, shard_id: int) -> set[str]:
        """Return the hreflang alternates named by the shard's members that are known and
        not live (gone, noindex, canonicalised, disallowed): no sitemap may point at them."""
        return {
            href
            for (href,) in self.conn.execute(
                "SELECT DISTINCT l.href FROM urls m "
                "JOIN alternate_links l ON l.url_id = m.id "
                "JOIN urls t ON t.loc = l.href WHERE m.shard = ? AND t.status != ?",
                (shard_id, LIVE),
            )
        }

    def newest_lastmod(self) -> str | None:
        """Return the newest lastmod of any published URL, or None."""
        (newest,) = self.conn.execute("SELECT max(lastmod) FROM shards").fetchone()
        return str(newest) if newest else None

    def articles(
        self, since: str
    ) -> list[tuple[str, str, str | None, str | None, str | None, str]]:
        """Return `(loc, published, language, news title, title, lastmod)` of live articles
        first published at or after `since`, newest first."""
        return self.conn.execute(
            "SELECT loc, published, language, news_title, title, lastmod FROM urls "
            "WHERE article = 1 AND published >= ? AND status = ? ORDER BY published DESC, loc",
            (since, LIVE),
        ).fetchall()

    def index_rows(self) -> list[tuple[int, str]]:
        """Return `(id, lastmod)` of every non-empty shard, in id order."""
        return self.conn.execute(
            "SELECT id, lastmod FROM shards WHERE url_count > 0 ORDER BY id"
        ).fetchall()

    def empty_shards(self) -> list[int]:
        """Return the ids of shards left with no members."""
        return [r[0] for r in self.conn.execute("SELECT id FROM shards WHERE url_count = 0")]

    def published(self, name: str) -> tuple[str, int, int | None] | None:
        """Return `(digest, size, mtime_ns)` of output file `name` as published, or None."""
        row = self.conn.execute(
            "SELECT sha256, bytes, mtime_ns FROM published WHERE name = ?", (name,)
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def published_records(self) -> dict[str, tuple[str, int, int | None]]:
        """Return `published` of every output file published, by name: one read where a
        build asks of each."""
        rows = self.conn.execute("SELECT name, sha256, bytes, mtime_ns FROM published")
        return {name: (digest, size, stamp) for name, digest, size, stamp in rows}

    def published_names(self) -> list[str]:
        """Return the names of every output file sitemapd has published."""
        return [r[0] for r in self.conn.execute("SELECT name FROM published ORDER BY name")]

    def published_target(self) -> str | None:
        """Return where the files recorded as published were published (None: not said,
        by a ledger older than the record)."""
        row = self.conn.execute(
            "SELECT value FROM cursors WHERE name = ?", (PUBLISHED_TARGET_CURSOR,)
        ).fetchone()
        return None if row is None else str(row[0])

    def forget_published(self, names: list[str]) -> None:
        """Forget that files `names` were published (they are not where the records say)."""
        with self.transaction():
            self.conn.executemany("DELETE FROM published WHERE name = ?", [(n,) for n in names])

    def record_publish(
        self,
        written: Mapping[str, tuple[str, int, int]],
        clean: Iterable[int],
        dropped_shards: Iterable[int],
        removed_files: Iterable[str],
        at: str,
        where: str,
    ) -> None:
        """Remember files published into `where`, mark shards clean and forget dropped
        ones; note how far the journal is published."""
        clean, dropped_shards, removed_files = (
            list(clean),
            list(dropped_shards),
            list(removed_files),
        )
        if (
            not (written or clean or dropped_shards or removed_files)
            and self.published_target() == where
            and self.conn.execute(
                "SELECT 1 FROM cursors WHERE name = ? "
                "AND value = CAST((SELECT coalesce(max(seq), 0) FROM journal) AS TEXT)",
                (PUBLISHED_CURSOR,),
            ).fetchone()
        ):
            return  # nothing to record: a write would leave a WAL to checkpoint at close
        with self.transaction():
            self.conn.execute(
                "INSERT OR REPLACE INTO cursors (name, value) "
                "SELECT ?, coalesce(max(seq), 0) FROM journal",
                (PUBLISHED_CURSOR,),
            )
            self.conn.execute(
                "INSERT OR REPLACE INTO cursors (name, value) VALUES (?, ?)",
                (PUBLISHED_TARGET_CURSOR, where),
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO published (name, sha256, bytes, mtime_ns, at) "
                "VALUES (?, ?, ?, ?, ?)",
                [(name, sha, size, mtime, at) for name, (sha, size, mtime) in written.items()],
            )
            self.conn.executemany("UPDATE shards SET dirty = 0 WHERE id = ?", [(i,) for i in clean])
            self.conn.executemany(
                "DELETE FROM shards WHERE id = ? AND url_count = 0", [(i,) for i in dropped_shards]
            )
            self.conn.executemany(
                "DELETE FROM published WHERE name = ?", [(n,) for n in removed_files]
            )
        self.edits.published(clean)
