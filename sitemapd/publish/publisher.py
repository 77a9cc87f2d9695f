"""The publisher: the only code that writes published files, through a store (the
local output directory or an S3-compatible bucket).

Every file is stored whole, so readers only ever see complete documents. Shards go out
before the index that names them; a shard is removed only after an index that no longer
names it is in place. Files whose bytes did not change are not written again. Behind a
lease (several daemons, one target), every write waits for the lease and the index write
renews it first.
"""

# Annotations evaluated, not text: see core/observation.py.
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from sitemapd.config import Config
from sitemapd.core import docdigest, logs
from sitemapd.core.workers import Pending, Workers
from sitemapd.ledger.ledger import Ledger
from sitemapd.ledger.spool import SpooledShard
from sitemapd.publish import manifest, robots
from sitemapd.publish.atomic import Unsynced
from sitemapd.publish.manifestfile import VERSION
from sitemapd.publish.names import OutputNames, partition_index_urls
from sitemapd.publish.report import PublishReport as PublishReport
from sitemapd.publish.report import Stored
from sitemapd.publish.retarget import records_elsewhere, target_of
from sitemapd.publish.shardtext import shard_document, spliced_shard
from sitemapd.publish.store import Fence, LocalStore, Record, Soon, Store
from sitemapd.render.parts import part_name, part_url
from sitemapd.render.sitemap import sitemap_index

if TYPE_CHECKING:
    from sitemapd.render.feedpage import FeedPage

log = logs.Logger("sitemapd.publish")


# Shards stored at once while the next renders: hashing, writing and syncing one wait
# outside the GIL, and a spooled shard takes no time to render.
_STORERS = 2

# The manifest format this publisher writes, as the ledger notes it once every shard has one
# (".1": and every manifest says what the ledger does, a fingerprint that moved alone too).
MANIFEST_VERSION = f"{VERSION}.1"


# The feeds' `updated` when no URL has ever been published.
_EPOCH = "1970-01-01T00:00:00+00:00"


class Publisher:
    """Writes the ledger's sitemaps into a store, touching only what changed."""

    def __init__(
        self,
        config: Config,
        ledger: Ledger,
        dry_run: bool = False,
        store: Store | None = None,
        lease: Fence | None = None,
    ) -> None:
        self.config = config
        self.store: Store = store or LocalStore(config.site.output_dir, config.site.robots_txt)
        self.lease = lease
        # Reports and records what it would write and remove, touching no file.
        self.dry_run = dry_run
        # What each feed file was last rendered from (see _publish_feeds).
        self._feeds_rendered: dict[str, FeedPage] = {}
        self.site = config.site
        self.sitemap = config.sitemap
        self.ledger = ledger
        self.out = config.site.output_dir
        self.names = OutputNames(config)
        self.target = target_of(config, self.store)

    def publish(self, now: str) -> PublishReport:
        """Write every changed file, then remove files no index names; return what happened.

        Order: shards, news sitemaps, the index naming them, feeds, robots.txt, the
        IndexNow key; only then are files that are no longer named removed.
        """
        report = PublishReport()
        self._check_lease()
        self.store.prepare(write=not self.dry_run)
        elsewhere = records_elsewhere(self.ledger, self.store, self.target, self.dry_run)
        written: dict[str, tuple[str, int, int]] = {}
        dirty = {shard_id for shard_id, _ in self.ledger.shards_to_render()}
        index_rows = self.ledger.index_rows()
        listed: list[tuple[str, str | None]] = [
            (self.names.shard(shard_id), lastmod) for shard_id, lastmod in index_rows
        ]
        # Without news sitemaps the index is known now: its temp file is written and
        # synced while the shards are stored, and renamed into place after them.
        index = None if self.config.news else self._index(listed)
        early = None if index is None else self._begin(self.sitemap.index_name, index)
        try:
            self._publish_shards([shard_id for shard_id, _ in index_rows], dirty, written, report)
        except BaseException:
            if early is not None and early[1] is not None:
                early[1].discard()
            raise
        if self.config.news is not None:
            # The news renderer (2 ms of imports) loads for news sites alone.
            from sitemapd.publish.newsfiles import publish_news

            def write(name: str, text: bytes) -> None:
                self._write(name, text, written, report)

            listed += publish_news(self.config.news, self.ledger, now, self.sitemap, write)
        if self.lease is not None and not self.dry_run:
            self.lease.fence()
        if early is None:
            index = self._index(listed) if index is None else index
            self._write(self.sitemap.index_name, index, written, report)
        else:
            stored, soon = early
            if soon is not None:
                stamp, wrote = soon.placing().place()
                report.note(stored._replace(stamp=stamp, wrote=wrote), written)
        current = {name for name, _ in listed} | {self.sitemap.index_name}
        if self.config.news is not None:
            current.add(self.config.news.file)
        current |= self._publish_feeds(now, written, report)
        # robots.txt names the new index before any retired file goes.
        self._update_robots_txt(report)
        if self.names.key_file is not None and self.config.indexnow is not None:
            from sitemapd.render.keyfile import key_file  # an IndexNow site's alone

            name, data = key_file(self.config.indexnow.key)
            self._write(name, data, written, report)
            current.add(name)
        # Only now that the index is in place may files it no longer names go: shards of
        # this index, and anything published under names no longer in use (a renamed index
        # and its shards, news files and feed pages no longer needed).
        kept = current | elsewhere  # names in use, and records of files not here
        retired = [name for name in self.ledger.published_names() if name not in kept]
        for name in self.store.names():
            # Numbered files are swept even when the ledger has no record of them (a lost
            # state folder, a crash before the record): left, they would be served stale.
            numbered = self.names.is_shard(name) or self.names.is_later_part(name)
            if (numbered and name not in current) or name in retired:
                report.removed.append(name)
        if report.removed and not self.dry_run:
            self._check_lease()
            self.store.remove(report.removed)
        self.ledger.record_publish(
            written, dirty, self.ledger.empty_shards(), retired, at=now, where=self.target
        )
        return report

    def _publish_shards(
        self,
        shards: list[int],
        dirty: set[int],
        written: dict[str, tuple[str, int, int]],
        report: PublishReport,
    ) -> None:
        """Write the `dirty` shards and those not stored as published, in order. They are
        stored on threads while the next one renders: both wait mostly in SQLite, hashing
        and the disk, outside the GIL."""
        # Shards published before this ledger wrote manifests (an upgrade) get theirs once.
        backfill = not self.dry_run and self.ledger.cursor(manifest.WRITTEN) != MANIFEST_VERSION
        reader = manifest.Reader(self.ledger.path)
        records = self.ledger.published_records()
        try:
            with Workers(_STORERS, "sitemapd-store") as storing:
                stored: deque[Pending[Stored | None]] = deque()
                for shard_id in shards:
                    name = self.names.shard(shard_id)
                    record = records.get(name)
                    if backfill and not (shard_id in dirty or not self._intact(name, record)):
                        self._check_lease()
                        data = manifest.shard_manifest(self.ledger.conn, shard_id)
                        self.store.put_manifest(name, data)
                    elif shard_id in dirty or not self._intact(name, record):
                        job = self._shard_job(shard_id, name, record, reader)
                        if len(stored) == _STORERS:
                            report.note(stored.popleft().result(), written)
                        stored.append(storing.submit(job))
                while stored:
                    report.note(stored.popleft().result(), written)
        finally:
            reader.close()
        if backfill:
            self.ledger.set_cursor(manifest.WRITTEN, MANIFEST_VERSION)

    def _shard_job(
        self, shard_id: int, name: str, record: Record | None, reader: manifest.Reader
    ) -> Callable[[], Stored | None]:
        """Return what stores shard `shard_id` as `name` (on a storing thread), its
        manifest first: a successor adopts the lastmods it holds."""
        spooled = self.ledger.spooled_shard(shard_id)  # as the first load rendered it
        if (
            spooled is not None
            and not (self.dry_run or name.endswith(".gz"))
            and isinstance(self.store, LocalStore)
            and self.store.movable(name, spooled.path)
        ):
            return partial(self._move_in, name, spooled, reader, shard_id)
        if spooled is None and not self.dry_run and isinstance(self.store, LocalStore):
            # A few members changed since its publish: spliced into the bytes on disk.
            spliced = spliced_shard(self.ledger, self.store, shard_id, name, record, reader)
            if spliced is not None:
                text, spliced_of, digest = spliced
                if isinstance(text, Unsynced):  # other bytes, in a temp file already
                    # Stored as `_store` stores one, but for the lease: a folder has none.
                    put = partial(self.store.put_after, name, text, spliced_of)
                    return lambda: Stored(name, digest, len(text), *put())
                return partial(self._store, name, text, record, spliced_of, digest)
        document, manifest_of = shard_document(
            self.ledger, shard_id, spooled, reader, not self.dry_run
        )
        return partial(self._store, name, document, record, manifest_of)

    def _move_in(
        self, name: str, spooled: SpooledShard, reader: manifest.Reader, shard_id: int
    ) -> Stored:
        """Store a spooled shard by moving its file into the local folder (where nothing
        has its name), after its manifest."""
        assert isinstance(self.store, LocalStore)
        self._check_lease()
        if not self.store.move_manifest_in(name, spooled.manifest):
            self.store.put_manifest(name, reader.spooled(spooled.manifest, shard_id))
        self._check_lease()
        stamp = self.store.move_in(name, spooled.path)
        return Stored(name, spooled.digest, spooled.size, stamp, True)

    def _publish_feeds(
        self, now: str, written: dict[str, tuple[str, int, int]], report: PublishReport
    ) -> set[str]:
        """Write the Atom and RSS feeds and their later pages; return the names written."""
        feed = self.config.feed
        if feed is None:
            return set()
        # feedgen and lxml load for a site with feeds only: a `build` starts faster.
        from sitemapd.publish.feedwindow import feed_pages
        from sitemapd.render.feedpage import FeedPage
        from sitemapd.render.feeds import atom, rss

        crawlers = [name for name, _ in self.config.crawlers]
        pages = feed_pages(self.ledger, feed, crawlers, now)
        fallback = self.ledger.newest_lastmod() or _EPOCH
        names: set[str] = set()
        for first, first_url, render in (
            (feed.atom, feed.atom_url, atom),
            (feed.rss, feed.rss_url, rss),
        ):
            urls = [part_url(first_url, part_name(first, number)) for number, _ in pages]
            paged = len(pages) > 1
            for at, (number, entries) in enumerate(pages):
                page = FeedPage(
                    title=feed.title,
                    self_url=urls[at],
                    site_url=self.site.origin.root,
                    entries=entries,
                    updated=max((e.updated for e in entries), default=fallback),
                    hubs=self.config.websub.hubs,
                    first_url=urls[0] if paged else None,
                    next_url=urls[at + 1] if at + 1 < len(urls) else None,
                    previous_url=urls[at - 1] if at else None,
                    last_url=urls[-1] if paged else None,
                    subtitle=feed.subtitle,
                )
                name = part_name(first, number)
                names.add(name)
                # Rendering through feedgen is most of a publish; the same page gives the
                # same bytes, so a file still as published needs no new render.
                if self._feeds_rendered.get(name) == page and self._intact(name):
                    continue
                self._write(name, render(page), written, report)
                self._feeds_rendered[name] = page
        return names

    def _index(self, listed: list[tuple[str, str | None]]) -> bytes:
        """Return the sitemap index of the files `listed` (name, lastmod)."""
        if not listed:
            log.warning("no URL is live: publishing an empty sitemap index")
        return sitemap_index((self.site.output_url + n, lastmod) for n, lastmod in listed).encode()

    def _begin(self, name: str, text: bytes) -> tuple[Stored, Soon | None] | None:
        """Begin storing `text` as `name` in a local folder as `_write` does (not in a dry
        run: then None): return what will be stored, and its temp file being written
        and synced on a thread of its own (None: stored as published already)."""
        if self.dry_run or not isinstance(self.store, LocalStore):
            return None
        record = self.ledger.published(name)
        digest = docdigest.recorded(text, docdigest.of(text), record and record[0])
        data = self._encoded(name, text)
        stored = Stored(name, digest, len(data), 0, True)
        if record and record[0] == digest and self._intact(name, record):
            return stored, None
        return stored, Soon(self.store, name, data)

    def _intact(self, name: str, record: Record | None = None) -> bool:
        """True when `name` is stored exactly as published."""
        record = record or self.ledger.published(name)
        return record is not None and self.store.intact(name, record)

    def damaged(self) -> list[str]:
        """Return the names of published files no longer stored as published (replaced,
        edited or deleted by another writer)."""
        if self.ledger.published_target() not in (None, self.target):
            return []  # records of another folder: the next publish sorts them out
        return [name for name in self.ledger.published_names() if not self._intact(name)]

    def _check_lease(self) -> None:
        """Raise PublishError unless this daemon may write to the target now (a long
        publish renews the lease on the way)."""
        lease = self.lease
        if lease is not None and not self.dry_run and not lease.held:
            lease.fence()

    def _write(
        self,
        name: str,
        text: bytes,
        written: dict[str, tuple[str, int, int]],
        report: PublishReport,
    ) -> None:
        report.note(self._store(name, text, self.ledger.published(name), None), written)

    def _store(
        self,
        name: str,
        text: bytes | bytearray,
        record: Record | None,
        manifest_of: Callable[[], bytes] | None,
        digest: str | None = None,
    ) -> Stored | None:
        """Store `text` (whose `docdigest.of` is `digest`, when known) as `name` unless it
        is stored as published (`record`: then return None), after its manifest (read by
        `manifest_of`). Writes no ledger: may run on a thread of its own."""
        digest = docdigest.recorded(text, digest or docdigest.of(text), record and record[0])
        intact = record is not None and self.store.intact(name, record)
        if intact and record is not None and record[0] == digest:
            if manifest_of is not None and isinstance(self.store, LocalStore):
                # The same entries, but a fingerprint may have moved: its manifest says so.
                self._check_lease()
                self.store.refresh_manifest(name, manifest_of())
            return None
        data = self._encoded(name, text)
        if manifest_of is not None:
            self._check_lease()
            if isinstance(self.store, LocalStore) and not self.dry_run:
                stamp, wrote = self.store.put_after(name, data, manifest_of, intact)
                return Stored(name, digest, len(data), stamp, wrote)
            self.store.put_manifest(name, manifest_of())
        stamp, wrote = (0, True) if self.dry_run else self._put(name, bytes(data))
        return Stored(name, digest, len(data), stamp, wrote)

    def _encoded(self, name: str, text: bytes | bytearray) -> bytes | bytearray:
        """Return the bytes that store `text` as `name`: gzipped for a `.gz` name."""
        if not name.endswith(".gz"):
            return text
        import gzip  # here: a site of plain sitemaps does not load it

        # mtime=0 and no file name in the header: the same sitemap gives the same bytes.
        return gzip.compress(text, compresslevel=self.sitemap.gzip_level, mtime=0)

    def _put(self, name: str, data: bytes) -> tuple[int, bool]:
        """Store `name` under the lease; return its stamp and whether it was written."""
        self._check_lease()
        return self.store.put(name, data, self.names.content_type(name))

    def _update_robots_txt(self, report: PublishReport) -> None:
        """Give robots.txt (on disk or in the bucket) the `Sitemap:` line of our index."""
        retired = self.ledger.cursor("robots_sitemap_line")
        url = self.names.index_url
        site = self.config.site
        remove = site.robots_other_sitemaps == "remove"
        ours = partition_index_urls(self.config)

        def edit(current: bytes) -> bytes:
            others = robots.other_sitemaps(current, site.origin.root, ours) if remove else ()
            return robots.with_sitemap_line(current, url, retired, others)

        if not self.dry_run:
            self._check_lease()
        edited = self.store.edit_robots(edit, self.dry_run)
        if edited is None:
            return
        where, updated = edited
        if updated is not None:
            report.written.append(where)
            report.bytes_written += 0 if self.dry_run else len(updated)
        if retired != url and not self.dry_run:
            self.ledger.set_cursor("robots_sitemap_line", url)
