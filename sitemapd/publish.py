"""The publisher: the only code that touches the output directory.

Every file is written whole to a temp file in the same folder, fsynced, renamed over the
old one, and the folder fsynced, so readers only ever see complete documents. Shards go
out before the index that names them; a shard file is removed only after an index that no
longer names it is in place. Files whose bytes did not change are not rewritten.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import re
import secrets
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from . import robots, w3c
from .config import Config
from .errors import PublishError
from .feedwindow import feed_pages
from .ledger import Ledger
from .notify import indexnow
from .parts import part_name, part_number, part_url
from .render.extensions import without_alternates
from .render.feeds import FeedPage, atom, rss
from .render.news import NewsItem, news_files, news_language, news_urlset
from .render.sitemap import sitemap_index, urlset

log = logging.getLogger(__name__)

_TEMP_PREFIX = ".sitemapd-tmp-"


@dataclass
class PublishReport:
    """What one publish wrote and removed."""

    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    bytes_written: int = 0


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> os.stat_result:
    """Replace `path` with `data` so that no reader ever sees a partial file; return the
    new file's status. Raises PublishError.

    `mode` keeps an existing file's permissions; new files get 0o666 minus the umask. A
    symlink at `path` is replaced, never followed.
    """
    try:
        fd, temp = _create_temp(path)
    except OSError as exc:
        raise PublishError(f"cannot write {path} ({exc.strerror})") from exc
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            written = os.fstat(fd)
        finally:
            os.close(fd)
        # rename() replaces whatever is at `path`, a symlink included, and follows nothing.
        os.replace(temp, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise PublishError(f"cannot write {path} ({exc.strerror})") from exc
    return written


def _create_temp(path: Path) -> tuple[int, Path]:
    """Create a new, empty temp file beside `path`; return its descriptor and path.

    Anyone else who can write to the folder could plant a symlink at a name they can
    guess: the name is random and the file is created exclusively, never through a link.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        # The pid last: _remove_leftover_temps keeps a running sitemapd's temps.
        temp = path.with_name(f"{_TEMP_PREFIX}{path.name}-{secrets.token_hex(8)}-{os.getpid()}")
        try:
            return os.open(temp, flags, 0o666), temp
        except FileExistsError:
            continue


def _remove_leftover_temps(folder: Path) -> None:
    """Remove temp files that a crashed sitemapd left in `folder` (never a live one's)."""
    for path in folder.glob(_TEMP_PREFIX + "*"):
        pid = path.name.rpartition("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and _running(int(pid)):
            continue
        path.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class OutputNames:
    """The file names and public URLs of a site's sitemaps, news sitemaps and feeds."""

    def __init__(self, config: Config) -> None:
        self.index = config.sitemap.index
        self.output_url = config.site.output_url
        self._gzip = config.sitemap.gzip
        self._stem = config.sitemap.index.removesuffix(".xml")
        self._shard_file = re.compile(rf"{re.escape(self._stem)}-(\d+)\.xml(\.gz)?\Z")
        # Files whose later pages or parts are numbered from 2: news files, feeds.
        self._paged = [name for name in _paged_names(config) if name]
        self._news = config.news is not None
        self.key_file = (
            config.indexnow.key + ".txt"
            if config.indexnow is not None and config.indexnow.key_file
            else None
        )

    def shard(self, shard_id: int) -> str:
        """Return the file name of shard `shard_id`."""
        return f"{self._stem}-{shard_id}.xml" + (".gz" if self._gzip else "")

    def is_output(self, name: str) -> bool:
        """True when `name` is a file sitemapd writes into the output directory."""
        return (
            name == self.index
            or name == self.key_file
            or self.is_shard(name)
            or any(part_number(first, name) is not None for first in self._paged)
        )

    def is_news(self, name: str) -> bool:
        """True when `name` is one of the site's news sitemaps."""
        first = self._paged[0] if self._news else None
        return first is not None and part_number(first, name) is not None

    def is_later_part(self, name: str) -> bool:
        """True when `name` is a news file or feed page after the first (`-N.xml`)."""
        return any((part_number(first, name) or 1) > 1 for first in self._paged)

    def is_shard(self, name: str) -> bool:
        """True when `name` is a shard file of this site, compressed or not."""
        return self._shard_file.match(name) is not None

    @property
    def index_url(self) -> str:
        """Return the public URL of the sitemap index."""
        return self.output_url + self.index


def _paged_names(config: Config) -> list[str]:
    feed = config.feed
    return [
        config.news.file if config.news else "",
        feed.atom if feed else "",
        feed.rss if feed else "",
    ]


# The feeds' `updated` when no URL has ever been published.
_EPOCH = "1970-01-01T00:00:00+00:00"


class Publisher:
    """Writes the ledger's sitemaps into the output directory, touching only what changed."""

    def __init__(self, config: Config, ledger: Ledger, dry_run: bool = False) -> None:
        self.config = config
        # Reports and records what it would write and remove, touching no file.
        self.dry_run = dry_run
        # What each feed file was last rendered from (see _publish_feeds).
        self._feeds_rendered: dict[str, FeedPage] = {}
        self.site = config.site
        self.sitemap = config.sitemap
        self.ledger = ledger
        self.out = config.site.output_dir
        self.names = OutputNames(config)

    def publish(self, now: str) -> PublishReport:
        """Write every changed file, then remove files no index names; return what happened.

        Order: shards, news sitemaps, the index naming them, feeds, robots.txt, the
        IndexNow key; only then are files that are no longer named removed.
        """
        report = PublishReport()
        if not self.dry_run:
            try:
                self.out.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise PublishError(f"cannot create output directory {self.out} ({exc})") from exc
            _remove_leftover_temps(self.out)
        written: dict[str, tuple[str, int, int]] = {}
        dirty = {shard_id for shard_id, _ in self.ledger.shards_to_render()}
        index_rows = self.ledger.index_rows()
        for shard_id, _ in index_rows:
            name = self.names.shard(shard_id)
            if shard_id in dirty or not self._intact(name):
                self._write(name, self._shard(shard_id), written, report)
        listed: list[tuple[str, str | None]] = [
            (self.names.shard(shard_id), lastmod) for shard_id, lastmod in index_rows
        ]
        listed += self._publish_news(now, written, report)
        if not listed:
            log.warning("no URL is live: publishing an empty sitemap index")
        index = sitemap_index((self.site.output_url + name, lastmod) for name, lastmod in listed)
        self._write(self.sitemap.index, index.encode(), written, report)
        current = {name for name, _ in listed} | {self.sitemap.index}
        if self.config.news is not None:
            current.add(self.config.news.file)
        current |= self._publish_feeds(now, written, report)
        # robots.txt names the new index before any retired file goes.
        self._update_robots_txt(report)
        if self.names.key_file is not None and self.config.indexnow is not None:
            name, data = indexnow.key_file(self.config.indexnow.key)
            self._write(name, data, written, report)
            current.add(name)
        # Only now that the index is in place may files it no longer names go: shards of
        # this index, and anything published under names no longer in use (a renamed index
        # and its shards, news files and feed pages no longer needed).
        retired = [name for name in self.ledger.published_names() if name not in current]
        for path in sorted(self.out.iterdir()) if self.out.is_dir() else ():
            # Numbered files are swept even when the ledger has no record of them (a lost
            # state folder, a crash before the record): left, they would be served stale.
            numbered = self.names.is_shard(path.name) or self.names.is_later_part(path.name)
            stale = numbered and path.name not in current
            if stale or path.name in retired:
                if not self.dry_run:
                    path.unlink(missing_ok=True)
                report.removed.append(path.name)
        if report.removed and not self.dry_run:
            _fsync_dir(self.out)
        self.ledger.record_publish(written, dirty, self.ledger.empty_shards(), retired, at=now)
        return report

    def _shard(self, shard_id: int) -> bytes:
        """Return a shard's document, without alternates that left the sitemaps. Rows
        stream from the ledger and are encoded a thousand entries at a time: a full shard's
        rows, its text and its bytes are never all held at once."""
        extended = self.ledger.shard_has_extras(shard_id)
        rows: Iterable[tuple[str, str, str | None]] = self.ledger.shard_rows(shard_id)
        unlisted = self.ledger.unlisted_alternates(shard_id) if extended else set()
        if unlisted:
            rows = (
                (loc, lastmod, extra and without_alternates(extra, unlisted))
                for loc, lastmod, extra in rows
            )
        entries = urlset(rows, extended)
        return b"".join(
            "".join(batch).encode() for batch in iter(lambda: list(islice(entries, 1000)), [])
        )

    def _publish_news(
        self, now: str, written: dict[str, tuple[str, int, int]], report: PublishReport
    ) -> list[tuple[str, str | None]]:
        """Write the news sitemaps; return `(name, newest publication)` of each."""
        news = self.config.news
        if news is None:
            return []
        since = w3c.format_epoch(w3c.to_epoch(now) - news.max_age)
        articles = self.ledger.articles(since)
        changed = {loc: max(published, lastmod) for loc, published, *_, lastmod in articles}
        items = (
            NewsItem(
                loc,
                news.publication_name,
                news_language(language) or news.language.lower(),
                published,
                news_title or title or loc,
            )
            for loc, published, language, news_title, title, _ in articles
        )
        listed: list[tuple[str, str | None]] = []
        for number, (document, part) in enumerate(news_files(items, self.sitemap.max_bytes), 1):
            name = part_name(news.file, number)
            self._write(name, document.encode(), written, report)
            # What moves a news file for a crawler: a new article or an edited one.
            listed.append((name, max(changed[item.loc] for item in part)))
        if not listed:
            # No article is recent: the first file stays, empty (crawlers that know it
            # read no items rather than an error), but the index names it only while it
            # has items: the sitemap schema wants at least one <url> in a document.
            self._write(news.file, news_urlset([]).encode(), written, report)
        return listed

    def _publish_feeds(
        self, now: str, written: dict[str, tuple[str, int, int]], report: PublishReport
    ) -> set[str]:
        """Write the Atom and RSS feeds and their later pages; return the names written."""
        feed = self.config.feed
        if feed is None:
            return set()
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

    def _intact(self, name: str, record: tuple[str, int, int | None] | None = None) -> bool:
        """True when `name` is on disk exactly as published (same size and mtime)."""
        record = record or self.ledger.published(name)
        try:
            # A symlink planted at the name is never as published: it gets replaced.
            st = (self.out / name).lstat()
        except FileNotFoundError:
            return False
        return (
            record is not None
            and stat.S_ISREG(st.st_mode)
            and (st.st_size, st.st_mtime_ns) == record[1:]
        )

    def _write(
        self,
        name: str,
        text: bytes,
        written: dict[str, tuple[str, int, int]],
        report: PublishReport,
    ) -> None:
        digest = hashlib.sha256(text).hexdigest()
        record = self.ledger.published(name)
        if record is not None and record[0] == digest and self._intact(name, record):
            return
        data = text
        if name.endswith(".gz"):
            # mtime=0 and no file name in the header: the same sitemap gives the same bytes.
            data = gzip.compress(text, compresslevel=self.sitemap.gzip_level, mtime=0)
        mtime_ns = 0 if self.dry_run else atomic_write(self.out / name, data).st_mtime_ns
        written[name] = (digest, len(data), mtime_ns)
        report.written.append(name)
        report.bytes_written += len(data)
        log.debug("wrote %s (%d bytes)", name, len(data))

    def _update_robots_txt(self, report: PublishReport) -> None:
        if self.site.robots_txt is None:
            return
        # Edit the file a symlink points to, keeping its permissions.
        path = self.site.robots_txt.resolve()
        try:
            current = path.read_bytes()
            mode: int | None = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            current, mode = b"", None
        except OSError as exc:
            raise PublishError(f"cannot read {path} ({exc.strerror})") from exc
        retired = self.ledger.cursor("robots_sitemap_line")
        updated = robots.with_sitemap_line(current, self.names.index_url, retired)
        if updated != current and self.dry_run:
            report.written.append(str(path))
        elif updated != current:
            try:
                _remove_leftover_temps(path.parent)
                atomic_write(path, updated, mode)
            except (OSError, PublishError) as exc:
                # The sitemaps are out; a read-only robots.txt must not stop them.
                log.warning(
                    "cannot add the Sitemap: line to %s (%s): make its folder writable "
                    "(systemd: ReadWritePaths=) or add the line by hand",
                    path,
                    exc,
                )
                return
            report.written.append(str(path))
            report.bytes_written += len(updated)
        if retired != self.names.index_url:
            self.ledger.set_cursor("robots_sitemap_line", self.names.index_url)
