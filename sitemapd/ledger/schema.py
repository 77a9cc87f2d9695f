"""The ledger's schema: its tables, their migrations, and the statements of `urls` rows.

A released migration never changes; the list index + 1 is the schema version, stored in
`PRAGMA user_version`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from functools import lru_cache
from operator import itemgetter, ne
from pathlib import Path
from typing import Any

from sitemapd.errors import LedgerError
from sitemapd.ledger.bulk import insert_values
from sitemapd.ledger.urlrow import COLUMNS, UrlRow, bare_values, inserted_values

LIVE, EXCLUDED, GONE, SEEDED = "live", "excluded", "gone", "seeded"


def source_time(row: str = "urls") -> str:
    """Return SQL reading `{row}.source_time` (`row` "": unqualified): a first load's
    listed rows hold '' there where it is their lastmod (25 bytes less a row, version
    10), and every read of the column reads through this."""
    at = f"{row}." if row else ""
    return f"(CASE {at}source_time WHEN '' THEN {at}lastmod ELSE {at}source_time END)"


# The statements of whole rows, from the one list of columns above.
URLCOLUMNS = ", ".join(COLUMNS)
# Whole rows as read: a first load's stand-in for `source_time` read through.
URL_SELECT = ", ".join(
    f"{source_time()} AS source_time" if name == "source_time" else f"urls.{name}"
    for name in COLUMNS
)
INSERT_URL = f"INSERT INTO urls ({URLCOLUMNS}) VALUES (NULL{', ?' * (len(COLUMNS) - 1)})"
# The columns `UrlRow.update_params` gives, `id` last.
_UPDATED = COLUMNS[2:]
# Fewer rows than this are inserted with every value bound.
_SHARED_FROM = 16


def insert_rows(conn: sqlite3.Connection, rows: list[UrlRow]) -> range:
    """Insert `rows` (ids not yet given), in order; return the ids they were given.

    SQLite gives a row inserted without an id one more than the largest id in the table,
    so `rows` take the ids after the largest before them, in order; checked afterwards
    (it picks ids at random only once the largest possible id is taken: raises
    LedgerError then).
    """
    if not rows:  # most reads of a running site insert nothing: no query for them
        return range(0)
    (last,) = conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()
    _insert(conn, rows)
    given = range(last + 1, last + 1 + len(rows))
    if conn.execute("SELECT max(id) FROM urls").fetchone() != (given[-1],):
        raise LedgerError("the ledger's URL ids are exhausted; rebuild it from its sources")
    return given


def _insert(conn: sqlite3.Connection, rows: list[UrlRow]) -> None:
    """Insert `rows`, in order.

    A value every row has (a status, a source, the run's time, a fact no page states)
    is written into the statement rather than bound for each row: binding a value costs
    more than SQLite's whole work on it, and a bulk insert shares most of its columns.
    """
    params = [bare_values(row) if row.bare else inserted_values(row) for row in rows]
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
        conn, f"INSERT OR FAIL INTO urls ({URLCOLUMNS})", f"(NULL, {', '.join(values)})", bound
    )


def update_rows(conn: sqlite3.Connection, rows: Iterable[tuple[Any, ...]]) -> None:
    """Write the columns that changed in each row: `rows` are pairs of its
    `update_params()` as read and as it is now.

    An UPDATE maintains every index of a column it sets, changed or not: re-dating a
    million URLs setting every column took 10.1 s, setting the two that changed 2.1 s.
    """
    groups: dict[tuple[bool, ...], list[tuple[Any, ...]]] = {}
    for before, after in rows:
        groups.setdefault(tuple(map(ne, before, after)), []).append(after)
    for changed, params in groups.items():
        if any(changed):
            statement, picked = _update_statement(changed)
            conn.executemany(statement, map(picked, params))


@lru_cache(maxsize=64)
def _update_statement(
    changed: tuple[bool, ...],
) -> tuple[str, Callable[[tuple[Any, ...]], tuple[Any, ...]]]:
    """Return the UPDATE of the columns `changed` flags, and what picks its parameters
    from `update_params()`."""
    names = [name for name, flag in zip(_UPDATED, changed, strict=False) if flag]
    if "lastmod" in names and "source_time" not in names:
        # A first load's '' there reads as the lastmod (`source_time`): written out before
        # the lastmod moves from under it.
        names.append("source_time")
    picked = itemgetter(*(_UPDATED.index(name) for name in names), len(_UPDATED))
    sets = ", ".join(f"{name} = ?" for name in names)
    return f"UPDATE urls SET {sets} WHERE id = ?", picked


def _literal(value: object) -> str | None:
    """Return `value` as an SQL literal that stores as binding it would, or None."""
    if value is None:
        return "NULL"
    if type(value) is int:
        return str(value)
    if type(value) is str and "\x00" not in value:
        return "'" + value.replace("'", "''") + "'"
    return None


def _migrate_v1(conn: sqlite3.Connection) -> None:
    # Statement by statement: executescript would commit the migration's transaction.
    for statement in (
        "CREATE TABLE urls (id INTEGER PRIMARY KEY, loc TEXT NOT NULL, source_id INTEGER, "
        "status TEXT NOT NULL, reason TEXT, page_reason TEXT, content_hash TEXT, "
        "source_time TEXT, lastmod TEXT NOT NULL, first_seen TEXT NOT NULL, "
        "change_count INTEGER NOT NULL, title TEXT, file_key TEXT, shard INTEGER, "
        "entry_bytes INTEGER)",
        "CREATE TABLE sources (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
        "CREATE UNIQUE INDEX idx_sources_name ON sources (name)",
        "CREATE TABLE shards (id INTEGER PRIMARY KEY, url_count INTEGER, bytes INTEGER, "
        "lastmod TEXT, dirty INTEGER)",
        "CREATE TABLE journal (seq INTEGER PRIMARY KEY, url_id INTEGER, kind TEXT, at TEXT)",
        "CREATE TABLE cursors (name TEXT PRIMARY KEY, value TEXT)",
        "CREATE TABLE rejects (source TEXT, item TEXT, reason TEXT, at TEXT, "
        "PRIMARY KEY (source, item))",
        # `sha256` holds the document's digest of whichever kind `core/docdigest.py`
        # tells: its name is the first release's.
        "CREATE TABLE published (name TEXT PRIMARY KEY, sha256 TEXT, bytes INTEGER, at TEXT)",
    ):
        conn.execute(statement)
    create_url_indexes(conn)


def _add_columns(conn: sqlite3.Connection, table: str, **columns: str) -> None:
    for column, kind in columns.items():
        conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


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


def _migrate_v2(conn: sqlite3.Connection) -> None:
    # With the size alone, an edit that keeps a file's size went unnoticed and unrepaired.
    _add_columns(conn, "published", mtime_ns="INTEGER")


def _migrate_v3(conn: sqlite3.Connection) -> None:
    # News, hreflang and image facts; the rendered extra elements count in entry_bytes.
    _add_columns(
        conn,
        "urls",
        published="TEXT",
        language="TEXT",
        news_title="TEXT",
        article="INTEGER",
        alternates="TEXT",
        extra="TEXT",
    )
    conn.execute("CREATE INDEX IF NOT EXISTS urls_published ON urls (published) WHERE article = 1")
    # The last successful fetch of each feed page per crawler (page 1 is the feed itself),
    # and what crawlers got for URLs.
    conn.execute(
        "CREATE TABLE crawls (crawler TEXT, page INTEGER, fetched_at TEXT, "
        "PRIMARY KEY (crawler, page))"
    )
    # Which URLs list which hreflang alternates: a URL that leaves the sitemaps or comes
    # back re-renders the shards of the pages naming it.
    conn.execute(
        "CREATE TABLE alternate_links (href TEXT NOT NULL, url_id INTEGER NOT NULL, "
        "PRIMARY KEY (href, url_id)) WITHOUT ROWID"
    )
    conn.execute("CREATE INDEX alternate_links_url ON alternate_links (url_id)")
    # Feed pages beyond the first: the journal seqs `(low_seq, high_seq]` whose entries
    # each holds, when it was opened and when it last took entries in.
    conn.execute(
        "CREATE TABLE feed_pages (number INTEGER PRIMARY KEY, low_seq INTEGER, "
        "high_seq INTEGER, opened_at TEXT, filled_at TEXT)"
    )
    conn.execute(
        "CREATE TABLE crawl_answers (loc TEXT PRIMARY KEY, status INTEGER, crawler TEXT, at TEXT)"
    )


def _migrate_v4(conn: sqlite3.Connection) -> None:
    # The significant-change fingerprint: the bytes it was taken from, the settings that
    # took it, and whether the page's main content was found.
    _add_columns(conn, "urls", bytes_hash="TEXT", fp_settings="TEXT", fp_fallback="INTEGER")


def _migrate_v5(conn: sqlite3.Connection) -> None:
    # 1 when an article's publication time is the one the page states; otherwise it is
    # provisional (the file's time, or when it was first seen) and a stated one replaces it.
    _add_columns(conn, "urls", published_stated="INTEGER")


def _migrate_v6(conn: sqlite3.Connection) -> None:
    # URL lists read by content-defined chunks: each list's chunks in file order, the URLs
    # each chunk's bytes list (content-addressed: an unchanged chunk keeps its row), and
    # the URLs listed in more than one chunk (a re-read touching those reads in full).
    conn.execute(
        "CREATE TABLE list_chunks (source_id INTEGER NOT NULL, pos INTEGER NOT NULL, "
        "digest BLOB NOT NULL, first_line INTEGER NOT NULL, rejects INTEGER NOT NULL, "
        "PRIMARY KEY (source_id, pos)) WITHOUT ROWID"
    )
    conn.execute(
        "CREATE TABLE list_chunk_urls (source_id INTEGER NOT NULL, digest BLOB NOT NULL, "
        "ids BLOB NOT NULL, PRIMARY KEY (source_id, digest)) WITHOUT ROWID"
    )
    # Asked after every build, and of every shard rendered: kept small by holding only the
    # rows they are about.
    conn.execute("CREATE INDEX urls_extra ON urls (shard) WHERE extra IS NOT NULL")
    conn.execute("CREATE INDEX urls_seeded ON urls (source_id) WHERE status = 'seeded'")
    conn.execute("CREATE INDEX urls_excluded ON urls (source_id) WHERE status = 'excluded'")
    conn.execute(
        "CREATE TABLE list_repeats (source_id INTEGER NOT NULL, url_id INTEGER NOT NULL, "
        "PRIMARY KEY (source_id, url_id)) WITHOUT ROWID"
    )


def _migrate_v7(conn: sqlite3.Connection) -> None:
    # One URL's changes (its history on the status page, `explain`, `forget`) without
    # reading the whole journal, which holds a row per URL of the first build and grows.
    conn.execute("CREATE INDEX IF NOT EXISTS journal_url ON journal (url_id)")


def _migrate_v8(conn: sqlite3.Connection) -> None:
    # Where each chunk of a list ends in the file: a re-read hashes the known chunks in
    # place and cuts only from the first that changed (NULL: recorded before, cut whole).
    _add_columns(conn, "list_chunks", end_byte="INTEGER")


def _migrate_v9(conn: sqlite3.Connection) -> None:
    # A first load journals its URLs as runs of consecutive ids (journal.py), not a row
    # each: entry `seq + id - first_id` is URL `id`'s `new` at `at`.
    conn.execute(
        "CREATE TABLE journal_runs (seq INTEGER PRIMARY KEY, first_id INTEGER NOT NULL, "
        "last_id INTEGER NOT NULL, at TEXT NOT NULL)"
    )
    # Every entry, rows and runs alike, for ad-hoc queries (the daemon's own reads go by
    # seq or by URL, each part by its index: journal.py).
    conn.execute(
        "CREATE VIEW journal_entries AS SELECT seq, url_id, kind, at FROM journal UNION ALL "
        "SELECT r.seq + u.id - r.first_id, u.id, 'new', r.at FROM journal_runs r "
        "JOIN urls u ON u.id BETWEEN r.first_id AND r.last_id"
    )


def _migrate_v10(conn: sqlite3.Connection) -> None:
    # A first load's chunk lists consecutive ids: stored as the range `first_id` and
    # `id_count` (`ids` then empty), not 8 bytes an id. Its rows' `first_seen` is '' (see
    # FIRST_LOAD_SEEN), and so is `source_time` where it is the lastmod (`source_time()`):
    # nothing to change in rows written before.
    _add_columns(conn, "list_chunk_urls", first_id="INTEGER", id_count="INTEGER")


# Append only: a released migration never changes; the list index + 1 is the version.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _migrate_v1,
    _migrate_v2,
    _migrate_v3,
    _migrate_v4,
    _migrate_v5,
    _migrate_v6,
    _migrate_v7,
    _migrate_v8,
    _migrate_v9,
    _migrate_v10,
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
    for number, migration in enumerate(MIGRATIONS[version:], start=version + 1):
        conn.execute("BEGIN IMMEDIATE")
        migration(conn)
        conn.execute(f"PRAGMA user_version = {number}")
        conn.execute("COMMIT")
