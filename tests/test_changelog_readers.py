"""Change-log readers against real databases: a throwaway PostgreSQL, SQLite, SQLAlchemy."""

from __future__ import annotations

import os
import re
import resource
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pg import PASSWORD, Postgres, free_port

from sitemapd.changelog import ChangelogSpec, ChangeRow, Reader, open_reader
from sitemapd.changelog.ddl import ddl
from sitemapd.changelog.pgclient import readable
from sitemapd.config.changelog import Shape
from sitemapd.config.urltemplate import template_fields
from sitemapd.errors import ConfigError, SourceError

ARTICLES_PG = (
    "CREATE TABLE articles (id serial PRIMARY KEY, slug text NOT NULL, title text,"
    " published_at timestamptz)"
)
ARTICLES_SQLITE = (
    "CREATE TABLE articles (id INTEGER PRIMARY KEY, slug TEXT NOT NULL, title TEXT,"
    " published_at TEXT)"
)


def drain(
    reader: Reader, cursor: str | None, limit: int = 1000
) -> tuple[list[ChangeRow], str | None]:
    """Return every row after `cursor`, read `limit` at a time, and the final cursor."""
    rows: list[ChangeRow] = []
    while True:
        batch, cursor = reader.read(cursor, limit)
        if not batch:
            return rows, cursor
        rows += batch


@pytest.fixture
def pg_dsn(postgres: Postgres, request: pytest.FixtureRequest) -> str:
    """Return the URL of a fresh database holding `articles` and the recommended DDL."""
    name = "t_" + re.sub(r"\W+", "_", request.node.name).lower()[:40]
    dsn = postgres.create_database(name)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(ARTICLES_PG)
        conn.execute(ddl("postgres").encode())
    return dsn


@pytest.fixture
def reader_of() -> Iterator[list[Reader]]:
    """Collect readers a test opens and close them afterwards."""
    readers: list[Reader] = []
    yield readers
    for reader in readers:
        reader.close()


def opened(readers: list[Reader], spec: ChangelogSpec) -> Reader:
    """Return open_reader(spec), closed after the test."""
    reader = open_reader(spec)
    readers.append(reader)
    return reader


def insert_pg(conn: psycopg.Connection[tuple[object, ...]], *urls: str) -> None:
    """Insert change rows for `urls` on `conn` (in its current transaction)."""
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO sitemap_changes (url) VALUES (%s)", [(u,) for u in urls])


# --- PostgreSQL ---------------------------------------------------------------------------


def test_pg_late_commit_of_a_lower_id_is_not_lost(pg_dsn: str, reader_of: list[Reader]) -> None:
    reader = opened(reader_of, ChangelogSpec(pg_dsn))
    with psycopg.connect(pg_dsn, autocommit=True) as setup:
        insert_pg(setup, "/before")
    rows, cursor = reader.read(None, 100)
    assert [row.url for row in rows] == ["/before"]

    with psycopg.connect(pg_dsn) as t1, psycopg.connect(pg_dsn) as t2:
        insert_pg(t1, "/first-allocated")  # smaller id and xid, commits last
        insert_pg(t2, "/second")
        t2.commit()
        # An `id > last` reader would return /second now and never see /first-allocated.
        assert reader.read(cursor, 100) == ([], cursor)
        t1.commit()
    rows, cursor = reader.read(cursor, 100)
    assert sorted(row.url for row in rows) == ["/first-allocated", "/second"]
    assert reader.read(cursor, 100) == ([], cursor)
    with psycopg.connect(pg_dsn) as check:
        ids = check.execute("SELECT url, id FROM sitemap_changes ORDER BY id").fetchall()
    assert ids == [("/before", 1), ("/first-allocated", 2), ("/second", 3)]


def test_pg_generic_reader_finds_a_late_row_in_its_overlap_window(
    pg_dsn: str, reader_of: list[Reader]
) -> None:
    dsn = pg_dsn.replace("postgresql://", "postgresql+psycopg://")
    reader = opened(reader_of, ChangelogSpec(dsn))
    with psycopg.connect(pg_dsn) as t1, psycopg.connect(pg_dsn) as t2:
        insert_pg(t1, "/late")
        insert_pg(t2, "/early", "/early-2")
        t2.commit()
        rows, cursor = reader.read(None, 100)
        assert [row.url for row in rows] == ["/early", "/early-2"]
        t1.commit()
    rows, cursor = reader.read(cursor, 100)
    assert [row.url for row in rows] == ["/late"]
    assert reader.read(cursor, 100) == ([], cursor)


def test_pg_outage_mid_stream_loses_and_repeats_nothing(
    postgres: Postgres, pg_dsn: str, reader_of: list[Reader]
) -> None:
    reader = opened(reader_of, ChangelogSpec(pg_dsn))
    with psycopg.connect(pg_dsn, autocommit=True) as setup:
        insert_pg(setup, *(f"/a{i}" for i in range(30)))
    seen: list[str] = []
    cursor = None
    for _ in range(2):
        rows, cursor = reader.read(cursor, 10)
        seen += [row.url for row in rows]
    postgres.stop()
    try:
        with pytest.raises(SourceError) as raised:
            reader.read(cursor, 10)
        assert PASSWORD not in str(raised.value)
        assert "\n" not in str(raised.value)
        assert reader.backlog(cursor) is None
    finally:
        postgres.start()
    with psycopg.connect(pg_dsn, autocommit=True) as setup:
        insert_pg(setup, *(f"/b{i}" for i in range(10)))
    rows, cursor = drain(reader, cursor, 10)
    seen += [row.url for row in rows]
    assert seen == [f"/a{i}" for i in range(30)] + [f"/b{i}" for i in range(10)]


def test_pg_wait_wakes_on_notify_and_times_out_without(
    pg_dsn: str, reader_of: list[Reader]
) -> None:
    reader = opened(reader_of, ChangelogSpec(pg_dsn))
    assert reader.wait(0.1) is True  # just started listening: read once more
    assert reader.read(None, 10) == ([], None)
    started = time.monotonic()
    assert reader.wait(0.3) is False
    assert 0.25 < time.monotonic() - started < 2

    def publish() -> None:
        with psycopg.connect(pg_dsn, autocommit=True) as cms:
            cms.execute("INSERT INTO articles (slug) VALUES ('woken')")

    threading.Timer(0.2, publish).start()
    started = time.monotonic()
    assert reader.wait(10) is True
    assert time.monotonic() - started < 2
    rows, _ = reader.read(None, 10)
    assert [row.url for row in rows] == ["/news/woken"]


def test_pg_wait_reconnects_after_a_restart(
    postgres: Postgres, pg_dsn: str, reader_of: list[Reader]
) -> None:
    reader = opened(reader_of, ChangelogSpec(pg_dsn))
    assert reader.wait(0.1) is True
    postgres.stop()
    try:
        assert reader.wait(5) is True  # the listener broke: changes may have been missed
        started = time.monotonic()
        assert reader.wait(0.3) is False  # down: waits out the timeout rather than spin
        assert time.monotonic() - started >= 0.25
    finally:
        postgres.start()
    assert reader.wait(5) is True
    with psycopg.connect(pg_dsn, autocommit=True) as cms:
        cms.execute("INSERT INTO articles (slug) VALUES ('after')")
    assert reader.wait(5) is True


MAPPED_PG = """
CREATE TABLE changes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    txid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    section text, slug text, op text, gone boolean NOT NULL DEFAULT false,
    changed_at timestamptz, digest bytea, title text, published timestamptz,
    language text, seen_at timestamp
)
"""


def test_pg_row_mapping(postgres: Postgres, reader_of: list[Reader]) -> None:
    dsn = postgres.create_database("t_mapping")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(MAPPED_PG)
        conn.execute(
            "INSERT INTO changes (section, slug, op, gone, changed_at, digest, title,"
            " published, language, seen_at) VALUES"
            " ('world', 'a', 'upsert', false, '2024-03-01 12:00:00+02', '\\xdead', 'A',"
            "  '2024-03-01 09:30:00-05', NULL, '2024-03-01 10:00:00'),"
            " ('world', 'b', 'DELETE', false, NULL, NULL, NULL, NULL, 'en', NULL),"
            " ('world', 'c', 'insert', true, NULL, NULL, NULL, NULL, NULL, NULL),"
            " (NULL, 'd', 'update', false, NULL, NULL, NULL, NULL, NULL, NULL),"
            " ('world', 'e', 'remove', false, NULL, NULL, NULL, NULL, NULL, NULL),"
            " ('world', 'f', 'upsert', false, 'infinity', NULL, NULL, 'infinity', NULL, NULL),"
            " ('world', 'g', 'delete', false, '-infinity', NULL, NULL, NULL, NULL, NULL)"
        )
    # A session time zone far from UTC: timestamptz values must still come out in UTC.
    spec = ChangelogSpec(
        dsn + "?options=-c%20TimeZone%3DAsia/Tokyo",
        table="changes",
        url_column=None,
        url_template="/news/{section}/{slug}",
        deleted_column="gone",
        hash_column="digest",
        meta_columns=(
            ("title", "title"),
            ("published", "published"),
            ("language", "language"),
            ("seen", "seen_at"),
        ),
    )
    rows, _ = opened(reader_of, spec).read(None, 10)
    assert rows == [
        ChangeRow(
            "/news/world/a",
            False,
            "2024-03-01T10:00:00+00:00",
            "dead",
            {
                "title": "A",
                "published": "2024-03-01T14:30:00+00:00",
                "seen": "2024-03-01T10:00:00+00:00",
            },
            row_id="1",
        ),
        ChangeRow("/news/world/b", True, None, None, {"language": "en"}, row_id="2"),
        ChangeRow("/news/world/c", True, None, None, {}, row_id="3"),
        ChangeRow(
            "", False, None, None, {}, "no URL: url_template needs section, which is NULL", "4"
        ),
        ChangeRow(
            "/news/world/e",
            False,
            None,
            None,
            {},
            "op 'remove' is neither upsert (insert, update) nor delete",
            "5",
        ),
        # 'infinity' fits no Python datetime: this row is refused, not the whole read.
        ChangeRow(
            "/news/world/f", False, None, None, {}, "changed_at: 'infinity' is not a time", "6"
        ),
        ChangeRow("/news/world/g", True, None, None, {}, row_id="7"),
    ]


def test_pg_time_python_cannot_hold_in_another_column_comes_as_its_text(
    postgres: Postgres, reader_of: list[Reader]
) -> None:
    """A time column that is neither changed_at nor a publication time keeps its value
    as its text where Python has no datetime for it; the read goes on."""
    dsn = postgres.create_database("t_far_times")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(MAPPED_PG)
        conn.execute(
            "INSERT INTO changes (section, slug, op, changed_at, seen_at) VALUES"
            " ('w', 'a', 'upsert', '2024-03-01 12:00:00+00', 'infinity'),"
            " ('w', 'b', 'upsert', '2024-03-01 12:00:00+00', '10000-01-01 00:00:00'),"
            " ('w', 'c', 'upsert', '2024-03-01 12:00:00+00', '2024-03-01 10:00:00')"
        )
    spec = ChangelogSpec(
        dsn,
        table="changes",
        url_column=None,
        url_template="/{section}/{slug}",
        meta_columns=(("seen", "seen_at"),),
    )
    rows, _ = opened(reader_of, spec).read(None, 10)
    assert [(row.url, row.meta, row.problem) for row in rows] == [
        ("/w/a", {"seen": "infinity"}, None),
        ("/w/b", {"seen": "10000-01-01 00:00:00"}, None),
        ("/w/c", {"seen": "2024-03-01T10:00:00+00:00"}, None),
    ]


def test_pg_custom_query(pg_dsn: str, reader_of: list[Reader]) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as cms:
        cms.execute("INSERT INTO articles (slug, title) VALUES ('q1', '100% true'), ('q2', 'x')")
    query = (
        "SELECT c.id, c.txid, c.op, c.changed_at, a.title FROM sitemap_changes c"
        " JOIN articles a ON c.url = '/news/' || a.slug WHERE a.title LIKE '%\\%%'"
    )
    spec = ChangelogSpec(
        pg_dsn,
        query=query,
        url_column=None,
        url_template="/t/{title}",
        meta_columns=(("title", "title"),),
    )
    rows, cursor = opened(reader_of, spec).read(None, 10)
    assert [(row.url, row.meta) for row in rows] == [("/t/100% true", {"title": "100% true"})]
    assert cursor is not None
    assert re.fullmatch(r"\d+:1", cursor)


# --- SQLite and SQLAlchemy over SQLite -----------------------------------------------------


@pytest.fixture
def sqlite_db(tmp_path: Path) -> Path:
    """Return an SQLite database holding `articles` and the recommended DDL."""
    path = tmp_path / "cms.db"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(ARTICLES_SQLITE)
        conn.executescript(ddl("sqlite"))
    conn.close()
    return path


@pytest.fixture(params=["sqlite", "sqlite+pysqlite"])
def scheme(request: pytest.FixtureRequest) -> str:
    """The stdlib SQLite reader and the SQLAlchemy one over the same database."""
    return str(request.param)


def test_pg_percent_signs_stay_literal_in_every_query(pg_dsn: str, reader_of: list[Reader]) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as cms:
        cms.execute("INSERT INTO articles (slug, title) VALUES ('p1', '50% off'), ('p2', 'x')")
    spec = ChangelogSpec(
        pg_dsn, query="SELECT * FROM sitemap_changes WHERE url LIKE '/news/p%' AND 7 % 3 = 1"
    )
    reader = opened(reader_of, spec)
    assert reader.backlog(None) == 2
    rows, cursor = reader.read(None, 10)
    assert [row.url for row in rows] == ["/news/p1", "/news/p2"]
    assert reader.backlog(cursor) == 0
    live = "SELECT format('/news/%s', slug) FROM articles WHERE title LIKE '%\\%%' ORDER BY 1"
    assert list(reader.live_urls(live)) == ["/news/p1"]


def test_sqlite_ddl_triggers_fill_the_change_table(
    sqlite_db: Path, scheme: str, reader_of: list[Reader]
) -> None:
    reader = opened(reader_of, ChangelogSpec(f"{scheme}:///{sqlite_db}"))
    with sqlite3.connect(sqlite_db) as cms:
        cms.execute("INSERT INTO articles (slug) VALUES ('one'), ('two')")
    rows, cursor = reader.read(None, 10)
    with sqlite3.connect(sqlite_db) as cms:
        cms.execute("UPDATE articles SET slug = 'uno' WHERE slug = 'one'")
        cms.execute("UPDATE articles SET title = 'Two' WHERE slug = 'two'")
        cms.execute("DELETE FROM articles WHERE slug = 'uno'")
    more, cursor = reader.read(cursor, 10)
    assert [(row.url, row.deleted) for row in [*rows, *more]] == [
        ("/news/one", False),
        ("/news/two", False),
        ("/news/one", True),
        ("/news/uno", False),
        ("/news/two", False),
        ("/news/uno", True),
    ]
    assert all(re.fullmatch(r"\d{4}-.*T.*\+00:00", row.changed_at or "") for row in rows)
    assert reader.read(cursor, 10) == ([], cursor)
    assert reader.backlog(cursor) == 0
    assert reader.backlog(None) == 6
    assert reader.wait(5) is False
    with pytest.raises(SourceError, match="bad cursor"):
        reader.read("not-a-cursor", 10)


def test_sqlite_row_mapping(tmp_path: Path, scheme: str, reader_of: list[Reader]) -> None:
    path = tmp_path / "m.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE changes (id INTEGER PRIMARY KEY, slug TEXT, op TEXT, removed,"
            " changed_at, digest BLOB, title TEXT, published)"
        )
        conn.executemany(
            "INSERT INTO changes VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (1, "a", "upsert", 0, "2024-03-01 12:00:00", b"\x01\x02", "A", "2024-03-01"),
                (2, "b", "Delete", None, "2024-03-01T12:00:00+02:00", "h2", None, None),
                (3, "c", None, "false", 1709294400, None, None, None),
                (4, "d", "update", "yes", None, None, "D", None),
                (5, None, "upsert", 0, "not a time", None, None, None),
                (6, "f", "upsert", 0, 1709294400000, None, None, "yesterday"),
                (7, "g", "upsert", 0, 10**17, None, None, None),
                (8, "h", None, None, None, None, None, None),
            ],
        )
    conn.close()
    spec = ChangelogSpec(
        f"{scheme}:///{path}",
        table="changes",
        url_column=None,
        url_template="https://example.com/{id}/{slug}",
        deleted_column="removed",
        hash_column="digest",
        meta_columns=(("title", "title"), ("published", "published")),
    )
    rows, _ = opened(reader_of, spec).read(None, 10)
    assert rows == [
        ChangeRow(
            "https://example.com/1/a",
            False,
            "2024-03-01T12:00:00+00:00",
            "0102",
            {"title": "A", "published": "2024-03-01T00:00:00+00:00"},
            row_id="1",
        ),
        ChangeRow(
            "https://example.com/2/b", True, "2024-03-01T10:00:00+00:00", "h2", {}, row_id="2"
        ),
        ChangeRow(
            "https://example.com/3/c", False, "2024-03-01T12:00:00+00:00", None, {}, row_id="3"
        ),
        ChangeRow("https://example.com/4/d", True, None, None, {"title": "D"}, row_id="4"),
        ChangeRow("", False, None, None, {}, "no URL: url_template needs slug, which is NULL", "5"),
        # Milliseconds and nanoseconds are not epoch seconds: refused, not read as year 55840.
        ChangeRow(
            "https://example.com/6/f",
            False,
            None,
            None,
            {},
            "changed_at: 1709294400000 is not a time in epoch seconds",
            "6",
        ),
        ChangeRow(
            "https://example.com/7/g",
            False,
            None,
            None,
            {},
            "changed_at: 100000000000000000 is not a time in epoch seconds",
            "7",
        ),
        # No op, but a deleted flag to go by.
        ChangeRow("https://example.com/8/h", False, None, None, {}, row_id="8"),
    ]


def test_sqlite_custom_query(sqlite_db: Path, scheme: str, reader_of: list[Reader]) -> None:
    with sqlite3.connect(sqlite_db) as cms:
        cms.execute("INSERT INTO articles (slug, title) VALUES ('x', 'X'), ('y', 'Y')")
    query = (
        "SELECT c.id AS id, c.url AS url, c.op AS op, c.changed_at AS changed_at,"
        " a.title AS title FROM sitemap_changes c JOIN articles a ON c.url = '/news/' || a.slug"
        " WHERE a.slug = 'y'"
    )
    spec = ChangelogSpec(f"{scheme}:///{sqlite_db}", query=query, meta_columns=(("t", "title"),))
    rows, _ = opened(reader_of, spec).read(None, 10)
    assert [(row.url, row.meta) for row in rows] == [("/news/y", {"t": "Y"})]


def test_generic_gaps_are_read_again_within_the_window(
    tmp_path: Path, reader_of: list[Reader]
) -> None:
    path = tmp_path / "g.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE sitemap_changes (id INTEGER PRIMARY KEY, url TEXT, op TEXT,"
            " changed_at TEXT)"
        )
        conn.executemany(
            "INSERT INTO sitemap_changes (id, url) VALUES (?, ?)",
            [(i, f"/{i}") for i in (1, 2, 4, 5, 20)],
        )
    conn.close()
    reader = opened(reader_of, ChangelogSpec(f"sqlite+pysqlite:///{path}", overlap=10))
    rows, cursor = reader.read(None, 4)
    assert [row.url for row in rows] == ["/1", "/2", "/4", "/5"]
    rows, cursor = reader.read(cursor, 4)
    assert [row.url for row in rows] == ["/20"]
    # Ids 3 and 6-9 fell out of the 10-id window; 11-19 are still awaited.
    assert cursor == '{"id":20,"gaps":[[11,19]]}'
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO sitemap_changes (id, url) VALUES (?, ?)",
            [(3, "/3"), (15, "/15"), (21, "/21")],
        )
    conn.close()
    rows, cursor = reader.read(cursor, 10)
    assert [row.url for row in rows] == ["/15", "/21"]
    assert reader.read(cursor, 10) == ([], cursor)


# --- errors and DDL -------------------------------------------------------------------------


# Values as databases give them: of the usual kinds, or now and then one that is not.
_USUAL = {
    "url": st.sampled_from(["/news/a", " /news/b ", "https://example.com/c", "/d?x=1&y='2'"]),
    "op": st.sampled_from(["upsert", "insert", "update", "delete", " DELETE ", "Deleted"]),
    "gone": st.sampled_from([True, False, 0, 1, "yes", "no", " F ", ""]),
    "changed_at": st.sampled_from(
        ["2024-03-01T12:00:00+02:00", "2024-03-01 10:00:00", None, 1_700_000_000]
    ),
    "text": st.sampled_from([None, "A story", "", b"caf\xc3\xa9", 42, datetime(2024, 3, 1, 9)]),
}
_ODD = {
    "url": st.sampled_from(["", "   ", None, b"/blob", float("nan"), 7]),
    "op": st.sampled_from([None, "x"]),
    "gone": st.sampled_from([None, b"\x01"]),
    "changed_at": st.sampled_from(
        ["soon", -5, 10**15, True, 1.5, datetime(2024, 3, 1), date(2024, 3, 1)]
    ),
    "text": st.sampled_from(["2024-13-01"]),
}
_COLUMNS = ("url", "op", "gone", "changed_at", "digest", "title", "published")
_SHAPES = [
    ChangelogSpec("sqlite:///x.db"),
    ChangelogSpec(
        "sqlite:///x.db",
        op_column=None,
        deleted_column="gone",
        hash_column="digest",
        meta_columns=(("title", "title"), ("published", "published"), ("language", "title")),
    ),
    ChangelogSpec(
        "sqlite:///x.db", deleted_column="gone", meta_columns=(("news_title", "published"),)
    ),
]


def _value(column: str, odd: bool) -> st.SearchStrategy[object]:
    kind = column if column in _USUAL else "text"
    return st.one_of(_USUAL[kind], _ODD[kind]) if odd else _USUAL[kind]


@given(st.sampled_from(_SHAPES), st.booleans(), st.data())
def test_rows_of_a_read_are_each_row_as_mapped_alone(
    spec: ChangelogSpec, odd: bool, data: st.DataObject
) -> None:
    """A read mapped a column at a time gives what mapping each row alone gives."""
    shape = Shape(spec, (spec.id_column,))
    rows = data.draw(st.lists(st.fixed_dictionaries({c: _value(c, odd) for c in _COLUMNS})))
    fetched = [
        tuple(n if column == "id" else row[column] for column in shape.columns)
        for n, row in enumerate(rows, 1)
    ]
    assert shape.rows(fetched) == [shape.row(values) for values in fetched]


def test_open_reader_errors(tmp_path: Path, reader_of: list[Reader]) -> None:
    with pytest.raises(SourceError, match="unknown kind of database") as raised:
        open_reader(ChangelogSpec("foo://user:hunter2@host/db"))
    assert "hunter2" not in str(raised.value)
    with pytest.raises(SourceError, match="not a database URL"):
        open_reader(ChangelogSpec("/var/lib/cms.db"))
    with pytest.raises(SourceError, match=r"password=\*\*\*") as raised:
        open_reader(ChangelogSpec("host=db password=hunter22"))
    assert "hunter22" not in str(raised.value)
    with pytest.raises(ConfigError, match="url_column or url_template"):
        open_reader(ChangelogSpec("sqlite:///x.db", url_column=None))
    missing = opened(reader_of, ChangelogSpec(f"sqlite:///{tmp_path}/missing.db"))
    with pytest.raises(SourceError, match=r"missing\.db"):
        missing.read(None, 10)
    assert missing.backlog(None) is None
    assert not (tmp_path / "missing.db").exists()


def test_unreachable_postgres_names_the_dsn_without_its_password(
    reader_of: list[Reader],
) -> None:
    dsn = f"postgresql://cms:{PASSWORD}@127.0.0.1:{free_port()}/news?password={PASSWORD}"
    reader = opened(reader_of, ChangelogSpec(dsn))
    with pytest.raises(SourceError) as raised:
        reader.read(None, 10)
    message = str(raised.value)
    assert PASSWORD not in message
    assert "cms:***@127.0.0.1" in message
    assert "\n" not in message
    started = time.monotonic()
    assert reader.wait(0.2) is False
    assert time.monotonic() - started >= 0.15
    assert reader.backlog(None) is None
    with pytest.raises(SourceError) as raised:
        opened(reader_of, ChangelogSpec(dsn.replace("postgresql:", "postgresql+psycopg:"))).read(
            None, 10
        )
    assert PASSWORD not in str(raised.value)


def test_pg_ddl_trigger_fills_the_change_table(pg_dsn: str, reader_of: list[Reader]) -> None:
    reader = opened(reader_of, ChangelogSpec(pg_dsn))
    with psycopg.connect(pg_dsn, autocommit=True) as cms:
        cms.execute("INSERT INTO articles (slug) VALUES ('one'), ('two')")
        cms.execute("UPDATE articles SET slug = 'uno' WHERE slug = 'one'")
        cms.execute("UPDATE articles SET title = 'Two' WHERE slug = 'two'")
        cms.execute("DELETE FROM articles WHERE slug = 'uno'")
        cms.execute(ddl("postgres").encode())  # runs again without harm
    rows, cursor = reader.read(None, 100)
    assert [(row.url, row.deleted) for row in rows] == [
        ("/news/one", False),
        ("/news/two", False),
        ("/news/one", True),
        ("/news/uno", False),
        ("/news/two", False),
        ("/news/uno", True),
    ]
    assert reader.backlog(None) == 6
    assert reader.backlog(cursor) == 0


def test_ddl_rejects_what_it_cannot_print() -> None:
    with pytest.raises(ConfigError):
        ddl("oracle")
    with pytest.raises(ConfigError):
        ddl("sqlite", table="changes; DROP TABLE articles")
    with pytest.raises(ConfigError):
        ddl("mysql", table="changes`; DROP TABLE articles")
    assert "pg_notify('cms_news', '')" in ddl("postgres", "news_changes", "cms_news")


# --- throughput -----------------------------------------------------------------------------

ROWS = 100_000


def timed_drain(reader: Reader, label: str) -> list[ChangeRow]:
    """Drain `reader` 10,000 rows at a time; print the rate (`make bench` measures it)."""
    started = time.perf_counter()
    rows, _ = drain(reader, None, 10_000)
    rate = len(rows) / (time.perf_counter() - started)
    print(f"{label}: {len(rows)} rows at {rate:,.0f} rows/s")
    return rows


@pytest.mark.slow
def test_pg_drains_100k_rows(postgres: Postgres, reader_of: list[Reader]) -> None:
    dsn = postgres.create_database("t_bulk")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(ddl("postgres").split("-- TEMPLATE")[0].encode())
        conn.execute(
            "INSERT INTO sitemap_changes (url) SELECT '/p/' || i FROM generate_series(1, %s) i",
            (ROWS,),
        )
    rows = timed_drain(opened(reader_of, ChangelogSpec(dsn)), "postgres")
    assert [row.url for row in rows] == [f"/p/{i}" for i in range(1, ROWS + 1)]


@pytest.mark.slow
def test_sqlite_drains_100k_rows(tmp_path: Path, scheme: str, reader_of: list[Reader]) -> None:
    path = tmp_path / "bulk.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(ddl("sqlite").split("-- TEMPLATE")[0])
        conn.executemany(
            "INSERT INTO sitemap_changes (url) VALUES (?)", ((f"/p/{i}",) for i in range(ROWS))
        )
    conn.close()
    rows = timed_drain(opened(reader_of, ChangelogSpec(f"{scheme}:///{path}")), scheme)
    assert [row.url for row in rows] == [f"/p/{i}" for i in range(ROWS)]


def test_a_template_that_does_not_fit_a_row_refuses_that_row_alone() -> None:
    """An index past a value's end or a nested format field: the row is refused with the
    reason, the rows beside it map."""
    assert template_fields("/{slug:>{width}}/{slug[0]}") == ("slug", "width")
    with pytest.raises(ConfigError, match="needs named fields"):
        template_fields("/{slug:{}}")
    spec = ChangelogSpec("sqlite:///x.db", url_column=None, url_template="/{slug[0]}/{slug}")
    shape = Shape(spec, (spec.id_column,))
    fetched = [
        tuple(
            {"slug": slug, "id": n, "op": "upsert", "changed_at": "2024-03-01T10:00Z"}.get(column)
            for column in shape.columns
        )
        for n, slug in enumerate(["abc", ""], 1)
    ]
    good, bad = shape.rows(fetched)
    assert (good.url, good.problem) == ("/a/abc", None)
    assert bad.url == ""
    assert "does not fit this row" in (bad.problem or "")


def test_a_connection_past_descriptor_1023_is_waited_on() -> None:
    """A daemon raises its open-files limit and holds thousands of files: the wait for a
    PostgreSQL notification or stream message must work on any descriptor number (select
    refuses those past 1023)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"open-files hard limit {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2048), hard))
    ours, theirs = socket.socketpair()
    high = os.dup2(ours.fileno(), 1500)

    class Connection:
        def fileno(self) -> int:
            return high

    try:
        assert not readable(Connection(), 0.05)
        theirs.send(b"N")
        assert readable(Connection(), 5)
    finally:
        os.close(high)
        ours.close()
        theirs.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
