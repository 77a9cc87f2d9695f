"""The ledger's schema: its tables, their migrations, and the row shapes of `urls`.

A released migration never changes; the list index + 1 is the schema version, stored in
`PRAGMA user_version`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sitemapd.errors import LedgerError
from sitemapd.ledger.bulk import insert_values

if TYPE_CHECKING:
    from sqlite_utils import Database

LIVE, EXCLUDED, GONE, SEEDED = "live", "excluded", "gone", "seeded"


@dataclass(slots=True)
class UrlRow:
    """One `urls` row, in `URL_COLUMNS` order; `id` is None until it is inserted."""

    id: int | None
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

    def insert_params(self) -> tuple[Any, ...]:
        """Return the values `INSERT_URL` binds: every column but `id`."""
        return _INSERTED(self)

    def update_params(self) -> tuple[Any, ...]:
        """Return the values `UPDATE_URL` binds: every column but `id` and `loc`, then `id`."""
        return _UPDATED(self)

    @property
    def bare(self) -> bool:
        """True for a listed URL: no reason, hash, title, file or facts (stored as NULL,
        as the bulk load of change-log reads stores them)."""
        return (
            self.reason is None
            and self.content_hash is None
            and self.title is None
            and self.file_key is None
            and not any(_FACTS(self))
        )


_COLUMNS: tuple[str, ...] = UrlRow.__slots__
# Attribute getters run in C: these are called for every row a build writes.
_INSERTED = attrgetter(*_COLUMNS[1:])
_UPDATED = attrgetter(*_COLUMNS[2:], "id")
_FACTS = attrgetter(*_COLUMNS[15:])
_LISTED = attrgetter(*_COLUMNS[1:15])
_NO_FACTS = (None,) * (len(_COLUMNS) - 15)


def _bare(row: UrlRow) -> tuple[Any, ...]:
    """Return the values `INSERT_URL` binds for a bare row: its facts as NULL."""
    return _LISTED(row) + _NO_FACTS


# The statements of whole rows, from the one list of columns above.
URL_COLUMNS = ", ".join(_COLUMNS)
INSERT_URL = f"INSERT INTO urls ({URL_COLUMNS}) VALUES (NULL{', ?' * (len(_COLUMNS) - 1)})"
UPDATE_URL = f"UPDATE urls SET {', '.join(f'{name} = ?' for name in _COLUMNS[2:])} WHERE id = ?"
# Fewer rows than this are inserted with every value bound.
_SHARED_FROM = 16


def insert_rows(conn: sqlite3.Connection, rows: list[UrlRow]) -> None:
    """Insert `rows` (ids not yet given), in order.

    A value every row has (a status, a source, the run's time, a fact no page states)
    is written into the statement rather than bound for each row: binding a value costs
    more than SQLite's whole work on it, and a bulk insert shares most of its columns.
    """
    params = [_bare(row) if row.bare else _INSERTED(row) for row in rows]
    if len(rows) < _SHARED_FROM:
        conn.executemany(INSERT_URL, params)
        return
    values: list[str] = []
    bound: list[tuple[Any, ...]] = []
    for column in zip(*params, strict=True):
        literal = _literal(column[0]) if column.count(column[0]) == len(column) else None
        if literal is None:
            values.append("?")
            bound.append(column)
        else:
            values.append(literal)
    if not bound:  # rows all alike (one URL given again and again): bind the loc anyway
        values[0], bound = "?", [tuple(row.loc for row in rows)]
    insert_values(
        conn, f"INSERT OR FAIL INTO urls ({URL_COLUMNS})", f"(NULL, {', '.join(values)})", bound
    )


def _literal(value: object) -> str | None:
    """Return `value` as an SQL literal that stores as binding it would, or None."""
    if value is None:
        return "NULL"
    if type(value) is int:
        return str(value)
    if type(value) is str and "\x00" not in value:
        return "'" + value.replace("'", "''") + "'"
    return None


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
    create_url_indexes(db.conn)


def create_url_indexes(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS urls_loc ON urls (loc)")
    conn.execute(
        "CREATE INDEX IF NOT EXISTS urls_shard ON urls (shard, id) WHERE shard IS NOT NULL"
    )


def drop_loc_index(conn: sqlite3.Connection) -> None:
    """Drop the index of URLs by loc, for an empty ledger's bulk load."""
    # urls_shard stays: a bulk load inserts in (shard, id) order, which only appends to
    # it, for less than building it again afterwards costs.
    conn.execute("DROP INDEX IF EXISTS urls_loc")


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


def _migrate_v6(db: Database) -> None:
    # URL lists read by content-defined chunks: each list's chunks in file order, the URLs
    # each chunk's bytes list (content-addressed: an unchanged chunk keeps its row), and
    # the URLs listed in more than one chunk (a re-read touching those reads in full).
    db.conn.execute(
        "CREATE TABLE list_chunks (source_id INTEGER NOT NULL, pos INTEGER NOT NULL, "
        "digest BLOB NOT NULL, first_line INTEGER NOT NULL, rejects INTEGER NOT NULL, "
        "PRIMARY KEY (source_id, pos)) WITHOUT ROWID"
    )
    db.conn.execute(
        "CREATE TABLE list_chunk_urls (source_id INTEGER NOT NULL, digest BLOB NOT NULL, "
        "ids BLOB NOT NULL, PRIMARY KEY (source_id, digest)) WITHOUT ROWID"
    )
    # Asked after every build, and of every shard rendered: kept small by holding only the
    # rows they are about.
    db.conn.execute("CREATE INDEX urls_extra ON urls (shard) WHERE extra IS NOT NULL")
    db.conn.execute("CREATE INDEX urls_seeded ON urls (source_id) WHERE status = 'seeded'")
    db.conn.execute("CREATE INDEX urls_excluded ON urls (source_id) WHERE status = 'excluded'")
    db.conn.execute(
        "CREATE TABLE list_repeats (source_id INTEGER NOT NULL, url_id INTEGER NOT NULL, "
        "PRIMARY KEY (source_id, url_id)) WITHOUT ROWID"
    )


def _migrate_v7(db: Database) -> None:
    # One URL's changes (its history on the status page, `explain`, `forget`) without
    # reading the whole journal, which holds a row per URL of the first build and grows.
    db.conn.execute("CREATE INDEX IF NOT EXISTS journal_url ON journal (url_id)")


# Append only: a released migration never changes; the list index + 1 is the version.
MIGRATIONS: list[Callable[[Database], None]] = [
    _migrate_v1,
    _migrate_v2,
    _migrate_v3,
    _migrate_v4,
    _migrate_v5,
    _migrate_v6,
    _migrate_v7,
]


def migrate(conn: sqlite3.Connection, path: Path) -> None:
    """Bring the ledger open on `conn` to the current schema; raises LedgerError when it
    is newer than this sitemapd understands."""
    (version,) = conn.execute("PRAGMA user_version").fetchone()
    if version > len(MIGRATIONS):
        raise LedgerError(
            f"{path}: ledger schema version {version} is newer than this sitemapd "
            f"understands ({len(MIGRATIONS)}); upgrade sitemapd"
        )
    if version == len(MIGRATIONS):
        return
    # Imported here: a current ledger, the common case, needs none of it.
    from sqlite_utils import Database

    db = Database(conn)
    for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
        conn.execute("BEGIN IMMEDIATE")
        migration(db)
        conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")
