"""Update feeds: Atom and RSS read back by feedparser and the Atom RELAX NG schema, the
window since the crawlers' last fetch from an access log, and RFC 5005 pages."""

from __future__ import annotations

import json
from pathlib import Path

import feedparser
from conftest import SCHEMAS, Site, page, snapshot
from lxml import etree

ATOM_RNG = etree.RelaxNG(etree.parse(str(SCHEMAS / "atom.rng")))
T0 = "2026-01-01T00:00:00+00:00"


def at(hours: float, minutes: float = 0) -> str:
    """Return T0 plus the given time, canonical."""
    from sitemapd import w3c

    return w3c.format_epoch(w3c.to_epoch(T0) + hours * 3600 + minutes * 60)


def build_at(site: Site, when: str) -> None:
    import os

    from conftest import run_cli

    os.environ["SITEMAPD_TEST_NOW"] = when
    try:
        run_cli("build", "-c", str(site.config))
    finally:
        del os.environ["SITEMAPD_TEST_NOW"]


def parsed(path: Path) -> feedparser.FeedParserDict:
    feed = feedparser.parse(path.read_bytes())
    assert feed.bozo == 0, feed.get("bozo_exception")
    return feed


def links(feed: feedparser.FeedParserDict) -> dict[str, str]:
    return {link["rel"]: link["href"] for link in feed.feed.links}


def feed_site(site: Site, feed: str = "", extra: str = "") -> None:
    site.configure(extra=f'[feed]\ntitle = "Example updates"\n{feed}\n{extra}')


def test_feeds_list_updates_newest_first_and_validate(site: Site) -> None:
    feed_site(site)
    for n in range(3):
        site.write(f"p{n}.html", page(f"Page {n} & <friends>", f"v1 {n}"))
    build_at(site, at(0))
    site.write("p1.html", page("Page 1 edited", "v2"))
    build_at(site, at(1))

    ATOM_RNG.assertValid(etree.parse(str(site.out / "atom.xml")))
    atom, rss = parsed(site.out / "atom.xml"), parsed(site.out / "rss.xml")
    for feed in (atom, rss):
        locs = [entry.link for entry in feed.entries]
        assert locs[0] == "https://example.com/p1.html"
        assert sorted(locs) == [f"https://example.com/p{n}.html" for n in range(3)]
        assert feed.entries[0].title == "Page 1 edited"
        assert feed.entries[0].id == "https://example.com/p1.html"
    assert atom.entries[0].updated_parsed[:5] == (2026, 1, 1, 1, 0)
    assert atom.feed.updated == at(1)
    assert rss.entries[0].published_parsed[:5] == (2026, 1, 1, 1, 0)
    assert {e.title for e in atom.entries} >= {"Page 0 & <friends>"}
    assert links(atom)["self"] == "https://example.com/atom.xml"

    # Unchanged ledger: not a byte rewritten, feeds included.
    before = snapshot(site.out)
    build_at(site, at(1, 5))
    assert snapshot(site.out) == before

    # A removed URL leaves the feeds.
    (site.root / "p0.html").unlink()
    build_at(site, at(2))
    for name in ("atom.xml", "rss.xml"):
        locs = [entry.link for entry in parsed(site.out / name).entries]
        assert "https://example.com/p0.html" not in locs


def test_feed_names_and_urls_are_configurable(site: Site) -> None:
    site.configure(
        site='output_url = "https://example.com/feeds/"',
        extra='[feed]\ntitle = "T"\natom = "updates.xml"\nrss = "updates-rss.xml"\n'
        'subtitle = "What changed"',
    )
    site.write("a.html", page("A"))
    site.build()
    atom = parsed(site.out / "updates.xml")
    assert links(atom)["self"] == "https://example.com/feeds/updates.xml"
    assert parsed(site.out / "updates-rss.xml").feed.subtitle == "What changed"


def log_line(when: str, target: str, status: int, agent: str) -> str:
    from datetime import datetime

    stamp = datetime.fromisoformat(when).strftime("%d/%b/%Y:%H:%M:%S +0000")
    return f'66.249.66.1 - - [{stamp}] "GET {target} HTTP/1.1" {status} 512 "-" "{agent}"\n'


GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
BINGBOT = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0"


def test_window_follows_the_oldest_crawler_fetch_and_pages_instead_of_dropping(
    site: Site,
) -> None:
    log = site.base / "access.log"
    log.write_text("")
    feed_site(
        site,
        'min_window = "1h"\nmax_entries = 3',
        f'[[source]]\ntype = "accesslog"\npath = "{log}"',
    )
    for n in range(10):
        site.write(f"p{n}.html", page(f"P{n}", "v1"))
    build_at(site, at(0))  # the site as it was: not updates

    for n in (1, 2):
        site.write(f"p{n}.html", page(f"P{n}", "v2"))
    build_at(site, at(2))
    with log.open("a") as handle:
        handle.write(log_line(at(0, 30), "/atom.xml", 304, BINGBOT))
        handle.write(log_line(at(2, 10), "/atom.xml", 200, GOOGLEBOT))
        handle.write(log_line(at(2, 50), "/atom.xml", 200, BROWSER))  # not a crawler
        handle.write(log_line(at(2, 50), "/p9.html", 404, GOOGLEBOT))
    for n in range(3, 8):
        site.write(f"p{n}.html", page(f"P{n}", "v2"))
    build_at(site, at(3))

    # Seven updates since bingbot's fetch at 00:30, three per page: 3 + 3 + 1.
    pages = ["atom.xml", "atom-2.xml", "atom-3.xml"]
    feeds = [parsed(site.out / name) for name in pages]
    assert [len(f.entries) for f in feeds] == [3, 3, 1]
    order = [e.link.rsplit("/", 1)[1] for f in feeds for e in f.entries]
    assert order == ["p7.html", "p6.html", "p5.html", "p4.html", "p3.html", "p2.html", "p1.html"]
    assert links(feeds[0])["next"] == "https://example.com/atom-2.xml"
    assert links(feeds[1])["previous"] == "https://example.com/atom.xml"
    assert links(feeds[1])["next"] == "https://example.com/atom-3.xml"
    assert "next" not in links(feeds[2])
    for name in pages:
        ATOM_RNG.assertValid(etree.parse(str(site.out / name)))
    rss_pages = [parsed(site.out / n) for n in ("rss.xml", "rss-2.xml", "rss-3.xml")]
    assert [len(f.entries) for f in rss_pages] == [3, 3, 1]

    report = json.loads(site.cli("status", "--json").stdout)
    assert report["crawlers"] == {"bingbot": at(0, 30), "googlebot": at(2, 10)}
    assert report["crawl_problems"] == [
        f"https://example.com/p9.html: googlebot got 404 at {at(2, 50)}"
    ]
    verify = site.cli("verify", check=False)
    assert verify.returncode == 1
    assert "https://example.com/p9.html: googlebot got 404" in verify.stdout

    # Both crawlers fetched after the updates: one page, the pages beyond are removed.
    with log.open("a") as handle:
        handle.write(log_line(at(3, 5), "/rss.xml", 200, BINGBOT))
        handle.write(log_line(at(3, 5), "/atom.xml", 200, GOOGLEBOT))
        handle.write(log_line(at(3, 6), "/p9.html", 200, GOOGLEBOT))
    build_at(site, at(3, 10))
    assert not (site.out / "atom-2.xml").exists()
    assert not (site.out / "rss-3.xml").exists()
    latest = parsed(site.out / "atom.xml")
    assert [e.link.rsplit("/", 1)[1] for e in latest.entries] == ["p7.html", "p6.html", "p5.html"]
    assert "next" not in links(latest)
    assert json.loads(site.cli("status", "--json").stdout)["crawl_problems"] == []

    # A forged "Googlebot" fetch cannot shrink the window below min_window: the updates
    # of the last hour stay.
    with log.open("a") as handle:
        handle.write(log_line(at(3, 20), "/atom.xml", 200, GOOGLEBOT))
        handle.write(log_line(at(3, 20), "/atom.xml", 200, BINGBOT))
    build_at(site, at(3, 30))
    assert len(parsed(site.out / "atom.xml").entries) == 3


def test_rotated_access_log_keeps_counting(site: Site) -> None:
    log = site.base / "access.log"
    log.write_text(log_line(at(1), "/atom.xml", 200, GOOGLEBOT))
    feed_site(site, extra=f'[[source]]\ntype = "accesslog"\npath = "{log}"')
    site.write("a.html", page("A"))
    build_at(site, at(2))
    log.rename(site.base / "access.log.1")  # logrotate's default
    log.write_text(log_line(at(3), "/atom.xml", 304, GOOGLEBOT))
    build_at(site, at(4))
    report = json.loads(site.cli("status", "--json").stdout)
    assert report["crawlers"] == {"googlebot": at(3)}


def test_sidecar_records_crawler_fetches_of_the_feeds(site: Site) -> None:
    import urllib.request

    from daemon_harness import start
    from test_sidecar import http_port

    feed_site(site, extra='[http]\nlisten = "127.0.0.1:0"\nserve_files = true\n')
    site.write("a.html", page("A"))
    daemon = start(site)
    try:
        port = http_port(daemon)

        def fetch(name: str, agent: str) -> int:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/{name}", headers={"User-Agent": agent}
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                return int(response.status)

        assert fetch("atom.xml", BROWSER) == 200
        assert fetch("sitemap.xml", GOOGLEBOT) == 200  # not a feed
        assert fetch("rss.xml", BINGBOT) == 200
        daemon.wait_until(
            lambda: (
                json.loads(site.cli("status", "--json").stdout)["crawlers"].keys() == {"bingbot"}
            ),
            20,
            "bingbot's fetch recorded",
        )
    finally:
        assert daemon.stop() == 0
