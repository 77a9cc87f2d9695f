"""What a list's first load stores in fewer bytes, read back: each chunk's URL ids as a
range, and each row's `first_seen` as the load's time kept once (schema version 10).
The answers are those of a ledger an earlier release loaded (an id array a chunk, the
time in every row), which the same tests check after rewriting the ledger so."""

from __future__ import annotations

import sqlite3
from array import array
from pathlib import Path

import pytest
from conftest import Site, published

from sitemapd.core import w3c
from sitemapd.ledger import history

T = "2026-03-10T12:00:00+00:00"
LATER = "2026-03-10T13:00:00+00:00"
ORIGIN = "https://example.com/"
FIRST = "first seen in its source"
COUNT = 30_000  # about 1.8 MB: some 30 of the list's chunks, re-read a few at a time


def loc(n: int) -> str:
    return f"{ORIGIN}s/{n % 7}/story-{n}.html"


def write_list(path: Path, lines: dict[int, str]) -> None:
    path.write_text("".join(f"{loc(n)}\t{stamp}\n" for n, stamp in lines.items()))


def stamp(n: int) -> str:
    return w3c.format_epoch(w3c.to_epoch("2025-01-01T00:00:00+00:00") + n * 60)


def list_site(site: Site) -> Path:
    listing = site.base / "urls.txt"
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        f'[[source]]\ntype = "urllist"\npath = "{listing}"\nname = "list"\n'
    )
    return listing


def as_an_earlier_release(path: Path) -> None:
    """Rewrite the first load's chunk ranges as id arrays and its rows' `first_seen` as
    the load's time, as releases before schema version 10 wrote them."""
    with sqlite3.connect(path) as conn:
        ((at,),) = conn.execute("SELECT value FROM cursors WHERE name = 'first_load'")
        conn.execute("UPDATE urls SET first_seen = ? WHERE first_seen = ''", (at,))
        conn.execute("DELETE FROM cursors WHERE name = 'first_load'")
        for digest, first, count in conn.execute(
            "SELECT digest, first_id, id_count FROM list_chunk_urls"
        ).fetchall():
            ids = array("q", range(first, first + count)).tobytes()
            conn.execute(
                "UPDATE list_chunk_urls SET ids = ?, first_id = NULL, id_count = NULL "
                "WHERE digest = ?",
                (ids, digest),
            )
    conn.close()


def remembered(site: Site, url: str) -> tuple[str, list[tuple[str, str, str]]]:
    """Return the URL's first_seen and its changes (`at, kind, why`, newest first), as
    the status page's and `explain`'s history read them."""
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    try:
        state = history.url_state(conn, url)
        assert state is not None
        found = history.changes(conn, state, 10)
    finally:
        conn.close()
    return state.first_seen, [(c["at"], c["kind"], c["why"]) for c in found]


@pytest.mark.parametrize("earlier", [False, True], ids=["ranges", "earlier-release"])
def test_a_first_loads_ranges_and_first_seen_read_back(
    site: Site, monkeypatch: pytest.MonkeyPatch, earlier: bool
) -> None:
    listing = list_site(site)
    lines = {n: stamp(n) for n in range(COUNT)}
    write_list(listing, lines)
    monkeypatch.setenv("SITEMAPD_TEST_NOW", T)
    site.build()
    ledger = site.state / "ledger.sqlite3"
    conn = sqlite3.connect(ledger)
    chunks = conn.execute(
        "SELECT ids, first_id, id_count FROM list_chunk_urls ORDER BY first_id"
    ).fetchall()
    # The chunks' ranges follow one another over the list's lines, in order.
    assert len(chunks) > 2
    assert [ids for ids, _, _ in chunks] == [b""] * len(chunks)
    starts = [first for _, first, _ in chunks]
    assert starts == [1] + [first + count for _, first, count in chunks[:-1]]
    assert sum(count for _, _, count in chunks) == COUNT
    assert conn.execute("SELECT DISTINCT first_seen FROM urls").fetchall() == [("",)]
    assert conn.execute("SELECT value FROM cursors WHERE name = 'first_load'").fetchall() == [(T,)]
    conn.close()
    if earlier:
        as_an_earlier_release(ledger)
    assert remembered(site, loc(10)) == (T, [(T, "new", FIRST)])

    # A line of the middle chunk moves forward, one is dropped, one added: the chunks'
    # ids tell which URLs the re-read chunk listed before.
    middle = chunks[len(chunks) // 2][1] + 1
    lines[middle - 1] = LATER
    del lines[middle]
    lines[COUNT] = stamp(COUNT)
    write_list(listing, lines)
    monkeypatch.setenv("SITEMAPD_TEST_NOW", LATER)
    site.build()
    with sqlite3.connect(ledger) as conn:
        ((arrays,),) = conn.execute("SELECT count(*) FROM list_chunk_urls WHERE first_id IS NULL")
    conn.close()
    # Read a chunk at a time: only the chunks re-read hold arrays now (a reader that
    # missed the ranges would have read the whole list again).
    assert arrays == len(chunks) if earlier else 0 < arrays < len(chunks) // 2
    urls = published(site.out)
    assert len(urls) == COUNT
    assert urls[loc(middle - 1)] == LATER
    assert loc(middle) not in urls
    assert urls[loc(COUNT)] == stamp(COUNT)
    assert remembered(site, loc(middle - 1)) == (
        T,
        [(LATER, "updated", "its source's time for it moved forward"), (T, "new", FIRST)],
    )
    assert remembered(site, loc(COUNT)) == (LATER, [(LATER, "new", FIRST)])
    assert remembered(site, loc(COUNT - 1)) == (T, [(T, "new", FIRST)])
