"""A list whose every line is given a new datetime (a CMS exporting its URLs again with
fresh times): every URL updated, published and journalled, newest first in the feed's
order, in memory that does not grow with the number of lines changed; and the UPDATE of
a row writing the columns that changed alone."""

from __future__ import annotations

import sqlite3
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Site, published, snapshot, write_atomic
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_list_chunks import INDEX, LINE, OPS, build, edit, ledger_state
from test_list_chunks import ROOT as CHUNK_ROOT
from test_list_chunks import tiny_chunks as tiny_chunks  # the fixture, for the property test

from sitemapd.config import load
from sitemapd.core import w3c
from sitemapd.engine.engine import Engine
from sitemapd.ledger import lists
from sitemapd.ledger.redate import DECIDE, TABLE, WRITE, apply_redated
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
    # end took 16 MB here; a batch at a time, under 3.
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
        # Read whole, each chunk lists the URLs of consecutive ids: kept as their ranges,
        # as the first load wrote them, not as arrays of 8 bytes a URL.
        ((arrays, chunks),) = conn.execute(
            "SELECT count(*) - count(first_id), count(*) FROM list_chunk_urls"
        )
    finally:
        conn.close()
    assert (arrays, chunks > 10) == (0, True)
    # Oldest first: a feed's first page holds the run's newest changes.
    assert journalled == [loc(n) for n in range(COUNT)]


def test_a_change_too_big_to_hold_by_chunks_reads_the_whole_list(
    site: Site, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A change under half the list but over `PARSED_MOST` (scaled down here: 256 KiB
    for the 12 MiB of a list of millions) is read as a whole list is, a chunk at a time,
    rather than parsed and held by chunks: 8.6 MB held here by chunks, 3.5 MB read whole."""
    monkeypatch.setattr(urllist, "PARSED_MOST", 256 << 10)
    caplog.set_level("INFO", logger="sitemapd.sources")
    updated, peak = redated(site, COUNT * 45 // 100)
    assert updated == COUNT * 45 // 100
    assert "list: more than 262,144 bytes of the list changed: reading it whole" in caplog.text
    assert published(site.out) == {
        loc(n): stamp(n, 1 if n < COUNT * 45 // 100 else 0) for n in range(COUNT)
    }
    assert peak < 6 * 2**20, peak


def test_a_url_listed_undated_then_dated_moves_by_its_datetime(site: Site) -> None:
    """Undated, a URL has no source time: the datetime its line is given later is a
    change (it was compared as equal to nothing, and the lastmod stayed the first build's
    time whatever the line said)."""
    listing = list_site(site, shift=0)
    listing.write_text(f"{loc(0)}\n{loc(1)}\t{stamp(1)}\n")
    for now, text in (
        (NOW, f"{loc(0)}\n{loc(1)}\t{stamp(1)}\n"),
        (
            "2026-03-10T14:00:00+00:00",
            f"{loc(0)}\t2026-03-10T13:00:00+00:00\n{loc(1)}\t{stamp(1)}\n",
        ),
    ):
        listing.write_text(text)
        engine = Engine(load(site.config))
        try:
            result = engine.build(now=now)
        finally:
            engine.close()
    assert result.changes.updated == 1
    assert published(site.out) == {loc(0): "2026-03-10T13:00:00+00:00", loc(1): stamp(1)}


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


# Edits that re-date lines in bulk: a stretch moved by some hours either way, made
# undated, or dated past the build's time.
REDATE = st.tuples(
    st.just("redate"), INDEX, st.integers(1, 200), st.sampled_from([-30, -1, 1, 5, 24 * 800, None])
)


def redate(lines: list[str], op: tuple[Any, ...]) -> None:
    """Give a stretch of `lines` other datetimes."""
    _, at, size, hours = op
    start = at % (len(lines) + 1)
    for n in range(start, min(start + size, len(lines))):
        url, tab, stamp = lines[n].partition("\t")
        if not tab or not stamp[:1].isdigit():
            continue  # an undated or bad line: left as it is
        if hours is None:
            lines[n] = url
        else:
            at_epoch = w3c.to_epoch(stamp) + hours * 3600
            lines[n] = f"{url}\t{w3c.format_epoch(at_epoch)}"


def redate_sites(tmp: Path) -> tuple[Path, Path]:
    found = []
    for name in ("sql", "rows"):
        base = tmp / name
        base.mkdir()
        (base / "robots.txt").write_text("User-agent: *\nDisallow: /s/3/\n")
        (base / "sitemapd.toml").write_text(
            f'[site]\nbase_url = "{CHUNK_ROOT}"\noutput_dir = "out"\nstate_dir = "state"\n'
            'robots_txt = "robots.txt"\n[sitemap]\nmax_urls = 40\n'
            '[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"\n'
            '[[source]]\ntype = "urllist"\npath = "other.txt"\nname = "other"\n'
        )
        found.append(base)
    return found[0], found[1]


@pytest.mark.usefixtures("tiny_chunks")
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    initial=st.lists(LINE, min_size=30, max_size=250),
    other=st.lists(LINE, max_size=20),
    ops=st.lists(st.one_of(OPS, *[REDATE] * 6), min_size=1, max_size=10),
)
def test_lines_redated_in_sql_leave_what_row_by_row_leaves(
    initial: list[str], other: list[str], ops: list[tuple[Any, ...]]
) -> None:
    """Both ways give the same rows, shards, journal (by URL, and oldest lastmod first)
    and files, whatever the edits: URLs another list claims, ones robots.txt excludes,
    lines dated past the build's time, moved back, made undated, listed twice."""
    in_sql: list[int] = []

    def noted(run: Any, source_id: int, whole: bool, counted: Callable[[int], None]) -> None:
        def count(rows: int) -> None:
            in_sql.append(rows)
            counted(rows)

        apply_redated(run, source_id, whole, count)

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        sql, rows = redate_sites(Path(tmp))
        lines = list(initial)
        for step, op in enumerate([("same",), *ops]):
            (redate if op[0] == "redate" else edit)(lines, op)
            now = f"2026-01-01T00:{step:02d}:00+00:00"
            for base in (sql, rows):
                write_atomic(base / "urls.txt", "".join(f"{text}\n" for text in lines))
                write_atomic(base / "other.txt", "".join(f"{text}\n" for text in other))
                patch.setattr(lists, "apply_redated", noted if base is sql else lambda *args: None)
                build(base, now, whole=False)
                patch.undo()
            where = f"step {step} {op[0]}"
            one, two = ledger_state(sql / "state"), ledger_state(rows / "state")
            # Rows of one lastmod may be journalled in another order: compared by URL.
            for state in (one, two):
                state["journal"] = sorted(state["journal"], key=lambda entry: entry[1])
            assert one == two, where
            assert journal_in_lastmod_order(sql / "state", now), where
            published = {n: data for n, (_, _, data) in snapshot(sql / "out").items()}
            assert published == {n: d for n, (_, _, d) in snapshot(rows / "out").items()}, where
            event(f"edit {op[0]}")
    event(f"rows updated in SQL: {'none' if not in_sql else 'some' if sum(in_sql) < 50 else '50+'}")


def journal_in_lastmod_order(state: Path, now: str) -> bool:
    """True when the journal rows of the run at `now` come oldest lastmod first."""
    conn = sqlite3.connect(state / "ledger.sqlite3")
    try:
        found = [
            lastmod
            for (lastmod,) in conn.execute(
                "SELECT u.lastmod FROM journal j JOIN urls u ON u.id = j.url_id "
                "WHERE j.kind != 'gone' AND j.at = ? ORDER BY j.seq",
                (now,),
            )
        ]
    finally:
        conn.close()
    return found == sorted(found)


def test_a_few_lines_redated_read_only_the_rows_they_name(site: Site) -> None:
    """Each statement of the SQL path goes from the staged lines or the rows decided to
    `urls` by key: a scan of `urls` cost a changed line of a million-URL list 0.4 s."""
    list_site(site, shift=0)
    site.build()
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    try:
        conn.execute(
            "CREATE TEMP TABLE list_winners (loc TEXT PRIMARY KEY, stamp TEXT, pos INTEGER) "
            "WITHOUT ROWID"
        )
        conn.execute(TABLE)
        for statement, params in ((DECIDE, {"source": 1, "now": NOW}), (WRITE, {})):
            plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}", params)]
            assert not [step for step in plan if step.startswith("SCAN u")], plan
    finally:
        conn.close()
