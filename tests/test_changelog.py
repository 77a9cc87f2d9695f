"""Change-log sources end to end: `sitemapd run` following a real PostgreSQL (and a
SQLite file) through the DDL `sitemapd changelog-sql` prints, into published sitemaps."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Site, published, run_cli
from daemon_harness import RunningDaemon, http_port, request, start
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pg import Postgres

from sitemapd.core.observation import Changes, Observation
from sitemapd.ledger.ledger import Ledger
from sitemapd.ledger.model import ALLOW_ALL
from sitemapd.ledger.shards import Limits
from sitemapd.publish.robots import rules
from sitemapd.sources.content import ArticleMeta

BASE = "https://example.com/news/"
NOW = "2024-06-01T00:00:00+00:00"


class Database:
    """A CMS database holding `articles` with sitemapd's change table and triggers."""

    def __init__(self, dsn: str, execute: Callable[[str], None]) -> None:
        self.dsn = dsn
        self.execute = execute

    def add(self, *slugs: str) -> None:
        self.execute(
            "INSERT INTO articles (slug, title) VALUES "
            + ", ".join(f"('{slug}', 'Title {slug}')" for slug in slugs)
        )

    def delete(self, slug: str) -> None:
        self.execute(f"DELETE FROM articles WHERE slug = '{slug}'")


def _pg_database(server: Postgres, name: str) -> Database:
    dsn = server.create_database(name)
    with server.connect(name) as conn:
        conn.execute(
            "CREATE TABLE articles (id bigserial PRIMARY KEY, slug text UNIQUE, "
            "title text, published_at timestamptz DEFAULT now())"
        )
        conn.execute(run_cli("changelog-sql", "--postgres").stdout)

    def execute(sql: str) -> None:
        with server.connect(name) as conn:
            conn.execute(sql)

    return Database(dsn, execute)


def _sqlite_database(path: Path) -> Database:
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE articles (id INTEGER PRIMARY KEY, slug TEXT UNIQUE, title TEXT, "
            "published_at TEXT)"
        )
        conn.executescript(run_cli("changelog-sql", "--sqlite").stdout)
    conn.close()

    def execute(sql: str) -> None:
        with sqlite3.connect(path) as conn:
            conn.execute(sql)
        conn.close()

    return Database(f"sqlite:///{path}", execute)


@pytest.fixture(params=["postgresql", "sqlite"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    if request.param == "sqlite":
        yield _sqlite_database(tmp_path / "cms.db")
    else:
        server = request.getfixturevalue("postgres")
        yield _pg_database(server, f"cms_{abs(hash(request.node.name)) % 10**8}")


def changelog_site(tmp_path: Path, dsn: str, options: str = "") -> Site:
    site = Site(tmp_path)
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        "[daemon]\ndebounce = 0.1\n"
        f'[[source]]\ntype = "changelog"\ndsn = "{dsn}"\npoll_interval = 0.5\n{options}\n'
    )
    return site


def locs(*slugs: str) -> set[str]:
    return {BASE + slug for slug in slugs}


def test_rows_reach_the_sitemap_and_deletes_leave_it(tmp_path: Path, database: Database) -> None:
    database.add("a", "b")
    site = changelog_site(tmp_path, database.dsn)
    daemon = start(site)
    try:
        daemon.wait_for_urls(locs("a", "b"))
        database.add("c")
        database.delete("a")
        daemon.wait_for_urls(locs("b", "c"))
    finally:
        assert daemon.stop() == 0
    # A restart applies nothing twice: the cursor in the ledger says where the log was.
    lastmods = published(site.out)
    daemon = start(site)
    try:
        time.sleep(1.5)
        assert published(site.out) == lastmods
    finally:
        daemon.stop()


def test_notify_wakes_the_daemon_before_its_poll(tmp_path: Path, postgres: Postgres) -> None:
    database = _pg_database(postgres, "cms_notify")
    site = changelog_site(tmp_path, database.dsn)
    site.config.write_text(
        site.config.read_text().replace("poll_interval = 0.5", "poll_interval = 600")
    )
    daemon = start(site)
    try:
        started = time.monotonic()
        database.add("fresh")
        daemon.wait_for_urls(locs("fresh"), timeout=10)
        assert time.monotonic() - started < 10  # far below the 600 s poll
    finally:
        daemon.stop()


def test_a_reload_follows_the_new_table_and_channel(tmp_path: Path, postgres: Postgres) -> None:
    database = _pg_database(postgres, "cms_reload")
    database.execute(
        "CREATE TABLE other_changes (id bigserial PRIMARY KEY,"
        " txid xid8 NOT NULL DEFAULT pg_current_xact_id(), url text NOT NULL,"
        " op text NOT NULL DEFAULT 'upsert', changed_at timestamptz NOT NULL DEFAULT now())"
    )
    site = changelog_site(tmp_path, database.dsn)
    config = site.config.read_text().replace("poll_interval = 0.5", "poll_interval = 600")
    site.config.write_text(config)
    daemon = start(site)
    try:
        database.add("old")
        daemon.wait_for_urls(locs("old"), timeout=10)
        site.config.write_text(config + 'table = "other_changes"\nchannel = "other"\n')
        daemon.proc.send_signal(signal.SIGHUP)
        daemon.wait_for_log("reloaded")
        database.add("old-table")  # the old table and channel are not followed any more
        database.execute("INSERT INTO other_changes (url) VALUES ('/news/new-table')")
        database.execute("NOTIFY other")
        daemon.wait_for_urls(locs("old", "new-table"), timeout=10)
        time.sleep(1)
        assert set(published(site.out)) == locs("old", "new-table")
    finally:
        daemon.stop()


def test_rows_held_back_by_an_open_transaction_show_as_lag(
    tmp_path: Path, postgres: Postgres
) -> None:
    database = _pg_database(postgres, "cms_lag")
    site = changelog_site(tmp_path, database.dsn)
    site.config.write_text(
        site.config.read_text().replace(
            "[daemon]\n", '[http]\nlisten = "127.0.0.1:0"\n[daemon]\nmax_lag = 1\n'
        )
    )
    daemon = start(site)
    port = http_port(daemon)
    try:
        database.add("first")
        daemon.wait_for_urls(locs("first"))
        # A transaction left open anywhere in the cluster: rows committed after it began
        # cannot be read yet (they might sort before its own), so they wait.
        with postgres.connect("postgres", autocommit=False) as idle:
            idle.execute("SELECT pg_current_xact_id()")
            database.add("held")
            daemon.wait_until(
                lambda: request(port, "/healthz")[0] == 503, 20, "/healthz reporting the lag"
            )
            body = request(port, "/healthz")[2].decode()
            assert "1 change-log rows waiting since" in body
            metrics = request(port, "/metrics")[2].decode()
            assert 'sitemapd_changelog_backlog{source="changelog:' in metrics
            assert re.search(r"sitemapd_changelog_backlog\{[^}]*\} 1\.0", metrics)
            assert BASE + "held" not in published(site.out)
            (position,) = json.loads(site.cli("status", "--json").stdout)["changelogs"]
            assert (position["waiting"], position["error"]) == (1, None)
            idle.rollback()
        daemon.wait_for_urls(locs("first", "held"))
        daemon.wait_until(lambda: request(port, "/healthz")[0] == 200, 20, "/healthz ok again")
        metrics = request(port, "/metrics")[2].decode()
        assert re.search(
            r"sitemapd_changelog_waiting_since_timestamp_seconds\{[^}]*\} 0\.0", metrics
        )
    finally:
        daemon.stop()


def test_out_of_order_commits_lose_no_row(tmp_path: Path, postgres: Postgres) -> None:
    database = _pg_database(postgres, "cms_order")
    site = changelog_site(tmp_path, database.dsn)
    daemon = start(site)
    try:
        first = postgres.connect("cms_order", autocommit=False)
        first.execute("INSERT INTO articles (slug, title) VALUES ('first-id', 'x')")
        # The row with the lower id is still uncommitted when the next one commits.
        database.add("second-id")
        time.sleep(1.5)  # several polls while the first transaction is open
        assert BASE + "first-id" not in published(site.out)
        first.commit()
        first.close()
        daemon.wait_for_urls(locs("first-id", "second-id"))
    finally:
        daemon.stop()


def test_database_outage_loses_nothing_and_applies_nothing_twice(
    tmp_path: Path, postgres: Postgres
) -> None:
    database = _pg_database(postgres, "cms_outage")
    site = changelog_site(tmp_path, database.dsn, "batch_size = 50")
    daemon = start(site)
    stop = threading.Event()
    added: list[str] = []

    def writer() -> None:
        n = 0
        while not stop.is_set():
            try:
                database.add(f"s{n}")
                added.append(f"s{n}")
            except Exception:
                time.sleep(0.05)  # the database is down: the CMS retries
            n += 1
            time.sleep(0.01)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        daemon.wait_until(lambda: len(published(site.out)) > 20, 30, "first rows")
        postgres.stop("immediate")
        daemon.wait_until(
            lambda: (
                "last read failed" in site.cli("status", "--json", check=False).stdout
                or "cannot read" in daemon.log()
            ),
            30,
            "the outage in the log",
        )
        time.sleep(1)
        postgres.start()
        time.sleep(1)
        stop.set()
        thread.join()
        # A commit whose answer the outage cut off is in the table though the writer saw
        # it fail: the truth is what the table holds.
        with postgres.connect("cms_outage") as conn:
            present = {slug for (slug,) in conn.execute("SELECT slug FROM articles")}
        assert set(added) <= present
        daemon.wait_for_urls(locs(*present), timeout=60)
    finally:
        stop.set()
        thread.join()
        daemon.stop()
        if not (postgres.data / "postmaster.pid").exists():
            postgres.start()
    ledger = sqlite3.connect(site.state / "ledger.sqlite3")
    kinds = dict(
        ledger.execute("SELECT kind, count(*) FROM journal_entries GROUP BY kind").fetchall()
    )
    ledger.close()
    # Each row was applied once: one "new" per article, never an "updated" for a replay.
    assert kinds == {"new": len(present)}


def test_a_backlog_killed_mid_drain_loses_and_repeats_nothing(
    tmp_path: Path, database: Database
) -> None:
    """A backlog into a ledger that has URLs (its new rows inserted a read at a time),
    with the daemon SIGKILLed once some of it is published: after a restart every row
    is published, each applied once."""
    database.add("first")
    site = changelog_site(tmp_path, database.dsn, "batch_size = 50")
    daemon = start(site)
    try:
        daemon.wait_for_urls(locs("first"))
        for part in range(20):
            database.add(*(f"b{part}-{n}" for n in range(100)))
        daemon.wait_until(lambda: len(published(site.out)) > 1, 30, "the first rows")
        daemon.kill()
    finally:
        daemon.stop()
    everything = locs("first", *(f"b{part}-{n}" for part in range(20) for n in range(100)))
    daemon = start(site)
    try:
        daemon.wait_for_urls(everything, timeout=60)
    finally:
        assert daemon.stop() == 0
    ledger = sqlite3.connect(site.state / "ledger.sqlite3")
    kinds = dict(
        ledger.execute("SELECT kind, count(*) FROM journal_entries GROUP BY kind").fetchall()
    )
    ledger.close()
    assert kinds == {"new": len(everything)}


def test_database_down_at_start_keeps_output_and_reports_it(tmp_path: Path) -> None:
    site = changelog_site(tmp_path, "postgresql://nobody@127.0.0.1:9/none")
    daemon = RunningDaemon(site)
    try:
        daemon.wait_ready()
        daemon.wait_for_log("cannot read", 20)
        status = json.loads(site.cli("status", "--json").stdout)
        assert status["urls"]["live"] == 0
        (position,) = status["changelogs"]
        assert position["cursor"] is None
        assert "127.0.0.1" in position["error"]
        assert "CANNOT READ: changelog postgresql://nobody@127.0.0.1:9/none: cannot read" in (
            site.cli("status").stdout
        )
    finally:
        assert daemon.stop() == 0


@pytest.mark.slow
def test_a_backlog_of_100000_changes_drains(tmp_path: Path, database: Database) -> None:
    for start_at in range(0, 100_000, 20_000):
        database.add(*(f"n{n}" for n in range(start_at, start_at + 20_000)))
    site = changelog_site(tmp_path, database.dsn)
    daemon = RunningDaemon(site)
    try:
        daemon.wait_until(lambda: len(published(site.out)) == 100_000, 240, "100,000 URLs")
        assert set(published(site.out)) == locs(*(f"n{n}" for n in range(100_000)))
    finally:
        daemon.stop()


def test_columns_feed_the_news_sitemap_and_feeds(tmp_path: Path) -> None:
    db = tmp_path / "cms.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, section TEXT, "
            "slug TEXT, removed INTEGER, at TEXT, headline TEXT, first_published TEXT)"
        )
        conn.execute(
            "INSERT INTO changes (section, slug, removed, at, headline, first_published) VALUES "
            "('world', 'a', 0, '2026-03-10T10:00:00Z', 'A & B', '2026-03-10T09:00:00Z'), "
            "('world', 'b', 0, '2026-03-10T10:00:00Z', 'Bee', NULL), "
            "('sport', 'c', 0, '2026-03-10T10:30:00Z', 'Cee', '2026-03-10 10:15:00')"
        )
    conn.close()
    site = Site(tmp_path)
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[news]\npublication_name = "Example"\nlanguage = "de"\n'
        '[feed]\ntitle = "Updates"\n'
        f'[[source]]\ntype = "changelog"\ndsn = "sqlite:///{db}"\ntable = "changes"\n'
        "[source.columns]\n"
        'id = "seq"\nurl_template = "/{section}/{slug}"\ndeleted = "removed"\n'
        'changed_at = "at"\ntitle = "headline"\npublished = "first_published"\n'
    )
    import os

    os.environ["SITEMAPD_TEST_NOW"] = "2026-03-10T12:00:00+00:00"
    try:
        site.build()
        urls = published(site.out)
        assert urls == {
            "https://example.com/world/a": "2026-03-10T10:00:00+00:00",
            "https://example.com/world/b": "2026-03-10T10:00:00+00:00",
            "https://example.com/sport/c": "2026-03-10T10:30:00+00:00",
        }
        news = (site.out / "news-sitemap.xml").read_text()
        assert "<news:title>A &amp; B</news:title>" in news
        assert "2026-03-10T10:15:00+00:00" in news
        assert "world/b" not in news  # no publication date: not an article
        assert "<title>A &amp; B</title>" in (site.out / "atom.xml").read_text()
        with sqlite3.connect(db) as conn:
            conn.execute(
                "INSERT INTO changes (section, slug, removed, at) "
                "VALUES ('world', 'a', 1, '2026-03-10T11:00:00Z')"
            )
        conn.close()
        site.build()
        assert set(published(site.out)) == {
            "https://example.com/world/b",
            "https://example.com/sport/c",
        }
        assert "world/a" not in (site.out / "news-sitemap.xml").read_text()
    finally:
        del os.environ["SITEMAPD_TEST_NOW"]


def test_reconcile_query_removes_what_the_log_missed(tmp_path: Path) -> None:
    database = _sqlite_database(tmp_path / "cms.db")
    database.add("a", "b", "c")
    site = changelog_site(
        tmp_path, database.dsn, "reconcile_query = \"SELECT '/news/' || slug FROM articles\""
    )
    site.build()
    assert set(published(site.out)) == locs("a", "b", "c")
    # Deleted behind the log's back (triggers off during a bulk clean-up).
    with sqlite3.connect(tmp_path / "cms.db") as conn:
        conn.execute("DROP TRIGGER articles_sitemap_changes_delete")
        conn.execute("DELETE FROM articles WHERE slug = 'b'")
    conn.close()
    site.build()
    assert set(published(site.out)) == locs("a", "c")


def test_a_first_build_replaying_a_create_and_a_delete_publishes_neither(tmp_path: Path) -> None:
    database = _sqlite_database(tmp_path / "cms.db")
    database.add("hello")
    with sqlite3.connect(tmp_path / "cms.db") as conn:
        conn.execute("UPDATE articles SET slug = 'hello-world' WHERE slug = 'hello'")
    conn.close()
    database.add("kept")
    database.delete("kept")
    database.add("kept")
    site = changelog_site(tmp_path, database.dsn)
    site.build()
    assert set(published(site.out)) == locs("hello-world", "kept")
    report = json.loads(site.cli("status", "--json").stdout)
    assert report["urls"]["live"] == 2


def _loose_changes(path: Path, *rows: tuple[object, ...]) -> None:
    """Append rows to a change table without the constraints changelog-sql prints."""
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS changes (id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT,"
            " op TEXT, changed_at, title TEXT)"
        )
        conn.executemany(
            "INSERT INTO changes (url, op, changed_at, title) VALUES (?, ?, ?, ?)", rows
        )
    conn.close()


def _loose_site(tmp_path: Path, options: str = "", sources: str = "") -> Site:
    return changelog_site(
        tmp_path,
        f"sqlite:///{tmp_path / 'cms.db'}",
        f'table = "changes"\n{options}\n[source.columns]\ntitle = "title"\n{sources}',
    )


def test_rows_without_a_url_an_op_or_a_time_are_skipped_and_counted(tmp_path: Path) -> None:
    _loose_changes(
        tmp_path / "cms.db",
        ("/", "upsert", "2026-01-01T00:00:00Z", "Home"),
        ("/a", "upsert", "2026-01-01T00:00:00Z", "A"),
    )
    site = _loose_site(tmp_path)
    site.build()
    before = published(site.out)
    assert set(before) == {"https://example.com/", "https://example.com/a"}
    _loose_changes(
        tmp_path / "cms.db",
        (None, "delete", "2026-01-02T00:00:00Z", None),  # no URL: not the site root
        ("/a", "remove", "2026-01-02T00:00:00Z", None),  # no such op: not an upsert
        ("/b", "upsert", "yesterday", "B"),  # a lastmod nobody can tell
        ("/c", "upsert", 1767312000000, "C"),  # milliseconds, not seconds
        ("/d", "upsert", "2026-01-02T00:00:00Z", "D"),
    )
    result = site.build()
    assert "0 gone, 4 invalid" in result.stderr
    assert published(site.out) == {**before, "https://example.com/d": "2026-01-02T00:00:00+00:00"}
    report = json.loads(site.cli("status", "--json").stdout)
    reasons = {item["item"]: item["reason"] for item in report["invalid"]["items"]}
    assert reasons == {
        "row 3": "no URL: the url column is empty",
        "row 4": "op 'remove' is neither upsert (insert, update) nor delete",
        "row 5": "changed_at: 'yesterday' is not a time",
        "row 6": "changed_at: 1767312000000 is not a time in epoch seconds",
    }


def test_hostile_urls_and_times_are_skipped_and_counted(tmp_path: Path) -> None:
    when = "2026-01-02T00:00:00Z"
    _loose_changes(
        tmp_path / "cms.db",
        ("/news/../../etc/passwd", "upsert", when, "P"),  # row 1
        ("news/../../etc/shadow", "upsert", when, "S"),
        ("/news/%2e%2e/admin", "upsert", when, "A"),
        ("https://example.com/news/../admin", "upsert", when, "H"),
        (b"/blob", "upsert", when, "B"),  # row 5: a BLOB, whose repr is no URL
        ("/nan", "upsert", "NaN", "N"),
        ("/news/ok", "upsert", when, "OK"),
    )
    site = _loose_site(tmp_path)
    result = site.build()
    assert "1 new, 0 updated, 0 gone, 6 invalid" in result.stdout
    assert set(published(site.out)) == {"https://example.com/news/ok"}
    everything = b"".join(path.read_bytes() for path in site.out.iterdir() if path.is_file())
    for word in (b"passwd", b"shadow", b"admin", b"blob", b"nan"):
        assert word not in everything
    report = json.loads(site.cli("status", "--json").stdout)
    reasons = {item["item"]: item["reason"] for item in report["invalid"]["items"]}
    assert report["invalid"]["count"] == 6
    for item in (
        "/news/../../etc/passwd",
        "news/../../etc/shadow",
        "/news/%2e%2e/admin",
        "https://example.com/news/../admin",
    ):
        assert reasons[item] == "URL path has a '.' or '..' segment"
    assert reasons["row 5"] == "no URL: the url column holds a BLOB"
    assert reasons["row 6"] == "changed_at: 'NaN' is not a time"


def test_a_first_build_keeps_the_newest_row_of_a_url(tmp_path: Path) -> None:
    _loose_changes(
        tmp_path / "cms.db",
        ("/x", "upsert", "2024-01-01T00:00:00Z", None),
        ("/x", "upsert", "2024-06-01T00:00:00Z", "Final title"),
        ("/y", "upsert", "2024-01-01T00:00:00Z", "First title"),
        ("/y", "upsert", "2024-06-01T00:00:00Z", None),
    )
    site = _loose_site(tmp_path, sources="")
    site.config.write_text(site.config.read_text() + '[feed]\ntitle = "Updates"\n')
    site.build()
    assert published(site.out) == {
        "https://example.com/x": "2024-06-01T00:00:00+00:00",
        "https://example.com/y": "2024-06-01T00:00:00+00:00",
    }
    ledger = sqlite3.connect(site.state / "ledger.sqlite3")
    titles = dict(ledger.execute("SELECT loc, title FROM urls").fetchall())
    ledger.close()
    # The last row is the page as it is now: a title it no longer gives is gone.
    assert titles == {"https://example.com/x": "Final title", "https://example.com/y": None}


def test_reconcile_adds_missed_rows_and_leaves_logged_and_other_sources_urls_alone(
    tmp_path: Path,
) -> None:
    (tmp_path / "urls.txt").write_text(
        "https://example.com/listed\t2024-01-01T00:00:00Z\n"
        "https://example.com/shared\t2024-01-01T00:00:00Z\n"
    )
    with sqlite3.connect(tmp_path / "cms.db") as conn:
        conn.execute("CREATE TABLE live (path TEXT)")
        conn.executemany("INSERT INTO live VALUES (?)", [("/logged",), ("/missed",), ("/shared",)])
    conn.close()
    _loose_changes(tmp_path / "cms.db", ("/logged", "upsert", "2024-03-01T00:00:00Z", "Logged"))
    site = _loose_site(tmp_path, 'reconcile_query = "SELECT path FROM live"')
    site.config.write_text(
        site.config.read_text() + '\n[[source]]\ntype = "urllist"\npath = "urls.txt"\n'
    )
    site.build()
    urls = published(site.out)
    assert urls["https://example.com/logged"] == "2024-03-01T00:00:00+00:00"
    # Another source's URL keeps its lastmod: the reconcile does not take it over.
    assert urls["https://example.com/shared"] == "2024-01-01T00:00:00+00:00"
    assert urls["https://example.com/listed"] == "2024-01-01T00:00:00+00:00"
    assert "https://example.com/missed" in urls
    ledger = sqlite3.connect(site.state / "ledger.sqlite3")
    owners = dict(
        ledger.execute(
            "SELECT u.loc, s.name || ':' || coalesce(u.title, '') FROM urls u"
            " JOIN sources s ON s.id = u.source_id"
        ).fetchall()
    )
    ledger.close()
    cms = f"changelog:sqlite:///{tmp_path / 'cms.db'}"
    assert owners["https://example.com/logged"] == f"{cms}:Logged"
    assert owners["https://example.com/shared"].startswith("urllist:")
    # A second build (and every daemon reconcile) changes nothing.
    site.build()
    assert published(site.out) == urls


def test_an_empty_reconcile_is_an_outage_even_when_rows_arrive(tmp_path: Path) -> None:
    _loose_changes(
        tmp_path / "cms.db",
        ("/a", "upsert", "2024-03-01T00:00:00Z", None),
        ("/b", "upsert", "2024-03-01T00:00:00Z", None),
    )
    with sqlite3.connect(tmp_path / "cms.db") as conn:
        conn.execute("CREATE TABLE live (path TEXT)")
        conn.executemany("INSERT INTO live VALUES (?)", [("/a",), ("/b",), ("/c",)])
    conn.close()
    site = _loose_site(tmp_path, 'reconcile_query = "SELECT path FROM live"')
    site.build()
    assert set(published(site.out)) == {f"https://example.com/{p}" for p in "abc"}
    # The CMS's table is emptied (a failed import), while a new change is logged.
    with sqlite3.connect(tmp_path / "cms.db") as conn:
        conn.execute("DELETE FROM live")
    conn.close()
    _loose_changes(tmp_path / "cms.db", ("/d", "upsert", "2024-03-02T00:00:00Z", None))
    result = site.cli("build", check=False)
    assert result.returncode == 1
    assert "a full scan found nothing" in result.stderr
    assert set(published(site.out)) == {f"https://example.com/{p}" for p in "abcd"}


def test_reconcile_waits_for_the_log_to_drain(tmp_path: Path) -> None:
    _loose_changes(tmp_path / "cms.db", ("/n0", "upsert", "2024-03-01T00:00:00Z", "N0"))
    with sqlite3.connect(tmp_path / "cms.db") as conn:
        conn.execute("CREATE TABLE live (path TEXT)")
        conn.execute("INSERT INTO live VALUES ('/n0')")
    conn.close()
    site = _loose_site(tmp_path, 'reconcile_query = "SELECT path FROM live"\nbatch_size = 2')
    site.build()
    # Two rows a read and ten reads a batch once the ledger holds URLs (a first load reads
    # on): the next build drains in a second batch.
    _loose_changes(
        tmp_path / "cms.db",
        *((f"/n{n}", "upsert", "2024-03-01T00:00:00Z", f"N{n}") for n in range(1, 30)),
    )
    with sqlite3.connect(tmp_path / "cms.db") as conn:
        conn.executemany("INSERT INTO live VALUES (?)", [(f"/n{n}",) for n in range(1, 30)])
    conn.close()
    site.build()
    urls = published(site.out)
    assert len(urls) == 30
    assert set(urls.values()) == {"2024-03-01T00:00:00+00:00"}
    ledger = sqlite3.connect(site.state / "ledger.sqlite3")
    (untitled,) = ledger.execute("SELECT count(*) FROM urls WHERE title IS NULL").fetchone()
    ledger.close()
    assert untitled == 0


def test_a_first_load_reads_the_whole_backlog_in_one_transaction(tmp_path: Path) -> None:
    """Two rows a read, 45 rows: a first build loads them all as the site's baseline (no
    row is news for the feeds and notifications), its cursor after the last."""
    _loose_changes(
        tmp_path / "cms.db",
        *((f"/n{n}", "upsert", "2024-03-01T00:00:00Z", f"N{n}") for n in range(45)),
    )
    site = _loose_site(tmp_path, "batch_size = 2")
    site.build()
    assert len(published(site.out)) == 45
    ledger = sqlite3.connect(site.state / "ledger.sqlite3")
    cursors = dict(ledger.execute("SELECT name, value FROM cursors").fetchall())
    (journal,) = ledger.execute("SELECT count(*) FROM journal_entries").fetchone()
    ledger.close()
    assert journal == 45
    assert cursors["journal_baseline"] == "45"
    assert [v for name, v in cursors.items() if name.startswith("changelog:")] == ["45"]
    # More rows later go as news, from the cursor on: none is applied twice.
    _loose_changes(tmp_path / "cms.db", ("/n45", "upsert", "2024-03-02T00:00:00Z", "N45"))
    site.build()
    ledger = sqlite3.connect(site.state / "ledger.sqlite3")
    assert ledger.execute("SELECT count(*), max(seq) FROM journal_entries").fetchone() == (46, 46)
    ledger.close()


@pytest.mark.slow
def test_a_backlog_drains_in_one_publish_as_a_build_publishes_it(tmp_path: Path) -> None:
    """Rows of every kind waiting at start (repeats, deletes, a bad row, URLs to escape,
    a second time, titles) are published at once, as `sitemapd build` publishes them."""
    rows: list[tuple[object, ...]] = []
    for n in range(30_000):
        when = "2026-01-01T00:00:00Z" if n < 20_000 else "2026-01-01T00:00:01Z"
        url = f"/news/n{n % 25_000}" if n % 7 else f"https://example.com/q?n={n}&it's"
        rows.append((url, "upsert", when, f"Story {n}" if n % 3 == 0 else None))
        if n % 1000 == 999:
            rows.append((f"/news/n{n - 500}", "delete", when, None))
    rows.insert(12_345, ("/news/../secret", "upsert", "2026-01-01T00:00:00Z", None))
    _loose_changes(tmp_path / "cms.db", *rows)
    site = _loose_site(tmp_path, "batch_size = 5000")
    live: set[str] = set()
    for url, op, *_ in rows:
        loc = "https://example.com" + str(url) if str(url).startswith("/") else str(url)
        (live.add if op == "upsert" else live.discard)(loc)
    live.discard("https://example.com/news/../secret")
    (tmp_path / "fresh").mkdir()
    fresh = Site(tmp_path / "fresh")
    fresh.config.write_text(site.config.read_text())
    fresh.build()
    expected = published(fresh.out)
    assert set(expected) == live
    daemon = RunningDaemon(site)
    try:
        daemon.wait_until(lambda: published(site.out) == expected, 60, "every row")
        assert daemon.publishes() == 1
    finally:
        daemon.stop()
    assert {p.name: p.read_bytes() for p in site.out.iterdir() if p.is_file()} == {
        p.name: p.read_bytes() for p in fresh.out.iterdir() if p.is_file()
    }


# A read of a change log as the ledger takes it: stretches of alike rows, repeats, deletes,
# URLs to escape, articles with and without a stated time, hashes and titles now and then.
_META = [
    ArticleMeta(None, None, None, False, (), ()),
    ArticleMeta(None, "en", "Headline", False, (), ()),
    ArticleMeta("2024-02-01T00:00:00+00:00", "de", None, True, (), ()),
    ArticleMeta(None, None, "Undated", True, (), ()),
    ArticleMeta("2999-01-01T00:00:00+00:00", "", "", True, (), ()),
]
_ROW = st.tuples(
    st.sampled_from(["a", "b", "c&d", "it's", "private/x", "private/y"]).map(BASE.__add__),
    st.sampled_from([False, False, False, True]),
    st.sampled_from([None, None, "h1", "h2"]),
    st.sampled_from(
        ["2024-01-01T00:00:00+00:00", "2024-03-01T00:00:00+00:00", "2999-01-01T00:00:00+00:00"]
    ),
    st.sampled_from([None, None, "A title", ""]),
    st.sampled_from([_META[0], *_META]),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(st.tuples(_ROW, st.integers(1, 40)), min_size=1, max_size=6), max_size=4),
    st.booleans(),
    st.integers(2, 60),
)
def test_a_read_loaded_at_once_is_its_rows_loaded_one_by_one(
    reads: list[list[tuple[tuple[Any, ...], int]]], robots_txt: bool, max_urls: int
) -> None:
    """A first build takes a change log's reads column by column: the ledger it leaves
    is the one that each row applied as an Observation or a Gone leaves."""
    batches = []
    for read in reads:
        rows = [row for row, times in read for _ in range(times)]
        columns = [list(column) for column in zip(*rows, strict=True)] or [[]] * 6
        batches.append(Changes("log", *columns))
    robots = rules(b"User-agent: *\nDisallow: /news/private/\n") if robots_txt else ALLOW_ALL
    ledgers = []
    with tempfile.TemporaryDirectory() as folder:
        for whole in (True, False):
            ledger = Ledger(Path(folder) / f"{whole}.db", Limits(max_urls, 52_428_800))
            items = [item for b in batches for item in ([b] if whole else list(b.items()))]
            changes = ledger.apply(items, robots=robots, now=NOW)
            ledgers.append(
                (
                    changes,
                    *(
                        ledger.conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
                        for table in ("urls", "shards", "journal_entries", "cursors")
                    ),
                )
            )
            ledger.close()
    assert ledgers[0] == ledgers[1]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(st.tuples(_ROW, st.integers(1, 40)), min_size=1, max_size=6), max_size=4),
    st.booleans(),
    st.integers(2, 60),
    st.sets(st.sampled_from(["a", "c&d", "private/x", "b"]).map(BASE.__add__)),
)
def test_a_read_into_a_ledger_with_urls_is_its_rows_applied_one_by_one(
    reads: list[list[tuple[tuple[Any, ...], int]]],
    robots_txt: bool,
    max_urls: int,
    present: set[str],
) -> None:
    """Into a ledger that has URLs, a read's new URLs are inserted column by column: each
    URL ends as the read's rows applied one by one as Observations and Gones leave it,
    with the same journal, counts and shard totals. Not always in as many shards: the new
    URLs go in before the read's other rows, so a place one of those frees in a full
    shard is not theirs (`a` gone, then `b` new: `b` opens a shard)."""
    robots = rules(b"User-agent: *\nDisallow: /news/private/\n") if robots_txt else ALLOW_ALL
    seed = [Observation(BASE + "elsewhere", "other", "h0", "2024-01-01T00:00:00+00:00")]
    seed += [Observation(loc, "log", "h0", "2024-01-01T00:00:00+00:00") for loc in sorted(present)]
    ledgers = []
    with tempfile.TemporaryDirectory() as folder:
        for whole in (True, False):
            ledger = Ledger(Path(folder) / f"{whole}.db", Limits(max_urls, 52_428_800))
            ledger.apply(seed, robots=robots, now="2024-05-01T00:00:00+00:00")
            changes = []
            for read in reads:
                rows = [row for row, times in read for _ in range(times)]
                batch = Changes("log", *[list(column) for column in zip(*rows, strict=True)])
                items = [batch] if whole else list(batch.items())
                done = ledger.apply(items, robots=robots, now=NOW)
                changes.append((done.new, done.updated, done.gone, done.moved))
            conn = ledger.conn
            ledgers.append(
                (
                    changes,
                    # By URL: the ids and shards of URLs added in one read follow their order.
                    conn.execute(
                        "SELECT loc, source_id, status, reason, page_reason, content_hash, "
                        "source_time, lastmod, first_seen, change_count, title, entry_bytes, "
                        "published, language, news_title, article, published_stated, "
                        "shard IS NULL FROM urls ORDER BY loc"
                    ).fetchall(),
                    conn.execute(
                        "SELECT u.loc, j.kind, j.at FROM journal_entries j "
                        "JOIN urls u ON u.id = j.url_id ORDER BY 1, 2, 3"
                    ).fetchall(),
                    conn.execute(
                        "SELECT sum(url_count), sum(bytes), max(lastmod) FROM shards"
                    ).fetchall(),
                    conn.execute("SELECT max(url_count) <= ? FROM shards", (max_urls,)).fetchall(),
                )
            )
            ledger.close()
    assert ledgers[0] == ledgers[1]
