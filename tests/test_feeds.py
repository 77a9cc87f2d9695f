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
    from sitemapd.core import w3c

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


def feed_names(site: Site, first: str = "atom") -> list[str]:
    """Return the feed's pages in link order: the feed itself, then each `rel="next"`."""
    names = [f"{first}.xml"]
    while "next" in (found := links(parsed(site.out / names[-1]))):
        names.append(found["next"].rsplit("/", 1)[1])
    return names


def entries(site: Site, name: str) -> list[str]:
    return [e.link.rsplit("/", 1)[1] for e in parsed(site.out / name).entries]


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

    # Seven updates since bingbot's fetch at 00:30, at most three a page. Later pages are
    # numbered as they open (the oldest updates first) and linked newest first.
    pages = feed_names(site)
    assert pages == ["atom.xml", "atom-3.xml", "atom-2.xml"]
    assert [entries(site, name) for name in pages] == [
        ["p7.html", "p6.html", "p5.html"],
        ["p4.html"],
        ["p3.html", "p2.html", "p1.html"],
    ]
    feeds = [parsed(site.out / name) for name in pages]
    assert links(feeds[1])["previous"] == "https://example.com/atom.xml"
    assert links(feeds[2])["first"] == "https://example.com/atom.xml"
    assert links(feeds[0])["last"] == "https://example.com/atom-2.xml"
    for name in pages:
        ATOM_RNG.assertValid(etree.parse(str(site.out / name)))
    assert feed_names(site, "rss") == ["rss.xml", "rss-3.xml", "rss-2.xml"]
    assert [len(parsed(site.out / n).entries) for n in feed_names(site, "rss")] == [3, 1, 3]

    report = json.loads(site.cli("status", "--json").stdout)
    assert report["crawlers"] == {"bingbot": at(0, 30), "googlebot": at(2, 10)}
    assert report["feed_later_pages"] == 2
    assert report["crawl_problems"] == [
        {
            "loc": "https://example.com/p9.html",
            "crawler": "googlebot",
            "status": 404,
            "at": at(2, 50),
            "message": f"https://example.com/p9.html: googlebot got 404 at {at(2, 50)}",
        }
    ]
    verify = site.cli("verify", check=False)
    assert verify.returncode == 1
    assert "https://example.com/p9.html: googlebot got 404" in verify.stdout

    # Both crawlers fetch the first page; then one more update. Entries never move
    # between later pages: the update pushes p5 onto the newest later page, which has
    # room, and the oldest page keeps its bytes.
    with log.open("a") as handle:
        handle.write(log_line(at(3, 25), "/rss.xml", 200, BINGBOT))
        handle.write(log_line(at(3, 25), "/atom.xml", 200, GOOGLEBOT))
        handle.write(log_line(at(3, 26), "/p9.html", 200, GOOGLEBOT))
    oldest_page = (site.out / "atom-2.xml").read_bytes()
    site.write("p8.html", page("P8", "v2"))
    build_at(site, at(3, 30))
    assert [entries(site, name) for name in feed_names(site)] == [
        ["p8.html", "p7.html", "p6.html"],
        ["p5.html", "p4.html"],
        ["p3.html", "p2.html", "p1.html"],
    ]
    assert (site.out / "atom-2.xml").read_bytes() == oldest_page
    assert json.loads(site.cli("status", "--json").stdout)["crawl_problems"] == []

    # An hour on, the first page drops what both crawlers fetched there (p7, p6), but the
    # later pages stay: no crawler has read them yet. A HEAD request reads nothing.
    with log.open("a") as handle:
        handle.write(log_line(at(4, 35), "/atom-2.xml", 200, GOOGLEBOT).replace("GET", "HEAD"))
    build_at(site, at(4, 40))
    assert [entries(site, name) for name in feed_names(site)] == [
        ["p8.html"],
        ["p5.html", "p4.html"],
        ["p3.html", "p2.html", "p1.html"],
    ]

    # A page goes once every crawler has fetched it since it last took entries.
    with log.open("a") as handle:
        handle.write(log_line(at(4, 45), "/rss-3.xml", 200, BINGBOT))
        handle.write(log_line(at(4, 45), "/rss-2.xml", 200, BINGBOT))
        handle.write(log_line(at(4, 45), "/atom-3.xml", 200, GOOGLEBOT))
    build_at(site, at(4, 50))
    assert feed_names(site) == ["atom.xml", "atom-2.xml"]
    assert not (site.out / "atom-3.xml").exists()
    assert not (site.out / "rss-3.xml").exists()
    with log.open("a") as handle:
        handle.write(log_line(at(4, 55), "/atom-2.xml?utm=x", 304, GOOGLEBOT))
    build_at(site, at(5))
    assert feed_names(site) == ["atom.xml"]
    assert feed_names(site, "rss") == ["rss.xml"]
    assert not (site.out / "atom-2.xml").exists()
    assert json.loads(site.cli("status", "--json").stdout)["feed_later_pages"] == 0

    # Forged "crawler" fetches of every page cannot drop the updates of the last hour (p8,
    # which no crawler had fetched, moved to a later page with two of them).
    for n in (0, 9, 1, 2, 3):
        site.write(f"p{n}.html", page(f"P{n}", "v3"))
    build_at(site, at(5, 10))
    with log.open("a") as handle:
        for name in ("/atom.xml", "/atom-4.xml", "/rss.xml", "/rss-4.xml"):
            handle.write(log_line(at(5, 15), name, 200, GOOGLEBOT))
            handle.write(log_line(at(5, 15), name, 200, BINGBOT))
    build_at(site, at(5, 20))
    listed = [loc for name in feed_names(site) for loc in entries(site, name)]
    assert sorted(listed) == ["p0.html", "p1.html", "p2.html", "p3.html", "p8.html", "p9.html"]


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

    from daemon_harness import http_port, start

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


def test_a_first_build_s_newest_lastmods_fill_the_first_page(site: Site) -> None:
    # A list's order says nothing of its lines' age: of a first build's URLs the newest
    # lastmods fill the first page, not the list's last lines.
    listing = site.base / "urls.txt"
    root = "https://example.com/"
    listing.write_text(
        f"{root}old1.html\t2020-01-01T00:00:00Z\n{root}fresh1.html\n"
        f"{root}old2.html\t2020-01-02T00:00:00Z\n{root}fresh2.html\n"
    )
    site.configure(
        extra='[feed]\ntitle = "T"\nmax_entries = 2\n'
        f'[[source]]\ntype = "urllist"\npath = "{listing}"\nname = "list"\n'
    )
    build_at(site, at(0))
    assert sorted(entries(site, "atom.xml")) == ["fresh1.html", "fresh2.html"]


def test_a_batch_s_newest_lastmods_fill_the_first_page(site: Site) -> None:
    # An export newest first: of the lines one build changes, the newest lastmods fill
    # the first page, not the list's last (oldest) lines.
    listing = site.base / "urls.txt"
    root = "https://example.com/"
    names = ("a", "b", "c", "d")
    listing.write_text("".join(f"{root}{n}.html\t2020-01-01T00:00:00Z\n" for n in names))
    site.configure(
        extra='[feed]\ntitle = "T"\nmax_entries = 2\n'
        f'[[source]]\ntype = "urllist"\npath = "{listing}"\nname = "list"\n'
    )
    build_at(site, at(0))
    dated = zip(names, ("2021-01-04", "2021-01-03", "2021-01-02", "2021-01-01"), strict=True)
    listing.write_text("".join(f"{root}{n}.html\t{day}T00:00:00Z\n" for n, day in dated))
    build_at(site, at(1))
    assert entries(site, "atom.xml") == ["a.html", "b.html"]


def test_a_url_gone_and_back_in_one_run_is_journalled_in_that_order(tmp_path: Path) -> None:
    # A change log's reads of one run: a post trashed, then restored. Its entries keep
    # their order when the run's are renumbered by lastmod: its newest says it is back.
    from sitemapd.core.observation import ArticleMeta, Changes
    from sitemapd.ledger import history
    from sitemapd.ledger.ledger import Ledger
    from sitemapd.ledger.shards import Limits

    meta = ArticleMeta(None, None, None, False, (), ())

    def read(*rows: tuple[str, bool, str]) -> Changes:
        locs = [f"https://example.com/{loc}" for loc, _, _ in rows]
        n = len(rows)
        deleted, times = [d for _, d, _ in rows], [t for _, _, t in rows]
        return Changes("log", locs, deleted, [None] * n, times, [None] * n, [meta] * n)

    ledger = Ledger(tmp_path / "ledger.sqlite3", Limits(1000, 50_000_000))
    ledger.apply([read(("a", False, at(0)), ("z", False, at(0)))], now=at(1))
    ledger.apply([read(("a", True, at(2))), read(("a", False, at(3)))], now=at(4))
    url = history.url_state(ledger.conn, "https://example.com/a")
    assert url is not None
    kinds = [change["kind"] for change in history.changes(ledger.conn, url, 10)]
    assert kinds[:2] == ["new", "gone"], kinds  # newest first
    ledger.close()
