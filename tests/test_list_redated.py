"""A list whose every line is given a new datetime (a CMS exporting its URLs again with
fresh times): every URL updated, published and journalled, newest first in the feed's
order, in memory that does not grow with the number of lines changed; and the UPDATE of
a row writing the columns that changed alone."""

from __future__ import annotations

import sqlite3
import tracemalloc
from pathlib import Path

import pytest
from conftest import Site, published

from sitemapd.config import load
from sitemapd.core import w3c
from sitemapd.engine.engine import Engine
from sitemapd.ledger.schema import URL_SELECT, update_rows
from sitemapd.ledger.urlrow import UrlRow
from sitemapd.sources import urllist

ORIGIN = "https://example.com/"
COUNT = 40_000
NOW = "2026-03-10T12:00:00+00:00"


def loc(n: int) -> str:
    return f"{ORIGIN}s/{n % 7}/story-{n}.html"


def stamp(n: int, shift: int = 0) -> str:
    return w3c.format_epoch(w3c.to_epoch("2025-01-01T00:00:00+00:00") + n * 60 + shift)


def list_site(site: Site, shift: int, shifted: int = COUNT) -> Path:
    """Write the list, its first `shifted` lines' datetimes `shift` seconds later."""
    listing = site.base / "urls.txt"
    listing.write_text(
        "".join(f"{loc(n)}\t{stamp(n, shift if n < shifted else 0)}\n" for n in range(COUNT))
    )
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        # Shards of 2,000: a publish holds one shard's text at a time.
        "[sitemap]\nmax_urls = 2000\n"
        f'[[source]]\ntype = "urllist"\npath = "{listing}"\nname = "list"\n'
    )
    return listing


def redated(site: Site, shifted: int) -> tuple[int, int]:
    """Build the list, give its first `shifted` lines new datetimes and build again in this
    process; return the URLs the second build updated and the most memory Python held."""
    list_site(site, shift=0)
    assert site.build().stdout.startswith(f"{COUNT} new, 0 updated")
    list_site(site, shift=1, shifted=shifted)
    engine = Engine(load(site.config))
    tracemalloc.start()
    try:
        result = engine.build(now=NOW)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        engine.close()
    return result.changes.updated, peak


def test_every_line_redated_updates_every_url_in_memory_that_does_not_grow(site: Site) -> None:
    updated, peak = redated(site, COUNT)
    assert updated == COUNT
    assert published(site.out) == {loc(n): stamp(n, 1) for n in range(COUNT)}
    # Each changed line held as an observation, then as a journal row, until the run's
    # end took 16 MB here; a batch at a time, under 4.
    assert peak < 8 * 2**20, peak
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    try:
        journalled = [
            url
            for (url,) in conn.execute(
                "SELECT u.loc FROM journal j JOIN urls u ON u.id = j.url_id "
                "WHERE j.kind = 'updated' ORDER BY j.seq"
            )
        ]
    finally:
        conn.close()
    # Oldest first: a feed's first page holds the run's newest changes.
    assert journalled == [loc(n) for n in range(COUNT)]


def test_a_change_too_big_to_hold_by_chunks_reads_the_whole_list(
    site: Site, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A change under half the list but over `PARSED_MOST` (scaled down here: 256 KiB
    for the 8 MiB of a list of millions) is read as a whole list is, a chunk at a time,
    rather than parsed and held by chunks: 9 MB held here before, under 6 now."""
    monkeypatch.setattr(urllist, "PARSED_MOST", 256 << 10)
    caplog.set_level("INFO", logger="sitemapd.sources")
    updated, peak = redated(site, COUNT * 45 // 100)
    assert updated == COUNT * 45 // 100
    assert "list: more than 262,144 bytes of the list changed: reading it whole" in caplog.text
    assert published(site.out) == {
        loc(n): stamp(n, 1 if n < COUNT * 45 // 100 else 0) for n in range(COUNT)
    }
    assert peak < 7 * 2**20, peak


def test_an_update_of_the_lastmod_alone_keeps_a_first_load_s_source_time(site: Site) -> None:
    """A first load stores '' as `source_time` where it is the lastmod, read through as
    the lastmod: an UPDATE moving the lastmod writes the source time out first."""
    list_site(site, shift=0)
    site.build()
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    try:
        ((stored,),) = conn.execute("SELECT source_time FROM urls WHERE loc = ?", (loc(5),))
        assert stored == ""
        row = UrlRow(
            *conn.execute(f"SELECT {URL_SELECT} FROM urls WHERE loc = ?", (loc(5),)).fetchone()
        )
        before = row.update_params()
        row.lastmod = NOW
        update_rows(conn, [(before, row.update_params())])
        ((source_time, lastmod),) = conn.execute(
            "SELECT source_time, lastmod FROM urls WHERE loc = ?", (loc(5),)
        )
    finally:
        conn.close()
    assert (source_time, lastmod) == (stamp(5), NOW)
