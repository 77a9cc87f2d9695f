"""Change-log sources end to end: `sitemapd run` following a real PostgreSQL (and a
SQLite file) through the DDL `sitemapd changelog-sql` prints, into published sitemaps."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import Site, published, run_cli
from daemon_harness import RunningDaemon, start
from pg import Postgres

BASE = "https://example.com/news/"


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
        daemon.wait_for_urls(locs(*added), timeout=60)
    finally:
        stop.set()
        thread.join()
        daemon.stop()
        if not (postgres.data / "postmaster.pid").exists():
            postgres.start()
    ledger = sqlite3.connect(site.state / "ledger.sqlite3")
    kinds = dict(ledger.execute("SELECT kind, count(*) FROM journal GROUP BY kind").fetchall())
    ledger.close()
    # Each row was applied once: one "new" per article, never an "updated" for a replay.
    assert kinds == {"new": len(added)}


def test_database_down_at_start_keeps_output_and_reports_it(tmp_path: Path) -> None:
    site = changelog_site(tmp_path, "postgresql://nobody@127.0.0.1:9/none")
    daemon = RunningDaemon(site)
    try:
        daemon.wait_ready()
        daemon.wait_for_log("cannot read", 20)
        status = json.loads(site.cli("status", "--json").stdout)
        assert status["urls"]["live"] == 0
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
