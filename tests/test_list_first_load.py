"""What a list's first load stores in fewer bytes, read back: each chunk's URL ids as a
range, each row's `first_seen` as the load's time kept once, and its `source_time` as
'' where it is the lastmod (schema version 10). The answers are those of a ledger an
earlier release loaded (an id array a chunk, the times in every row), which the same
tests check after rewriting the ledger so."""

from __future__ import annotations

import shutil
import sqlite3
from array import array
from pathlib import Path

import pytest
from conftest import Site, published

from sitemapd.core import w3c
from sitemapd.ledger import history

T = "2026-03-10T12:00:00+00:00"
FUTURE = "2027-01-01T00:00:00+00:00"
NEXT_DAY = "2026-03-11T12:00:00+00:00"
LATER = "2026-03-10T13:00:00+00:00"
ORIGIN = "https://example.com/"
FIRST = "first seen in its source"
COUNT = 30_000  # about 1.8 MB: some 30 of the list's chunks, re-read a few at a time


def loc(n: int) -> str:
    return f"{ORIGIN}s/{n % 7}/story-{n}.html"


def write_list(path: Path, lines: dict[int, str]) -> None:
    path.write_text(
        "".join(f"{loc(n)}\t{stamp}\n" if stamp else f"{loc(n)}\n" for n, stamp in lines.items())
    )


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
        conn.execute("UPDATE urls SET source_time = lastmod WHERE source_time = ''")
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
    # In the first chunk, a line without a datetime and one dated after the build: their
    # source_time is not their lastmod, and stays written out.
    lines[3], lines[5] = "", FUTURE
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
    # The rows of the first chunk's statements are written out (a line there is not its
    # lastmod); every other row's source_time is its lastmod, stored once.
    _, first, count = chunks[0]
    written = {
        url_id: (source_time, lastmod)
        for url_id, source_time, lastmod in conn.execute(
            "SELECT id, source_time, lastmod FROM urls WHERE source_time IS NOT ''"
        )
    }
    assert set(written) <= set(range(first, first + count))
    assert written.pop(4) == (None, T)
    assert written.pop(6) == (FUTURE, T)
    assert all(time == lastmod for time, lastmod in written.values())
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
    # The chunks re-read find their other lines as listed (their stand-ins read through).
    assert site.build().stdout.startswith("1 new, 1 updated, 1 gone, 0 invalid")
    with sqlite3.connect(ledger) as conn:
        ((arrays,),) = conn.execute("SELECT count(*) FROM list_chunk_urls WHERE first_id IS NULL")
    conn.close()
    # Read a chunk at a time: of the chunks a first load wrote as ranges, only those
    # re-read whose ids are no range any more hold arrays now (a reader that missed the
    # ranges would have read the whole list again); an earlier release's arrays stay,
    # but for a re-read chunk's ids that are a range.
    if earlier:
        assert len(chunks) // 2 < arrays < len(chunks)
    else:
        assert 0 < arrays < len(chunks) // 2
    urls = published(site.out)
    assert len(urls) == COUNT
    assert urls[loc(middle - 1)] == LATER
    assert urls[loc(3)] == T  # its datetime-less line and the future one kept their rows
    assert urls[loc(5)] == T
    with sqlite3.connect(ledger) as conn:
        changed = conn.execute(
            "SELECT source_time FROM urls WHERE loc = ?", (loc(middle - 1),)
        ).fetchall()
        untouched = history.url_state(conn, loc(10))
    conn.close()
    assert changed == [(LATER,)]  # written out by the update
    assert untouched is not None
    assert untouched.source_time == stamp(10)  # read through its stand-in
    assert loc(middle) not in urls
    assert urls[loc(COUNT)] == stamp(COUNT)
    assert remembered(site, loc(middle - 1)) == (
        T,
        [(LATER, "updated", "its source's time for it moved forward"), (T, "new", FIRST)],
    )
    assert remembered(site, loc(COUNT)) == (LATER, [(LATER, "new", FIRST)])
    assert remembered(site, loc(COUNT - 1)) == (T, [(T, "new", FIRST)])


def test_a_lastmod_adopted_after_a_lost_state_keeps_the_line_s_time(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    listing = list_site(site)
    lines = {n: stamp(n) for n in range(COUNT)}
    lines[5] = LATER  # after the first build: published with the build's time
    write_list(listing, lines)
    monkeypatch.setenv("SITEMAPD_TEST_NOW", T)
    site.build()
    assert published(site.out)[loc(5)] == T
    # The state folder lost; a day later the line's time is past, and its row stores it
    # as its lastmod (source_time ''), until the published lastmod is adopted.
    shutil.rmtree(site.state)
    monkeypatch.setenv("SITEMAPD_TEST_NOW", NEXT_DAY)
    site.build()
    assert published(site.out)[loc(5)] == T
    ledger = site.state / "ledger.sqlite3"
    with sqlite3.connect(ledger) as conn:
        row = conn.execute("SELECT source_time, lastmod FROM urls WHERE loc = ?", (loc(5),))
        assert row.fetchall() == [(LATER, T)]
    conn.close()
    # A later read of its chunk finds it as listed: no lastmod moves.
    lines[7] = NEXT_DAY
    write_list(listing, lines)
    assert site.build().stdout.startswith("0 new, 1 updated, 0 gone")
    urls = published(site.out)
    assert (urls[loc(5)], urls[loc(7)]) == (T, NEXT_DAY)


def test_a_big_list_dated_past_the_build_s_time_spools_what_the_ledger_renders(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past 16 MB the parse worker formats the entries and manifest lines; where a chunk
    is dated after the build's time throughout, with that time as each lastmod."""
    listing = list_site(site)
    count = 300_000
    lines = {n: stamp(n) for n in range(count)}
    write_list(listing, lines)
    assert listing.stat().st_size >= 16 << 20
    monkeypatch.setenv("SITEMAPD_TEST_NOW", stamp(count // 2))
    log = site.cli("--log-level", "debug", "build").stderr
    assert log.count("entries as the first load rendered them") == 6  # every shard
    # The same ledger published again into an empty folder: every shard rendered from
    # the ledger, manifests included, byte for byte.
    (site.base / "again").mkdir()
    again = Site(site.base / "again")
    shutil.copytree(site.state, again.state, ignore=shutil.ignore_patterns("*.lock"))
    again.config.write_text(site.config.read_text())
    again.build()
    assert output(again.out) == output(site.out)
    urls = published(site.out)
    assert urls[loc(count - 1)] == stamp(count // 2)
    assert urls[loc(10)] == stamp(10)


def output(folder: Path) -> dict[str, bytes]:
    """Return the bytes of every file under `folder` (manifests included, the writer's
    lock files, naming their process, not) by path."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.name.endswith(".lock")
    }
