"""Correcting one URL through the real CLI: `forget` resets its history, `reread` reads
its file again, and a publication date the page later states replaces a provisional one."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import pytest
from conftest import Site, page

from sitemapd.core import w3c

T = "2026-03-10T12:00:00+00:00"
A = "https://example.com/news/a.html"


def hours(offset: float) -> str:
    return w3c.format_epoch(w3c.to_epoch(T) + offset * 3600)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    def set_time(when: str) -> None:
        monkeypatch.setenv("SITEMAPD_TEST_NOW", when)

    return set_time


def article(body: str, published: str | None = None) -> str:
    ld = {"@type": "NewsArticle", "headline": "A"}
    if published:
        ld["datePublished"] = published
    return (
        '<!doctype html><html lang="en"><head><title>A</title>'
        f'<script type="application/ld+json">{json.dumps(ld)}</script></head>'
        f"<body><article><p>{body}</p></article></body></html>"
    )


def news_dates(site: Site) -> dict[str, str]:
    """Return `{loc: publication date}` of the news sitemap."""
    text = (site.out / "news-sitemap.xml").read_text()
    found = {}
    for item in text.split("<url>")[1:]:
        loc = item.split("<loc>")[1].split("</loc>")[0]
        found[loc] = item.split("<news:publication_date>")[1].split("<")[0]
    return found


def set_mtime(path: os.PathLike[str], when: str) -> None:
    os.utime(path, (w3c.to_epoch(when), w3c.to_epoch(when)))


def test_a_stated_publication_date_replaces_a_provisional_one(
    site: Site, clock: Callable[[str], None]
) -> None:
    site.configure(extra='[news]\npublication_name = "Times"\nlanguage = "en"\n')
    set_mtime(site.write("news/a.html", article("first")), hours(-1))
    clock(T)
    site.build()
    assert news_dates(site) == {A: hours(-1)}  # provisional: the file's time
    # The page now states when it was published: that date replaces the file's.
    site.write("news/a.html", article("first", published=hours(-5)))
    clock(hours(1))
    site.build()
    assert news_dates(site) == {A: hours(-5)}
    # A stated date is never moved by a later edit.
    site.write("news/a.html", article("second", published=hours(-3)))
    clock(hours(2))
    site.build()
    assert news_dates(site) == {A: hours(-5)}


def test_forget_starts_a_url_again(site: Site, clock: Callable[[str], None]) -> None:
    set_mtime(site.write("news/a.html", page("A", "one")), hours(-48))
    site.write("b.html", page("B"))
    clock(T)
    site.build()
    assert site.urls()[A] == hours(-48)
    site.write("news/a.html", page("A", "two"))
    clock(hours(1))
    site.build()
    assert site.urls()[A] == hours(1)
    set_mtime(site.root / "news" / "a.html", hours(-24))
    clock(hours(2))
    result = site.cli("forget", "/news/a.html")
    assert "1 new, 0 updated, 0 gone" in result.stdout
    # Read as new: its lastmod is its file's time again; the other URL is untouched.
    urls = site.urls()
    assert urls[A] == hours(-24)
    assert urls["https://example.com/b.html"] == T
    explained = site.cli("explain", A).stdout
    assert "first seen" in explained
    assert hours(2) in explained

    missing = site.cli("forget", "https://example.com/nowhere.html", check=False)
    assert missing.returncode == 1
    assert "https://example.com/nowhere.html: not in the ledger" in missing.stderr


def test_reread_finds_an_edit_that_kept_size_and_mtime(
    site: Site, clock: Callable[[str], None]
) -> None:
    path = site.write("news/a.html", page("A", "alpha"))
    clock(T)
    site.build()
    st = path.stat()
    # Same size, same inode, mtime put back: a scan cannot tell.
    with open(path, "r+b") as handle:
        handle.write(path.read_bytes().replace(b"alpha", b"omega"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    clock(hours(1))
    site.build()
    assert site.urls()[A] == T
    # Re-reading an unchanged page moves nothing; this one changed.
    site.write("b.html", page("B"))
    site.build()
    clock(hours(2))
    assert "0 new, 0 updated" in site.cli("reread", "https://example.com/b.html").stdout
    assert "0 new, 1 updated" in site.cli("reread", A).stdout
    assert site.urls()[A] == hours(2)

    listed = site.cli("reread", "https://example.com/nowhere.html", check=False)
    assert listed.returncode == 1
    assert "not a present URL read from a file" in listed.stderr
