"""Correcting one URL through the real CLI: `forget` resets its history, `reread` reads
its file again, and a publication date the page later states replaces a provisional one."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Site, page, snapshot

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


def keep_size_and_mtime(path: Path, old: bytes, new: bytes) -> None:
    """Edit the file at `path` in place as `cp -p` over it does: same size, same inode,
    mtime put back (only the ctime moves)."""
    st = path.stat()
    with open(path, "r+b") as handle:
        handle.write(path.read_bytes().replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def keys_of_an_earlier_release(site: Site) -> None:
    """Write the ledger's file keys as releases before the ctime was in them did."""
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        rows = conn.execute("SELECT id, file_key FROM urls WHERE file_key IS NOT NULL").fetchall()
        conn.executemany(
            "UPDATE urls SET file_key = ? WHERE id = ?",
            [(key.rpartition(":")[0], url_id) for url_id, key in rows],
        )


def test_an_edit_that_kept_size_and_mtime_is_read_by_its_ctime(
    site: Site, clock: Callable[[str], None]
) -> None:
    path = site.write("news/a.html", page("A", "alpha"))
    clock(T)
    site.build()
    keep_size_and_mtime(path, b"alpha", b"omega")
    clock(hours(1))
    assert "0 new, 1 updated" in site.build().stdout
    assert site.urls()[A] == hours(1)


def test_keys_of_an_earlier_release_are_trusted_once_then_hold_the_ctime(
    site: Site, clock: Callable[[str], None]
) -> None:
    site.write("b.html", page("B", "beta"))
    path = site.write("news/a.html", page("A", "alpha"))
    clock(T)
    site.build()
    keys_of_an_earlier_release(site)
    # An upgrade reads no page again: the old keys still match, and are replaced.
    before = snapshot(site.out)
    assert "0 new, 0 updated" in site.build().stdout
    assert snapshot(site.out) == before
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        keys = [key for (key,) in conn.execute("SELECT file_key FROM urls")]
    assert [key.count(":") for key in keys] == [3, 3]
    keep_size_and_mtime(path, b"alpha", b"omega")
    clock(hours(1))
    assert "0 new, 1 updated" in site.build().stdout


def test_reread_finds_an_edit_a_ledger_of_an_earlier_release_cannot_tell(
    site: Site, clock: Callable[[str], None]
) -> None:
    path = site.write("news/a.html", page("A", "alpha"))
    clock(T)
    site.build()
    keys_of_an_earlier_release(site)
    # Same size, same inode, mtime put back, and a key without the ctime: a scan cannot
    # tell.
    keep_size_and_mtime(path, b"alpha", b"omega")
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
