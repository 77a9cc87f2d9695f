"""The ledger: the only code that writes the SQLite state database.

It remembers every URL with its content hash and lastmod, decides what an observation
changed, assigns shards, journals changes and records what was published. One writer
connection, WAL mode; every `apply()` is one transaction with the source cursors.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import groupby, islice
from pathlib import Path
from typing import Any, NamedTuple

from sqlite_utils import Database

from . import w3c
from .errors import LedgerError
from .observation import Checkpoint, Gone, Item, Observation, Rejected, Seen
from .removals import Hold, RemovalGuard, decide, holds
from .render.sitemap import entry_size
from .shards import Limits, Shards

log = logging.getLogger(__name__)

LIVE, EXCLUDED, GONE, SEEDED = "live", "excluded", "gone", "seeded"
NEW, UPDATED = "new", "updated"
ROBOTS_REASON = "robots.txt"
# The journal rows the first (bulk) build wrote: the site as it was, not updates.
BASELINE_CURSOR = "journal_baseline"
# Journal position of the last successful publish: nothing newer is announced.
PUBLISHED_CURSOR = "published_seq"
_CHUNK = 2000
_UNSEEN = "id NOT IN (SELECT id FROM temp.seen)"

_URL_COLUMNS = (
    "id, loc, source_id, status, reason, page_reason, content_hash, source_time, lastmod, "
    "first_seen, change_count, title, file_key, shard, entry_bytes, "
    "published, language, news_title, article, alternates, extra, "
    "bytes_hash, fp_settings, fp_fallback, published_stated"
)
_INSERT_URL = f"INSERT INTO urls ({_URL_COLUMNS}) VALUES (NULL{', ?' * 24})"
# URLs from lists carry no content facts; binding fewer values makes bulk loads much faster.
_INSERT_BARE = (
    "INSERT INTO urls (loc, source_id, status, source_time, lastmod, first_seen, change_count, "
    f"shard, entry_bytes) VALUES (?, ?, '{LIVE}', ?, ?, ?, 0, ?, ?)"
)
_UPDATE_URL = (
    "UPDATE urls SET source_id = ?, status = ?, reason = ?, page_reason = ?, content_hash = ?, "
    "source_time = ?, lastmod = ?, change_count = ?, title = ?, file_key = ?, shard = ?, "
    "entry_bytes = ?, published = ?, language = ?, news_title = ?, article = ?, "
    "alternates = ?, extra = ?, bytes_hash = ?, fp_settings = ?, fp_fallback = ?, "
    "published_stated = ? WHERE id = ?"
)


@dataclass(frozen=True, slots=True)
class RobotsRules:
    """The site's robots.txt rules as the ledger applies them."""

    fingerprint: str
    allows: Callable[[str], bool]


# No robots.txt configured: every URL allowed. A fingerprint of its own, so turning the
# rules off lifts their exclusions and turning them on applies them to every URL.
ALLOW_ALL = RobotsRules("none", lambda url: True)


@dataclass(slots=True)
class ChangeSet:
    """What one `apply()` changed."""

    new: int = 0
    updated: int = 0
    gone: int = 0
    rejected: int = 0
    moved: int = 0
    dirty_shards: list[int] = field(default_factory=list)
    # Complete scans that found nothing while their source had URLs: kept, not removed.
    empty_scans: list[str] = field(default_factory=list)
    # Removals held by the mass-removal guard: those URLs stay published.
    held: list[Hold] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Return True when any published URL or shard changed."""
        return bool(self.new or self.updated or self.gone or self.dirty_shards)

    def merged(self, later: ChangeSet) -> ChangeSet:
        """Return the changes of this run and a `later` one together."""
        return ChangeSet(
            self.new + later.new,
            self.updated + later.updated,
            self.gone + later.gone,
            self.rejected + later.rejected,
            self.moved + later.moved,
            sorted(set(self.dirty_shards) | set(later.dirty_shards)),
            self.empty_scans + later.empty_scans,
            self.held + later.held,
        )


class FeedPageRange(NamedTuple):
    """A feed page beyond the first: the latest changes with a journal seq in
    `(low_seq, high_seq]`, opened at `opened_at`, last given entries at `filled_at`."""

    number: int
    low_seq: int
    high_seq: int
    opened_at: str
    filled_at: str


class KnownFile(NamedTuple):
    """What the ledger recorded of a file it read."""

    file_key: str
    bytes_hash: str | None
    content_hash: str | None
    fp_settings: str | None


@dataclass(slots=True)
class _Row:
    """One `urls` row, in `_URL_COLUMNS` order."""

    id: int
    loc: str
    source_id: int | None
    status: str
    reason: str | None
    page_reason: str | None
    content_hash: str | None
    source_time: str | None
    lastmod: str
    first_seen: str
    change_count: int
    title: str | None
    file_key: str | None
    shard: int | None
    entry_bytes: int
    published: str | None
    language: str | None
    news_title: str | None
    article: int | None
    alternates: str | None
    extra: str | None
    bytes_hash: str | None
    fp_settings: str | None
    fp_fallback: int | None
    published_stated: int | None

    def update_params(self) -> tuple[Any, ...]:
        return (
            self.source_id,
            self.status,
            self.reason,
            self.page_reason,
            self.content_hash,
            self.source_time,
            self.lastmod,
            self.change_count,
            self.title,
            self.file_key,
            self.shard,
            self.entry_bytes,
            self.published,
            self.language,
            self.news_title,
            self.article,
            self.alternates,
            self.extra,
            self.bytes_hash,
            self.fp_settings,
            self.fp_fallback,
            self.published_stated,
            self.id,
        )


def _facts(obs: Observation) -> tuple[str | None, str | None, int | None, str | None, str | None]:
    """Return `(language, news_title, article, alternates, extra)` columns of `obs`."""
    meta = obs.meta
    if meta is None:
        return None, None, None, None, obs.extra or None
    alternates = "".join(f"{lang}\t{href}\n" for lang, href in meta.alternates) or None
    return meta.language, meta.news_title, int(meta.article), alternates, obs.extra or None


def _migrate_v1(db: Database) -> None:
    db.table("urls").create(
        {
            "id": int,
            "loc": str,
            "source_id": int,
            "status": str,
            "reason": str,
            "page_reason": str,
            "content_hash": str,
            "source_time": str,
            "lastmod": str,
            "first_seen": str,
            "change_count": int,
            "title": str,
            "file_key": str,
            "shard": int,
            "entry_bytes": int,
        },
        pk="id",
        not_null=["loc", "status", "lastmod", "first_seen", "change_count"],
    )
    db.table("sources").create({"id": int, "name": str}, pk="id", not_null=["name"])
    db.table("sources").create_index(["name"], unique=True)
    db.table("shards").create(
        {"id": int, "url_count": int, "bytes": int, "lastmod": str, "dirty": int}, pk="id"
    )
    db.table("journal").create({"seq": int, "url_id": int, "kind": str, "at": str}, pk="seq")
    db.table("cursors").create({"name": str, "value": str}, pk="name")
    db.table("rejects").create(
        {"source": str, "item": str, "reason": str, "at": str}, pk=("source", "item")
    )
    db.table("published").create({"name": str, "sha256": str, "bytes": int, "at": str}, pk="name")
    _create_url_indexes(db.conn)


def _create_url_indexes(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS urls_loc ON urls (loc)")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS urls_shard ON urls (shard, id) WHERE shard IS NOT NULL"
    )


def _drop_url_indexes(conn: sqlite3.Connection) -> None:
    conn.execute("DROP INDEX IF EXISTS urls_loc")
    conn.execute("DROP INDEX IF EXISTS urls_shard")


def _migrate_v2(db: Database) -> None:
    # With the size alone, an edit that keeps a file's size went unnoticed and unrepaired.
    db.table("published").add_column("mtime_ns", int)


def _migrate_v3(db: Database) -> None:
    # News, hreflang and image facts; the rendered extra elements count in entry_bytes.
    for column, kind in (
        ("published", str),
        ("language", str),
        ("news_title", str),
        ("article", int),
        ("alternates", str),
        ("extra", str),
    ):
        db.table("urls").add_column(column, kind)
    db.conn.execute(
        "CREATE INDEX IF NOT EXISTS urls_published ON urls (published) WHERE article = 1"
    )
    # The last successful fetch of each feed page per crawler (page 1 is the feed itself),
    # and what crawlers got for URLs.
    db.table("crawls").create(
        {"crawler": str, "page": int, "fetched_at": str}, pk=("crawler", "page")
    )
    # Which URLs list which hreflang alternates: a URL that leaves the sitemaps or comes
    # back re-renders the shards of the pages naming it.
    db.conn.execute(
        "CREATE TABLE alternate_links (href TEXT NOT NULL, url_id INTEGER NOT NULL, "
        "PRIMARY KEY (href, url_id)) WITHOUT ROWID"
    )
    db.conn.execute("CREATE INDEX alternate_links_url ON alternate_links (url_id)")
    # Feed pages beyond the first: the journal seqs `(low_seq, high_seq]` whose entries
    # each holds, when it was opened and when it last took entries in.
    db.table("feed_pages").create(
        {"number": int, "low_seq": int, "high_seq": int, "opened_at": str, "filled_at": str},
        pk="number",
    )
    db.table("crawl_answers").create(
        {"loc": str, "status": int, "crawler": str, "at": str}, pk="loc"
    )


def _migrate_v4(db: Database) -> None:
    # The significant-change fingerprint: the bytes it was taken from, the settings that
    # took it, and whether the page's main content was found.
    for column, kind in (("bytes_hash", str), ("fp_settings", str), ("fp_fallback", int)):
        db.table("urls").add_column(column, kind)


def _migrate_v5(db: Database) -> None:
    # 1 when an article's publication time is the one the page states; otherwise it is
    # provisional (the file's time, or when it was first seen) and a stated one replaces it.
    db.table("urls").add_column("published_stated", int)


# Append only: a released migration never changes; the list index + 1 is the version.
MIGRATIONS: list[Callable[[Database], None]] = [
    _migrate_v1,
    _migrate_v2,
    _migrate_v3,
    _migrate_v4,
    _migrate_v5,
]


def _unchanged(values: tuple[Any, ...], obs: Observation, source_id: int) -> bool:
    """True when `obs` repeats what the row (`_URL_COLUMNS` values) already records.

    The common case of a rescan, decided without building a row; robots.txt verdicts
    cannot differ because changed rules were re-applied before any observation.
    """
    return (
        values[2] == source_id
        and values[3] in (LIVE, EXCLUDED)
        and values[5] == obs.exclusion
        and values[11] == obs.title
        and values[12] == obs.file_key
        and (obs.content_hash is None or obs.content_hash == values[6])
        and (obs.source_time is None or obs.source_time == values[7])
        and values[16:21] == _facts(obs)
        and (values[15] is not None or obs.meta is None or not obs.meta.article)
        and (obs.bytes_hash is None or values[21:24] == _fingerprint(obs))
        and (values[24] == 1 or _stated(obs) is None)
    )


def _stated(obs: Observation) -> str | None:
    """Return the publication time an article's page states, or None."""
    meta = obs.meta
    return meta.published if meta is not None and meta.article else None


def _fingerprint(obs: Observation) -> tuple[str | None, str | None, int | None]:
    """Return `(bytes_hash, fp_settings, fp_fallback)` columns of `obs`."""
    return obs.bytes_hash, obs.fp_settings, int(obs.fallback) if obs.bytes_hash else None


def _chunks(items: Iterable[Item], size: int) -> Iterator[list[Item]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def is_published(conn: sqlite3.Connection, name: str) -> bool:
    """True when the ledger open on `conn` records output file `name` as published.

    For readers in other threads and processes, on a connection of their own.
    """
    row = conn.execute("SELECT 1 FROM published WHERE name = ?", (name,)).fetchone()
    return row is not None


class Ledger:
    """The URL ledger in one SQLite file. Not thread-safe: one writer at a time."""

    def __init__(self, path: Path, limits: Limits) -> None:
        self.path = path
        self.limits = limits
        if path.is_file() and path.stat().st_size == 0:
            # SQLite would take it for a new database: every lastmod would start over.
            raise LedgerError(
                f"{path} is empty (0 bytes): the ledger's history is lost; to start over, "
                "delete it and run sitemapd again"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode never corrupts; a crash loses at most the last commit,
            # which the next scan observes again.
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA cache_size = -65536")
            self.conn.execute("PRAGMA busy_timeout = 5000")
            self._migrate()
        except sqlite3.Error as exc:
            raise LedgerError(f"{path}: cannot open the ledger ({exc})") from exc
        self._reader: sqlite3.Connection | None = None

    def _migrate(self) -> None:
        (version,) = self.conn.execute("PRAGMA user_version").fetchone()
        if version > len(MIGRATIONS):
            raise LedgerError(
                f"{self.path}: ledger schema version {version} is newer than this sitemapd "
                f"understands ({len(MIGRATIONS)}); upgrade sitemapd"
            )
        db = Database(self.conn)
        for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
            self.conn.execute("BEGIN IMMEDIATE")
            migration(db)
            self.conn.execute(f"PRAGMA user_version = {number}")
            self.conn.execute("COMMIT")

    def close(self) -> None:
        """Close the connections; the ledger file stays consistent at any point."""
        if self._reader is not None:
            self._reader.close()
        self.conn.close()

    # -- reads ---------------------------------------------------------------------

    def _read(self) -> sqlite3.Connection:
        """Return a second connection that sees the last committed state only."""
        if self._reader is None:
            self._reader = sqlite3.connect(self.path, check_same_thread=False)
        return self._reader

    def _owned(self, source: str, locs: list[str], columns: str) -> list[tuple[Any, ...]]:
        """Return `(loc, *columns)` of present (not gone) URLs of `source` among `locs`."""
        marks = ",".join("?" * len(locs))
        return (
            self._read()
            .execute(
                f"SELECT loc, {columns} FROM urls WHERE loc IN ({marks}) "
                "AND source_id = (SELECT id FROM sources WHERE name = ?) "
                f"AND status IN ('{LIVE}', '{EXCLUDED}')",
                [*locs, source],
            )
            .fetchall()
        )

    def known_files(self, source: str, locs: list[str]) -> dict[str, KnownFile]:
        """Return what is recorded of present URLs of `source` among `locs` read from files."""
        return {
            row[0]: KnownFile(*row[1:])
            for row in self._owned(source, locs, "file_key, bytes_hash, content_hash, fp_settings")
            if row[1] is not None
        }

    def owners(self, locs: list[str]) -> dict[str, str]:
        """Return `{loc: source name}` for the present (not gone) URLs among `locs`."""
        marks = ",".join("?" * len(locs))
        return dict(
            self._read()
            .execute(
                f"SELECT u.loc, s.name FROM urls u JOIN sources s ON s.id = u.source_id "
                f"WHERE u.loc IN ({marks}) AND u.status IN ('{LIVE}', '{EXCLUDED}')",
                locs,
            )
            .fetchall()
        )

    def live_count(self) -> int:
        """Return how many URLs are published."""
        (count,) = self.conn.execute(
            "SELECT count(*) FROM urls WHERE status = ?", (LIVE,)
        ).fetchone()
        return int(count)

    def holds(self) -> list[Hold]:
        """Return the removals the mass-removal guard holds."""
        return holds(self.conn)

    def cursor(self, name: str) -> str | None:
        """Return the stored value of cursor `name`, or None."""
        row = self.conn.execute("SELECT value FROM cursors WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def url(self, loc: str) -> dict[str, Any] | None:
        """Return the ledger row of `loc` as a dict, or None."""
        cursor = self.conn.execute(f"SELECT {_URL_COLUMNS} FROM urls WHERE loc = ?", (loc,))
        row = cursor.fetchone()
        if row is None:
            return None
        return dict(zip([d[0] for d in cursor.description], row, strict=True))

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

    def last_seq(self) -> int:
        """Return the newest journal sequence number (0 for an empty journal)."""
        (seq,) = self.conn.execute("SELECT max(seq) FROM journal").fetchone()
        return int(seq or 0)

    def first_seq_since(self, at: str) -> int:
        """Return the first journal seq recorded at or after `at` (binary search on seq:
        journal times grow with seq)."""
        low, high = 1, self.last_seq() + 1
        while low < high:
            middle = (low + high) // 2
            row = self.conn.execute(
                "SELECT at FROM journal WHERE seq >= ? ORDER BY seq LIMIT 1", (middle,)
            ).fetchone()
            if row is None or row[0] >= at:
                high = middle
            else:
                low = middle + 1
        return low

    def recent_changes(self, after_seq: int) -> Iterator[tuple[int, str, str, str | None, str]]:
        """Yield `(seq, at, loc, title, lastmod)` of new/updated changes of live URLs after
        `after_seq`, newest change first; a URL may appear more than once."""
        yield from self.conn.execute(
            "SELECT j.seq, j.at, u.loc, u.title, u.lastmod FROM journal j "
            "JOIN urls u ON u.id = j.url_id WHERE j.seq > ? AND j.kind != ? AND u.status = ? "
            "ORDER BY j.seq DESC",
            (after_seq, GONE, LIVE),
        )

    def changed_urls(self, after_seq: int, upto_seq: int, limit: int) -> list[tuple[int, str]]:
        """Return `(seq, loc)` of every journalled change in `(after_seq, upto_seq]`, in
        order, at most `limit`."""
        return self.conn.execute(
            "SELECT j.seq, u.loc FROM journal j JOIN urls u ON u.id = j.url_id "
            "WHERE j.seq > ? AND j.seq <= ? ORDER BY j.seq LIMIT ?",
            (after_seq, upto_seq, limit),
        ).fetchall()

    def crawler_fetches(self) -> dict[tuple[str, int], str]:
        """Return `{(crawler, feed page): time of its last successful fetch}`."""
        rows = self.conn.execute("SELECT crawler, page, fetched_at FROM crawls")
        return {(crawler, page): at for crawler, page, at in rows}

    def feed_pages(self) -> list[FeedPageRange]:
        """Return the feed pages beyond the first, oldest first."""
        rows = self.conn.execute(
            "SELECT number, low_seq, high_seq, opened_at, filled_at FROM feed_pages ORDER BY number"
        )
        return [FeedPageRange(*row) for row in rows]

    def index_rows(self) -> list[tuple[int, str]]:
        """Return `(id, lastmod)` of every non-empty shard, in id order."""
        return self.conn.execute(
            "SELECT id, lastmod FROM shards WHERE url_count > 0 ORDER BY id"
        ).fetchall()

    def empty_shards(self) -> list[int]:
        """Return the ids of shards left with no members."""
        return [r[0] for r in self.conn.execute("SELECT id FROM shards WHERE url_count = 0")]

    def published(self, name: str) -> tuple[str, int, int | None] | None:
        """Return `(sha256, size, mtime_ns)` of output file `name` as published, or None."""
        row = self.conn.execute(
            "SELECT sha256, bytes, mtime_ns FROM published WHERE name = ?", (name,)
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def published_names(self) -> list[str]:
        """Return the names of every output file sitemapd has published."""
        return [r[0] for r in self.conn.execute("SELECT name FROM published ORDER BY name")]

    # -- writes --------------------------------------------------------------------

    def save_feed_pages(self, pages: Iterable[FeedPageRange]) -> None:
        """Replace the recorded feed pages beyond the first with `pages`."""
        with self.transaction():
            self.conn.execute("DELETE FROM feed_pages")
            self.conn.executemany(
                "INSERT INTO feed_pages (number, low_seq, high_seq, opened_at, filled_at) "
                "VALUES (?, ?, ?, ?, ?)",
                pages,
            )

    def set_cursor(self, name: str, value: str) -> None:
        """Store cursor `name` on its own (cursors of sources commit with `apply`)."""
        with self.transaction():
            self.conn.execute(
                "INSERT OR REPLACE INTO cursors (name, value) VALUES (?, ?)", (name, value)
            )

    def record_crawls(
        self,
        fetches: Mapping[tuple[str, int], str],
        answers: Iterable[tuple[str, int, str, str]],
        cursors: Mapping[str, str],
    ) -> None:
        """Record feed page fetches per crawler and `(loc, status, crawler, at)` answers, with
        the access log cursors, in one transaction; a 2xx/304 answer clears a URL's record."""
        answers = list(answers)
        with self.transaction():
            self.conn.executemany(
                "INSERT INTO crawls (crawler, page, fetched_at) VALUES (?, ?, ?) "
                "ON CONFLICT (crawler, page) "
                "DO UPDATE SET fetched_at = max(fetched_at, excluded.fetched_at)",
                sorted((crawler, page, at) for (crawler, page), at in fetches.items()),
            )
            self.conn.executemany(
                "DELETE FROM crawl_answers WHERE loc = ?",
                [(loc,) for loc, status, _, _ in answers if status < 300 or status == 304],
            )
            # Only URLs the ledger knows: what a sitemap lists, or once listed.
            self.conn.executemany(
                "INSERT OR REPLACE INTO crawl_answers (loc, status, crawler, at) "
                "SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM urls WHERE loc = ?)",
                [(*a, a[0]) for a in answers if not (a[1] < 300 or a[1] == 304)],
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO cursors (name, value) VALUES (?, ?)",
                sorted(cursors.items()),
            )

    def record_publish(
        self,
        written: Mapping[str, tuple[str, int, int]],
        clean: Iterable[int],
        dropped_shards: Iterable[int],
        removed_files: Iterable[str],
        at: str,
    ) -> None:
        """Remember published files, mark shards clean and forget dropped ones; note how
        far the journal is published."""
        with self.transaction():
            self.conn.execute(
                "INSERT OR REPLACE INTO cursors (name, value) "
                "SELECT ?, coalesce(max(seq), 0) FROM journal",
                (PUBLISHED_CURSOR,),
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

    def seed(self, entries: Iterable[tuple[str, str | None]], now: str | None = None) -> int:
        """Remember `(loc, lastmod)` from an existing sitemap; return how many were kept.

        Seeded URLs are not published until a source observes them; then they keep the
        seeded lastmod unless their content changes later. Entries without a lastmod, or
        with one in the future, teach nothing: the source's own time serves better.
        """
        now = now or w3c.now()
        added = 0
        with self.transaction():
            for loc, lastmod in entries:
                if lastmod is None or lastmod > now:
                    continue
                cursor = self.conn.execute(
                    "INSERT INTO urls (loc, status, source_time, lastmod, first_seen, "
                    "change_count, entry_bytes) VALUES (?, ?, ?, ?, ?, 0, ?) "
                    "ON CONFLICT (loc) DO UPDATE SET lastmod = excluded.lastmod, "
                    "source_time = excluded.source_time WHERE urls.status = ?",
                    (loc, SEEDED, lastmod, lastmod, now, entry_size(loc), SEEDED),
                )
                added += cursor.rowcount
        return added

    def transaction(self) -> _Transaction:
        """Return a context manager: one write transaction (BEGIN IMMEDIATE), rolled back
        when its block raises."""
        return _Transaction(self.conn)

    def apply(
        self,
        items: Iterable[Item],
        *,
        complete: Collection[str] = (),
        robots: RobotsRules = ALLOW_ALL,
        cursors: Mapping[str, str] | None = None,
        now: str | None = None,
        configured: Collection[str] | None = None,
        complete_before: Collection[str] = (),
        guard: RemovalGuard | None = None,
    ) -> ChangeSet:
        """Apply observations in one transaction with `cursors`; return what changed.

        `complete` names sources whose items were a full scan: any URL they own that
        was not among the items is gone. With `configured`, when every configured source
        was read in full (here, or by an earlier apply of the same run: `complete_before`),
        URLs still owned by a source no longer in it (renamed or removed) are gone too.
        A `guard` holds the removals of its sources that take too much at once, and the
        cursors of a held source, so that it is read again in full.
        """
        guard = guard or RemovalGuard()
        try:
            with self.transaction():
                run = _Apply(self, robots, now or w3c.now(), guard)
                run.start(complete)
                run.consume(items)
                run.finish(complete, configured, complete_before)
                kept_back = guard.held_cursors(run.changes.held)
                self.conn.executemany(
                    "INSERT OR REPLACE INTO cursors (name, value) VALUES (?, ?)",
                    sorted(i for i in (cursors or {}).items() if i[0] not in kept_back),
                )
        except sqlite3.Error as exc:
            raise LedgerError(f"{self.path}: applying changes failed ({exc})") from exc
        return run.changes


class _Transaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")


def _is_bare(row: tuple[Any, ...]) -> bool:
    """True for a `_new_row` row with no reason, hash, title, file or facts: a listed URL,
    which a narrower INSERT stores faster."""
    return (
        row[3] is None
        and row[5] is None
        and row[10] is None
        and row[11] is None
        and not any(row[14:])
    )


class _Apply:
    """One `Ledger.apply()` run: the decisions, shard moves and journal of a transaction."""

    def __init__(self, ledger: Ledger, robots: RobotsRules, now: str, guard: RemovalGuard) -> None:
        self.conn = ledger.conn
        self.ledger = ledger
        self.robots = robots
        self.now = now
        self.guard = guard
        # Guarded sources that said some URLs are gone (in temp.pending until `finish`).
        self.pending: set[str] = set()
        self.changes = ChangeSet()
        self.shards = Shards(self.conn, ledger.limits)
        self.journal: list[tuple[int, str, str]] = []
        # Sources that gave at least one present URL in this run.
        self.observed: set[str] = set()
        self._source_ids: dict[str, int] = dict(
            (name, id_) for id_, name in self.conn.execute("SELECT id, name FROM sources")
        )
        self.bulk = False
        # url id -> its new alternates text, for alternate_links.
        self.links: dict[int, str | None] = {}
        self.first_seq = ledger.last_seq()
        # Bulk runs: loc -> the last row id inserted before a Gone for it.
        self.bulk_gone: dict[str, int] = {}

    def source_id(self, name: str) -> int:
        """Return the id of source `name`, registering it on first use."""
        found = self._source_ids.get(name)
        if found is None:
            cursor = self.conn.execute("INSERT INTO sources (name) VALUES (?)", (name,))
            found = self._source_ids[name] = cursor.lastrowid or 0
        return found

    # Decisions ---------------------------------------------------------------------

    def _reason(self, loc: str, page_reason: str | None) -> str | None:
        if page_reason:
            return page_reason
        if not self.robots.allows(loc):
            return ROBOTS_REASON
        return None

    def _new_row(self, obs: Observation) -> tuple[Any, ...]:
        """Return the insert parameters of a URL seen for the first time."""
        reason = self._reason(obs.loc, obs.exclusion)
        lastmod = min(obs.source_time or self.now, self.now)
        size = entry_size(obs.loc) + len(obs.extra.encode())
        shard = None
        if reason is None:
            shard = self.shards.place(size, lastmod)
            self.changes.new += 1
        published, stated = self._published(None, None, obs, live=reason is None)
        return (
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

    def _observe(self, row: _Row, obs: Observation) -> None:
        """Update `row` for what `obs` says of it now."""
        old_lastmod = row.lastmod
        if obs.content_hash is not None:
            # No stored hash (seeded or listed URL): first content, not a change. Taken by
            # other settings, the stored hash is compared with the content's by those.
            measure = obs.content_hash if obs.old_measure is None else obs.old_measure
            changed = row.content_hash is not None and row.content_hash != measure
            new_lastmod = self.now
        else:
            changed = obs.source_time is not None and (
                row.source_time is None or obs.source_time > row.source_time
            )
            new_lastmod = min(obs.source_time or self.now, self.now)
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
        row: _Row,
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

    def _remove(self, row: _Row) -> None:
        """Mark `row` gone: out of every sitemap, its hash and lastmod kept for its return."""
        self._set_status(row, None, row.lastmod, gone=True)
        row.file_key = None

    # Phases ------------------------------------------------------------------------

    def start(self, complete: Collection[str]) -> None:
        # An empty ledger takes a bulk path: no lookups, indexes built once at the end.
        self.bulk = self.conn.execute("SELECT 1 FROM urls LIMIT 1").fetchone() is None
        if self.bulk:
            _drop_url_indexes(self.conn)
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
        self.changes.moved += self.shards.enforce_limits()

    def consume(self, items: Iterable[Item]) -> None:
        for chunk in _chunks(items, _CHUNK):
            rejects = [item for item in chunk if isinstance(item, Rejected)]
            if rejects:
                self.changes.rejected += len(rejects)
                self.conn.executemany(
                    "INSERT OR REPLACE INTO rejects (source, item, reason, at) VALUES (?, ?, ?, ?)",
                    [(r.source, r.item, r.reason, self.now) for r in rejects],
                )
            checkpoints = [item for item in chunk if isinstance(item, Checkpoint)]
            if checkpoints:
                self.conn.executemany(
                    "INSERT OR REPLACE INTO cursors (name, value) VALUES (?, ?)", checkpoints
                )
            present = [item for item in chunk if isinstance(item, Observation | Seen | Gone)]
            self.observed.update(item.source for item in present)
            if self.bulk:
                self._consume_bulk(present)
            else:
                self._update_chunk(present)

    def _consume_bulk(self, items: list[Observation | Seen | Gone]) -> None:
        """Insert new rows, noting for each Gone how far the rows inserted before it go."""
        run: list[Observation] = []
        for item in items:
            if isinstance(item, Observation):
                run.append(item)
            elif isinstance(item, Gone):
                self._insert([self._new_row(o) for o in run])
                run = []
                (last,) = self.conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()
                self.bulk_gone[item.loc] = last
        self._insert([self._new_row(o) for o in run])

    def _insert(self, rows: list[tuple[Any, ...]]) -> None:
        """Insert rows made by `_new_row`, in their order: of a URL given twice to the
        bulk path, the row inserted last is the one kept."""
        for bare, run in groupby(rows, key=_is_bare):
            if bare:
                self.conn.executemany(
                    _INSERT_BARE, [(r[0], r[1], r[6], r[7], r[8], r[12], r[13]) for r in run]
                )
            else:
                self.conn.executemany(_INSERT_URL, run)

    def _update_chunk(self, items: list[Observation | Seen | Gone]) -> None:
        latest = {item.loc: item for item in items}  # the last word on a URL wins
        marks = ",".join("?" * len(latest))
        rows = {
            row[1]: row
            for row in self.conn.execute(
                f"SELECT {_URL_COLUMNS} FROM urls WHERE loc IN ({marks})", list(latest)
            )
        }
        inserts, updates, seen, touched, pending = [], [], [], [], []
        for loc, item in latest.items():
            values = rows.get(loc)
            if values is None:
                if isinstance(item, Observation):
                    inserts.append(self._new_row(item))
                continue
            if isinstance(item, Seen):
                if values[2] == self.source_id(item.source) and values[3] != GONE:
                    seen.append((values[0],))
                    if item.file_key is not None and item.file_key != values[12]:
                        touched.append((item.file_key, values[0]))
                continue
            if isinstance(item, Gone):
                # Only the owner's word removes a URL: another source may still have it.
                if values[2] == self.source_id(item.source) and values[3] != GONE:
                    if item.source in self.guard.sources:
                        # Decided in `finish`, with the rest of the source's removals.
                        pending.append((values[0],))
                        self.pending.add(item.source)
                        continue
                    row = _Row(*values)
                    self._remove(row)
                    updates.append(row.update_params())
                continue
            seen.append((values[0],))
            if _unchanged(values, item, self.source_id(item.source)):
                continue
            row = _Row(*values)
            before = row.update_params()
            self._observe(row, item)
            after = row.update_params()
            if after != before:
                updates.append(after)
        self._insert(inserts)
        for loc, alternates in ((params[0], params[18]) for params in inserts):
            if alternates is not None:
                (url_id,) = self.conn.execute(
                    "SELECT id FROM urls WHERE loc = ?", (loc,)
                ).fetchone()
                self.links[url_id] = alternates
        self.conn.executemany(_UPDATE_URL, updates)
        self.conn.executemany("UPDATE urls SET file_key = ? WHERE id = ?", touched)
        self.conn.executemany("INSERT OR IGNORE INTO temp.seen VALUES (?)", seen)
        # The last word on a URL wins across chunks too: seen and pending stay disjoint.
        self.conn.executemany("DELETE FROM temp.pending WHERE id = ?", seen)
        self.conn.executemany("DELETE FROM temp.seen WHERE id = ?", pending)
        self.conn.executemany("INSERT OR IGNORE INTO temp.pending VALUES (?)", pending)
        if inserts:
            self.conn.executemany(
                "INSERT OR IGNORE INTO temp.seen SELECT id FROM urls WHERE loc = ?",
                [(params[0],) for params in inserts],
            )
            self.conn.executemany(
                "INSERT INTO journal (url_id, kind, at) SELECT id, ?, ? FROM urls WHERE loc = ?",
                [(NEW, self.now, params[0]) for params in inserts if params[2] == LIVE],
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
            for source in self.pending - set(complete):
                self._remove_missing(source, "id IN (SELECT id FROM temp.pending)")
            for source in complete:
                if source in self.observed or not self._owns_any(source):
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
            self._save_links()
            self._dirty_alternate_shards()
        self.changes.dirty_shards = self.shards.flush()

    def _save_links(self) -> None:
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

    def _dirty_alternate_shards(self) -> None:
        """Mark dirty the shards of pages naming, as an alternate, a URL that entered or
        left the sitemaps in this run: their entries list it or leave it out."""
        for (shard_id,) in self.conn.execute(
            "SELECT DISTINCT m.shard FROM journal j JOIN urls t ON t.id = j.url_id "
            "JOIN alternate_links l ON l.href = t.loc JOIN urls m ON m.id = l.url_id "
            "WHERE j.seq > ? AND j.kind != ? AND m.shard IS NOT NULL",
            (self.first_seq, UPDATED),
        ):
            self.shards.dirty.add(shard_id)

    def _finish_bulk(self) -> None:
        try:
            _create_url_indexes(self.conn)
        except sqlite3.IntegrityError:
            # A source listed a URL twice: keep its last line, then rebuild the counts.
            self.conn.execute(
                "DELETE FROM urls WHERE id NOT IN (SELECT max(id) FROM urls GROUP BY loc)"
            )
            self._recount_shards()
            _create_url_indexes(self.conn)
            # `_new_row` counted the duplicates too.
            self.changes.new = sum(state.url_count for state in self.shards.states.values())
        # A URL deleted later in the same first run (a change log replaying a create and a
        # delete) was never published: it leaves no row.
        for loc, upto in self.bulk_gone.items():
            row = self.conn.execute(
                "SELECT id, status, shard, entry_bytes FROM urls WHERE loc = ?", (loc,)
            ).fetchone()
            if row is not None and row[0] <= upto:
                if row[2] is not None:
                    self.shards.remove(row[2], row[3])
                if row[1] == LIVE:
                    self.changes.new -= 1
                self.conn.execute("DELETE FROM urls WHERE id = ?", (row[0],))
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
        self.links = dict(
            self.conn.execute("SELECT id, alternates FROM urls WHERE alternates IS NOT NULL")
        )
        self._save_links()

    def _recount_shards(self) -> None:
        for state in self.shards.states.values():
            state.url_count = state.bytes = 0
        for shard_id, count, size, lastmod in self.conn.execute(
            "SELECT shard, count(*), sum(entry_bytes), max(lastmod) FROM urls "
            "WHERE shard IS NOT NULL GROUP BY shard"
        ):
            state = self.shards.states[shard_id]
            state.url_count, state.bytes, state.lastmod = count, size, lastmod
        self.shards.dirty.update(self.shards.states)

    def _owns_any(self, source: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM urls WHERE source_id = ? AND status IN (?, ?) LIMIT 1",
            (self.source_id(source), LIVE, EXCLUDED),
        ).fetchone()
        return row is not None

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
            f"SELECT {_URL_COLUMNS} FROM urls WHERE id > ? AND source_id = ? "
            f"AND status IN (?, ?) AND {which} ORDER BY id LIMIT ?",
            (last_id, source_id, LIVE, EXCLUDED, _CHUNK),
        ).fetchall():
            rows = [_Row(*values) for values in batch]
            for row in rows:
                self._remove(row)
            self.conn.executemany(_UPDATE_URL, [row.update_params() for row in rows])
            removed += len(rows)
            last_id = rows[-1].id
        return removed

    def _recheck_robots(self) -> None:
        """Re-apply changed robots.txt rules to every present URL."""
        last_id, changed = 0, 0
        while batch := self.conn.execute(
            f"SELECT {_URL_COLUMNS} FROM urls WHERE id > ? AND status IN (?, ?) "
            "ORDER BY id LIMIT ?",
            (last_id, LIVE, EXCLUDED, _CHUNK),
        ).fetchall():
            updates = []
            for values in batch:
                row = _Row(*values)
                reason = self._reason(row.loc, row.page_reason)
                if reason != row.reason:
                    self._set_status(row, reason, row.lastmod)
                    updates.append(row.update_params())
            self.conn.executemany(_UPDATE_URL, updates)
            changed += len(updates)
            last_id = batch[-1][0]
        log.info("robots.txt rules changed: %d URLs changed status", changed)
