"""`sitemapd build` on directory sites: URLs, lastmod truth, idempotence, atomic output."""

from __future__ import annotations

import gzip
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, Site, assert_valid, page, published, snapshot

from sitemapd import config
from sitemapd.core import w3c
from sitemapd.engine.engine import Engine
from sitemapd.sources import directory

EXAMPLE_URLS = {
    "https://example.com/",
    "https://example.com/about/",
    "https://example.com/about/contact.html",
    "https://example.com/culture/",
    "https://example.com/culture/2026/11/jazz-festival-lineup.html",
    "https://example.com/culture/2026/11/museum-night.html",
    "https://example.com/culture/caf%C3%A9-reviews.html",
    "https://example.com/culture/na%C3%AFve-art/",
    "https://example.com/de/",
    "https://example.com/de/stra%C3%9Fe.html",
    "https://example.com/news/",
    "https://example.com/news/2026/",
    "https://example.com/news/2026/10/budget-surplus-announced.html",
    "https://example.com/news/2026/10/library-reopens.html",
    "https://example.com/news/2026/11/city-council-vote.html",
    "https://example.com/news/2026/11/new-tram-line-opens.html",
    "https://example.com/news/2026/11/river-flood-warning.html",
    "https://example.com/sport/",
    "https://example.com/sport/2026/10/swimming-championships.html",
    "https://example.com/sport/2026/11/derby-ends-in-draw.html",
    "https://example.com/sport/2026/11/marathon-record.html",
    "https://example.com/tech/",
    "https://example.com/tech/2026/11/city-wifi-upgrade.html",
    "https://example.com/tech/2026/11/open-source-grant.html",
    "https://example.com/tech/q&a.html",
    "https://example.com/tech/release%20notes.html",
}


def at(stamp: str) -> float:
    return w3c.to_epoch(w3c.parse(stamp))


@pytest.fixture
def example(tmp_path: Path) -> Site:
    """The bundled example site with its own config, copied to a temp dir."""
    shutil.copytree(REPO / "examples" / "site", tmp_path / "site")
    shutil.copy(REPO / "examples" / "sitemapd.toml", tmp_path / "sitemapd.toml")
    site = Site.__new__(Site)
    site.base, site.root = tmp_path, tmp_path / "site"
    site.out, site.state = tmp_path / "out", tmp_path / "state"
    site.config = tmp_path / "sitemapd.toml"
    return site


def test_example_site_publishes_exactly_its_indexable_pages(example: Site) -> None:
    example.build()
    assert_valid(example.out)
    assert set(example.urls()) == EXAMPLE_URLS
    # Files the web server serves but that are not pages never become URLs.
    assert not any(loc.endswith((".css", ".svg", ".pdf", ".txt")) for loc in example.urls())
    assert example.cli("verify").returncode == 0


def test_second_build_writes_nothing(example: Site) -> None:
    example.build()
    before = snapshot(example.out)
    robots = (example.root / "robots.txt").stat()
    result = example.build()
    assert "wrote 0 files" in result.stdout
    assert snapshot(example.out) == before
    assert (example.root / "robots.txt").stat().st_mtime_ns == robots.st_mtime_ns


def test_touching_every_file_moves_no_lastmod(example: Site) -> None:
    example.build()
    before, lastmods = snapshot(example.out), example.urls()
    later = time.time() + 5
    for path in example.root.rglob("*"):
        os.utime(path, (later, later))
    example.build()
    assert snapshot(example.out) == before
    assert example.urls() == lastmods


def test_redeploying_identical_files_moves_no_lastmod(example: Site, tmp_path: Path) -> None:
    """A deploy replaces every file (new inodes, new mtimes) with the same bytes."""
    example.build()
    before, lastmods = snapshot(example.out), example.urls()
    fresh = tmp_path / "release"
    shutil.copytree(REPO / "examples" / "site", fresh)
    shutil.rmtree(example.root)
    fresh.rename(example.root)
    example.build()
    assert example.urls() == lastmods
    assert snapshot(example.out) == before


def test_the_example_passes_its_own_drill_and_a_new_home_story_moves_the_home(
    example: Site,
) -> None:
    # The home is five short linked stories under a line of intro: too little text to
    # score, yet a new story there is what a reader of the home sees change.
    drilled = example.cli("drill", "--pages", "100")
    assert "FAIL" not in drilled.stdout
    assert "a new item in a list page's list       100.0%" in drilled.stdout
    example.build()
    before = example.urls()["https://example.com/"]
    time.sleep(1.1)  # lastmods are to the second
    home = example.root / "index.html"
    story = "<li><a href='https://example.com/news/2026/11/fresh.html'>A fresh story</a></li>"
    staged = home.with_name(".index.html.tmp")
    staged.write_text(home.read_text().replace("<li>", story + "<li>", 1))
    staged.replace(home)
    example.build()
    assert example.urls()["https://example.com/"] != before


def test_new_page_takes_file_mtime_and_change_takes_observation_time(site: Site) -> None:
    path = site.write("a.html", page("A", "first"))
    os.utime(path, (at("2024-03-01T12:00:00Z"),) * 2)
    site.build()
    assert site.urls() == {"https://example.com/a.html": "2024-03-01T12:00:00+00:00"}

    # Same bytes, newer mtime: not a change.
    os.utime(path, (at("2025-01-01T00:00:00Z"),) * 2)
    site.build()
    assert site.urls()["https://example.com/a.html"] == "2024-03-01T12:00:00+00:00"

    # New content: lastmod is when the change was observed, not the file's mtime.
    before = w3c.now()
    site.write("a.html", page("A", "second"))
    os.utime(path, (at("2020-01-01T00:00:00Z"),) * 2)
    site.build()
    after = w3c.now()
    assert before <= site.urls()["https://example.com/a.html"] <= after


def test_lastmod_is_never_in_the_future(site: Site) -> None:
    path = site.write("future.html", page("Future"))
    os.utime(path, (time.time() + 86400 * 365,) * 2)
    site.build()
    assert site.urls()["https://example.com/future.html"] <= w3c.now()


def test_deleted_page_leaves_and_returns_with_its_lastmod(site: Site) -> None:
    path = site.write("keep.html", page("Keep"))
    site.write("other.html", page("Other"))
    os.utime(path, (at("2024-01-01T00:00:00Z"),) * 2)
    site.build()
    saved = path.read_bytes()
    path.unlink()
    site.build()
    assert set(site.urls()) == {"https://example.com/other.html"}
    site.write("keep.html", saved)
    site.build()
    assert site.urls()["https://example.com/keep.html"] == "2024-01-01T00:00:00+00:00"


def test_paths_map_to_urls(site: Site) -> None:
    site.configure(source='url_prefix = "/docs/"\nstrip_html = true\nexclude = ["private/**"]')
    for relpath in ("index.html", "a/index.html", "a/b.html", "c.htm", "private/x.html"):
        site.write(relpath, page(relpath))
    site.write(".hidden.html", page("dotfile"))
    site.write(".git/x.html", page("in a dot folder"))
    site.write("style.css", "body {}")
    site.build()
    assert set(site.urls()) == {
        "https://example.com/docs/",
        "https://example.com/docs/a/",
        "https://example.com/docs/a/b",
        "https://example.com/docs/c",
    }


@pytest.mark.parametrize(
    ("source", "served", "shadowed", "url"),
    [
        ("", "b/index.html", "b/index.htm", "https://example.com/b/"),
        ("strip_html = true", "b/x.html", "b/x.htm", "https://example.com/b/x"),
    ],
)
def test_of_two_files_that_are_one_url_the_served_one_is_the_page_every_build(
    site: Site, source: str, served: str, shadowed: str, url: str
) -> None:
    # A web server serves index.html where index.htm is there too: so does the sitemap,
    # build after build (each took the other's place, moving the lastmod every time).
    site.configure(source=source)
    site.write(served, page("Served", "Served text"))
    site.write(shadowed, page("Shadowed", "Shadowed text"))
    first = site.build()
    assert f"{shadowed} is not published: {served} is served as the same URL" in first.stderr
    lastmod = site.urls()[url]
    # `explain` reads the served one, by its URL or its file, and says so of the other.
    assert f"file:         {site.root / served}" in site.cli("explain", url).stdout
    refused = site.cli("explain", str(site.root / shadowed), check=False)
    assert f"{shadowed} is not published: {served} is served as {url}" in refused.stderr
    for _ in range(3):
        time.sleep(1.1)  # lastmods have one-second resolution
        os.utime(site.root / shadowed)
        assert "0 new, 0 updated, 0 gone" in site.build().stdout
    assert site.urls() == {url: lastmod}
    # The served one says noindex: nothing is published, whatever the other says.
    site.write(served, page("Served", "Served text", robots="noindex"))
    site.build()
    os.utime(site.root / shadowed)
    site.build()
    assert site.urls() == {}
    # Gone, the other takes its place.
    (site.root / served).unlink()
    site.build()
    assert set(site.urls()) == {url}


def test_events_on_files_that_are_one_url_follow_the_served_one(site: Site) -> None:
    """What a daemon's events read: the served file, another taking its place once it is
    no page (gone, a link leading nowhere), and a file of another URL as its own."""
    site.configure(source='name = "s"\nstrip_html = true\nindex_files = ["index.html"]')
    site.write("b/index.html", page("Served", "Served text"))
    site.write("b/index.htm", page("Own URL", "Its own text"))  # /b/index, not /b/
    site.write("a.html", page("A", "A text", robots="noindex"))
    site.write("a.htm", page("A too", "Other text"))
    engine = Engine(config.load(site.config))
    try:
        engine.build()
        assert set(site.urls()) == {"https://example.com/b/", "https://example.com/b/index"}
        site.write("b/index.htm", page("Own URL", "Its own text, edited"))
        assert engine.update({"s": {"b/index.htm"}}, set()).changes.updated == 1
        (site.root / "b" / "index.htm").unlink()
        assert engine.update({"s": {"b/index.htm"}}, set()).changes.gone == 1
        # The noindex a.html turned into a link to nothing: a.htm is the page now.
        (site.root / "a.html").unlink()
        (site.root / "a.html").symlink_to(site.root / "nowhere.html")
        assert engine.update({"s": {"a.html"}}, set()).changes.new == 1
        assert set(site.urls()) == {"https://example.com/b/", "https://example.com/a"}
    finally:
        engine.close()


def test_a_folder_moved_away_and_back_during_a_scan_is_not_gone(
    site: Site, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A deploy that swaps folders (`mv blog blog.old; mv blog.new blog`) while a full scan
    walks past: pages the walk missed but that are there are kept, not removed and
    announced as gone; pages really gone still go."""
    site.configure(source='name = "s"')
    site.write("index.html", page("Home"))
    for n in range(3):
        site.write(f"blog/p{n}.html", page(f"Post {n}", "Text"))
    engine = Engine(config.load(site.config))
    try:
        engine.build()
        before = site.urls()
        walk = directory.walk

        def walk_past_blog(*args: Any, **kwargs: Any) -> Any:
            return (e for e in walk(*args, **kwargs) if not e[0].startswith("blog/"))

        monkeypatch.setattr(directory, "walk", walk_past_blog)
        assert engine.build().changes.gone == 0
        assert "s: 3 pages the scan did not find are there now" in caplog.text
        assert site.urls() == before
        shutil.rmtree(site.root / "blog")
        assert engine.build().changes.gone == 3
    finally:
        engine.close()


def test_the_output_folder_inside_the_root_holds_no_pages(site: Site) -> None:
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "site/sitemaps"\n'
        'state_dir = "state"\n[[source]]\ntype = "directory"\nroot = "site"\n'
    )
    site.write("index.html", page("Home"))
    site.write("sitemaps/stray.html", page("Stray"))
    site.out = site.root / "sitemaps"
    site.build()
    site.build()
    assert set(site.urls()) == {"https://example.com/"}


def test_gzip_output_is_valid_deterministic_and_switchable(site: Site) -> None:
    site.configure(sitemap="gzip = true")
    for n in range(5):
        site.write(f"p{n}.html", page(f"P{n}"))
    site.build()
    assert sorted(p.name for p in site.out.iterdir() if p.is_file()) == [
        "sitemap-1.xml.gz",
        "sitemap.xml",
    ]
    assert_valid(site.out)
    first = (site.out / "sitemap-1.xml.gz").read_bytes()
    assert gzip.decompress(first).startswith(b"<?xml")
    (site.out / "sitemap-1.xml.gz").unlink()
    site.build()  # a lost file is rewritten, byte for byte
    assert (site.out / "sitemap-1.xml.gz").read_bytes() == first
    site.configure(sitemap="gzip = false")
    site.build()
    assert sorted(p.name for p in site.out.iterdir() if p.is_file()) == [
        "sitemap-1.xml",
        "sitemap.xml",
    ]
    assert_valid(site.out)
    assert len(published(site.out)) == 5


def test_missing_root_keeps_published_output(site: Site) -> None:
    site.write("a.html", page("A"))
    site.build()
    before = snapshot(site.out)
    shutil.rmtree(site.root)
    result = site.cli("build", check=False)
    assert result.returncode == 1
    assert "missing" in result.stderr
    assert snapshot(site.out) == before


def test_unreadable_file_is_counted_and_kept(site: Site) -> None:
    """A file sitemapd cannot read is reported and its URL stays published as it was."""
    site.write("a.html", page("A"))
    locked = site.write("b.html", page("B"))
    site.build()
    lastmods = site.urls()
    locked.write_text(page("B changed"))
    locked.chmod(0)
    # Root reads any file; without the DAC capabilities it honours permissions like anyone.
    drop = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]
    command = [sys.executable, "-m", "sitemapd", "build", "-c", str(site.config)]
    result = subprocess.run(
        [*(drop if os.geteuid() == 0 else []), *command],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "1 invalid" in result.stdout
    assert "b.html: unreadable (Permission denied)" in result.stderr
    assert site.urls() == lastmods
    assert '"reason": "unreadable (Permission denied)"' in site.cli("status", "--json").stdout


def test_a_same_size_edit_to_a_published_file_is_repaired(site: Site) -> None:
    site.write("a.html", page("A"))
    site.build()
    shard = site.out / "sitemap-1.xml"
    original = shard.read_bytes()
    shard.write_bytes(original.replace(b"<lastmod>2", b"<lastmod>1", 1))
    assert len(shard.read_bytes()) == len(original)
    site.build()
    assert shard.read_bytes() == original


def test_renaming_a_source_keeps_lastmods_and_removing_it_retires_its_urls(
    site: Site,
) -> None:
    site.configure(source='name = "pages"')
    path = site.write("a.html", page("A"))
    os.utime(path, (at("2024-01-01T00:00:00Z"),) * 2)
    site.build()
    site.configure(source='name = "renamed"')
    site.build()
    assert site.urls() == {"https://example.com/a.html": "2024-01-01T00:00:00+00:00"}
    (site.base / "urls.txt").write_text("https://example.com/listed.html\n")
    site.config.write_text(
        site.config.read_text().replace(
            '[[source]]\ntype = "directory"\nroot = "site"\nname = "renamed"',
            '[[source]]\ntype = "urllist"\npath = "urls.txt"',
        )
    )
    site.build()
    assert set(site.urls()) == {"https://example.com/listed.html"}


def test_a_scan_that_finds_nothing_is_an_outage_not_a_mass_deletion(site: Site) -> None:
    site.write("a.html", page("A"))
    site.write("b.html", page("B"))
    site.build()
    before = snapshot(site.out)
    for path in site.root.iterdir():
        path.unlink()  # an empty mount point, a failed deploy
    result = site.cli("build", check=False)
    assert result.returncode == 1
    assert "a full scan found nothing: treated as an outage" in result.stderr
    assert snapshot(site.out) == before
    site.write("a.html", page("A"))
    site.build()
    assert set(site.urls()) == {"https://example.com/a.html"}


def test_turning_robots_rules_off_and_on_applies_them_to_every_url(site: Site) -> None:
    site.write("robots.txt", "User-agent: *\nDisallow: /private/\n")
    site.write("private/a.html", page("A"))
    site.write("index.html", page("Home"))
    site.configure(site='robots_txt = "site/robots.txt"')
    site.build()
    assert set(site.urls()) == {"https://example.com/"}
    site.configure()
    site.build()
    assert set(site.urls()) == {"https://example.com/", "https://example.com/private/a.html"}
    site.write("private/b.html", page("B"))
    site.build()
    site.configure(site='robots_txt = "site/robots.txt"')
    site.build()
    assert set(site.urls()) == {"https://example.com/"}


def test_import_without_lastmods_keeps_the_files_own_time(site: Site) -> None:
    old = site.base / "old-sitemap.xml"
    old.write_text(
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        "<url><loc>https://example.com/a.html</loc></url>"
        "<url><loc>https://example.com/b.html</loc><lastmod>2099-01-01</lastmod></url>"
        "</urlset>"
    )
    for name in ("a.html", "b.html"):
        os.utime(site.write(name, page(name)), (at("2024-05-05T05:05:05Z"),) * 2)
    site.cli("import", str(old))
    site.build()
    assert set(site.urls().values()) == {"2024-05-05T05:05:05+00:00"}


def test_a_first_build_larger_than_the_page_cache_reads_what_sources_ask(site: Site) -> None:
    """A first load through a rollback journal locks the file once it outgrows the page
    cache; sources asking what the ledger knows meanwhile (the next list's chunks, the
    next batch's files) are answered all the same."""
    padding = "x" * 200
    (site.base / "big.txt").write_text(
        "".join(f"https://example.com/big/{padding}/{n}\n" for n in range(120_000))
    )
    (site.base / "small.txt").write_text("https://example.com/small\n")
    site.configure(
        extra='[[source]]\ntype = "urllist"\npath = "big.txt"\nname = "big"\n'
        '[[source]]\ntype = "urllist"\npath = "small.txt"\nname = "small"\n'
    )
    for n in range(3):
        site.write(f"p{n}.html", page(f"Page {n}"))
    assert "120004 new" in site.build().stdout
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("SELECT count(*) FROM urls WHERE status = 'live'").fetchone() == (120004,)
    conn.close()
    assert "0 new, 0 updated, 0 gone" in site.build().stdout


def test_a_first_build_leaves_a_wal_ledger_and_builds_beside_a_reader(site: Site) -> None:
    """A first build loads the empty ledger through a rollback journal and returns it to
    WAL; with another process reading the ledger it stays in WAL and builds all the same."""
    site.build()  # no page yet: an empty ledger
    ledger = site.state / "ledger.sqlite3"
    reader = sqlite3.connect(f"{ledger.as_uri()}?mode=ro", uri=True)
    try:
        assert reader.execute("SELECT count(*) FROM urls").fetchone() == (0,)
        for n in range(30):
            site.write(f"p{n}.html", page(f"Page {n}"))
        started = time.monotonic()
        site.build()
        assert time.monotonic() - started < 4  # no wait for the reader to let go
    finally:
        reader.close()
    urls = {f"https://example.com/p{n}.html" for n in range(30)}
    assert set(published(site.out)) == urls

    shutil.rmtree(site.out)
    shutil.rmtree(site.state)
    site.build()
    conn = sqlite3.connect(ledger)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert not (site.state / "ledger.sqlite3-journal").exists()
    conn.close()
    assert set(published(site.out)) == urls
