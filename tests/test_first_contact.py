"""Stumbles of a first hour with sitemapd, each through the real CLI or daemon: an SQLite
change log woken by its commits, site paths for explain, hostile bytes in inputs and
logs, patterns that can publish nothing, and pages that are no pages."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from conftest import Site, page, published, run_cli
from daemon_harness import RunningDaemon, start


def sqlite_cms(path: Path) -> None:
    """Create an SQLite CMS database in WAL mode with the change log sitemapd reads."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(
        "CREATE TABLE articles (id INTEGER PRIMARY KEY, slug TEXT UNIQUE, title TEXT, "
        "published_at TEXT)"
    )
    conn.executescript(run_cli("changelog-sql", "--sqlite").stdout)
    conn.commit()
    conn.close()


def test_an_sqlite_commit_wakes_the_daemon_without_a_poll(
    site: Site, daemons: list[RunningDaemon]
) -> None:
    db = site.base / "cms.db"
    sqlite_cms(db)
    # Polled once an hour: only the commit itself can wake the read.
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        "[daemon]\ndebounce = 0.1\n"
        f'[[source]]\ntype = "changelog"\ndsn = "sqlite:///{db}"\npoll_interval = 3600\n'
    )
    daemon = start(site)
    daemons.append(daemon)
    for n in range(3):
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("INSERT INTO articles (slug, title) VALUES (?, ?)", (f"a{n}", f"A{n}"))
        conn.close()
        expected = {f"https://example.com/news/a{i}" for i in range(n + 1)}
        daemon.wait_until(lambda e=expected: set(published(site.out)) == e, 30, f"a{n}")
    assert daemon.stop() == 0


def test_explain_takes_a_path_on_the_site(site: Site) -> None:
    site.write("news/a.html", page("A", "Some words of the article."))
    site.build()
    by_url = site.cli("explain", "https://example.com/news/a.html").stdout
    assert site.cli("explain", "/news/a.html").stdout == by_url
    assert "URL:          https://example.com/news/a.html" in by_url
