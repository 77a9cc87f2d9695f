"""Stumbles of a first hour with sitemapd, each through the real CLI or daemon: an SQLite
change log woken by its commits, site paths for explain, hostile bytes in inputs and
logs, patterns that can publish nothing, and pages that are no pages."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from conftest import Site, page, published, run_cli
from daemon_harness import RunningDaemon, start
from endpoints import Endpoint

SITE = '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'


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
        SITE + "[daemon]\ndebounce = 0.1\n"
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
    site.write("news/index.html", page("News", "The section's page."))
    site.build()
    by_url = site.cli("explain", "https://example.com/news/a.html").stdout
    assert site.cli("explain", "/news/a.html").stdout == by_url
    assert site.cli("explain", "news/a.html").stdout == by_url  # no first slash
    assert "URL:          https://example.com/news/a.html" in by_url
    # A folder's index file, named by its file name: the page published at the folder.
    section = site.cli("explain", "/news/index.html").stdout
    assert section == site.cli("explain", "/news/").stdout
    assert "URL:          https://example.com/news/\n" in section


def url_list_site(site: Site, data: bytes) -> None:
    """Make `site` one of a single URL list holding `data`."""
    urls = site.base / "urls.txt"
    urls.write_bytes(data)
    site.config.write_text(SITE + f'[[source]]\ntype = "urllist"\npath = "{urls}"\n')


def test_a_bom_on_line_one_of_a_url_list_is_no_part_of_the_url(site: Site) -> None:
    url_list_site(site, b"\xef\xbb\xbfhttps://example.com/a.html\r\nhttps://example.com/b.html\r\n")
    result = site.build()
    assert "0 invalid" in result.stdout
    assert set(published(site.out)) == {"https://example.com/a.html", "https://example.com/b.html"}


def test_control_bytes_from_inputs_are_escaped_in_the_log(site: Site) -> None:
    url_list_site(site, b"https://example.com/a\x00b\nhttps://example.com/c\rd\xef\xbb\xbf\n")
    result = site.build()
    for raw in ("\x00", "\r", "\ufeff"):
        assert raw not in result.stderr
    assert "skipped https://example.com/a\\x00b" in result.stderr
    assert "https://example.com/c\\rd\\ufeff" in result.stderr
    assert all(line.count(" sitemapd.") == 1 for line in result.stderr.splitlines())


def test_check_config_refuses_globs_outside_root_and_nested_repeats(site: Site) -> None:
    for source, key in (
        ('include = ["/etc/**"]', "include[0]"),
        ('include = ["**/*.html", "../**/*"]', "include[1]"),
        ('exclude = ["~/drafts/*"]', "exclude[0]"),
        ("ignore = ['<!-- build: [^>]* -->', '(a+)+$']", "ignore[1]"),
        ("ignore = ['(\\\\w+\\\\s?)*$']", "ignore[0]"),
    ):
        site.configure(source=source)
        result = site.cli("check-config", check=False)
        assert result.returncode == 2, source
        assert f"source[0].{key}" in result.stderr, result.stderr
    site.configure(source="ignore = ['<!-- build: [^>]* -->', 'Build Date UTC : [^<]*']")
    site.cli("check-config")


def test_javascript_canonical_and_meta_refresh_pages_say_why_they_are_out(site: Site) -> None:
    site.write(
        "j.html",
        "<!doctype html><html lang=en><head><title>J</title>"
        '<link rel="canonical" href="javascript:alert(1)"></head><body><p>J</p></body></html>',
    )
    site.write(
        "old.html",
        '<!doctype html><html><head><meta http-equiv="Refresh" content="0; URL=\'/new.html\'">'
        "<title>Moved</title></head><body><p>Moved to the new page.</p></body></html>",
    )
    site.write(
        "live.html",
        '<!doctype html><html><head><meta http-equiv="refresh" content="300">'
        "<title>Scores</title></head><body><p>Live scores.</p></body></html>",
    )
    site.build()
    assert set(site.urls()) == {"https://example.com/live.html"}
    explained = site.cli("explain", "/j.html").stdout
    assert "status:       excluded (canonical: javascript:alert(1))" in explained
    status = site.cli("status").stdout
    assert "1 canonical, 1 redirect" in status
    assert "https://example.com/old.html  (redirect: https://example.com/new.html)" in status


def test_status_names_a_daemon_that_is_still_starting(
    site: Site, daemons: list[RunningDaemon]
) -> None:
    db = site.base / "cms.db"
    sqlite_cms(db)  # WAL off below: a writer's exclusive lock keeps readers out
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    site.config.write_text(
        SITE + f'[[source]]\ntype = "changelog"\ndsn = "sqlite:///{db}"\npoll_interval = 3600\n'
    )
    # status reads the same state folder through a config without the locked database.
    other = site.base / "status.toml"
    other.write_text(SITE + f'[[source]]\ntype = "directory"\nroot = "{site.root}"\n')
    conn.execute("BEGIN EXCLUSIVE")
    daemon = RunningDaemon(site)
    daemons.append(daemon)
    try:
        # The first read waits for the lock: the daemon is alive, and starting.
        daemon.wait_until(lambda: (site.state / "daemon.json").exists(), 30, "daemon.json")
        shown = run_cli("status", "-c", str(other)).stdout
        # (The read gives up after the 5 s busy timeout: this looks well within it.)
        assert f"daemon:       pid {daemon.proc.pid}, UNHEALTHY: starting" in shown
    finally:
        conn.execute("ROLLBACK")
        conn.close()
    daemon.wait_ready()
    assert daemon.stop() == 0


def test_watchdog_warnings_come_in_sitemapds_log_format() -> None:
    # What watchdog logs when the kernel dropped events: raw, it broke the log's format.
    code = (
        "import logging; from sitemapd.cli import process; process.configure('info'); "
        "logging.getLogger('watchdog.observers.inotify_c').warning("
        "'Inotify queue overflowed: %r', b'/srv/www/a\\r.html')"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert re.fullmatch(
        r"\S+ \S+ WARNING watchdog\.observers\.inotify_c: Inotify queue overflowed: "
        r"b'/srv/www/a\\r\.html'\n",
        result.stderr,
    ), result.stderr


def test_import_of_an_index_listing_feeds_finds_them_at_their_paths(site: Site) -> None:
    old = site.base / "old"
    (old / "feeds").mkdir(parents=True)
    (old / "maps").mkdir()
    (old / "index.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<sitemap><loc>https://example.com/maps/pages.xml</loc></sitemap>"
        "<sitemap><loc>https://example.com/feeds/all.atom.xml</loc></sitemap>"
        "<sitemap><loc>https://example.com/feeds/rss.xml</loc></sitemap>"
        "</sitemapindex>\n"
    )
    (old / "maps" / "pages.xml").write_text(
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url>'
        "<loc>https://example.com/a.html</loc><lastmod>2025-01-01T00:00:00+00:00</lastmod>"
        "</url></urlset>"
    )
    (old / "feeds" / "all.atom.xml").write_text(
        '<feed xmlns="http://www.w3.org/2005/Atom"><title>T</title><entry><title>B</title>'
        '<link href="https://example.com/b.html" rel="alternate"/>'
        "<updated>2025-02-01T00:00:00+00:00</updated></entry></feed>"
    )
    (old / "feeds" / "rss.xml").write_text(
        '<rss version="2.0"><channel><title>T</title><item><title>C</title>'
        "<link>https://example.com/c.html</link><pubDate>Sat, 01 Mar 2025 00:00:00 +0000"
        "</pubDate></item></channel></rss>"
    )
    imported = site.cli("import", str(old / "index.xml"))
    assert "read 3 URLs from 4 files" in imported.stdout
    assert "no local copy" not in imported.stderr
    for name in ("a", "b", "c"):
        site.write(f"{name}.html", page(name.upper()))
    site.build()
    assert site.urls() == {
        "https://example.com/a.html": "2025-01-01T00:00:00+00:00",
        "https://example.com/b.html": "2025-02-01T00:00:00+00:00",
        "https://example.com/c.html": "2025-03-01T00:00:00+00:00",
    }


def test_forget_announces_the_url_as_new(site: Site, endpoint: Endpoint) -> None:
    site.configure(
        extra=f'[indexnow]\nkey = "0123456789abcdef"\nendpoint = "{endpoint.url("/indexnow")}"\n'
    )
    site.write("a.html", page("A"))
    site.build()  # the existing site is not announced
    site.write("b.html", page("B"))
    site.build()
    endpoint.wait("/indexnow", 1)
    # The last URL that changed: its journal entries were the newest.
    forgot = site.cli("forget", "/b.html")
    assert "1 new" in forgot.stdout
    requests = endpoint.wait("/indexnow", 2)
    assert requests[1].json()["urlList"] == ["https://example.com/b.html"]


def test_status_says_a_content_selector_matches_nothing(site: Site) -> None:
    site.configure(source="content_selector = 'article .story-body'")
    site.write("a.html", page("A", "Words of a page without the selected element."))
    site.build()
    shown = site.cli("status").stdout
    assert "1 pages fingerprinted whole" in shown
    assert "content_selector 'article .story-body' matches nothing there" in shown
    assert "set content_selector" not in shown
