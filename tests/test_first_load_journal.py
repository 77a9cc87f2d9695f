"""What a first build journals, read back through every reader: a URL's history
(`explain`, the status page), the newest changes, the dry-run report, the feeds, IndexNow
and `forget`. A first load journals its URLs as runs of ids, not a row each; these answers
are those of a journal with a row a URL (a ledger of an earlier release holds those)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import feedparser
import pytest
from conftest import Site, page
from endpoints import Endpoint

from sitemapd.cli.correct import forget
from sitemapd.core import w3c
from sitemapd.core.observation import Observation
from sitemapd.ledger import history
from sitemapd.ledger.journal import count_between, first_seq_since
from sitemapd.ledger.ledger import Ledger
from sitemapd.ledger.model import RobotsRules
from sitemapd.ledger.shards import Limits
from sitemapd.status.data import _changes

T = "2026-03-10T12:00:00+00:00"
KEY = "0123456789abcdef"
ORIGIN = "https://example.com/"
# p3 says noindex and p6 names another canonical URL: the live URLs' ids have gaps.
NAMES = [f"p{n}" for n in range(9)]
Clock = Callable[[str], None]


def hours(offset: float) -> str:
    return w3c.format_epoch(w3c.to_epoch(T) + offset * 3600)


def url(name: str) -> str:
    return f"{ORIGIN}{name}.html"


@pytest.fixture
def at(monkeypatch: pytest.MonkeyPatch) -> Clock:
    def set_time(when: str) -> None:
        monkeypatch.setenv("SITEMAPD_TEST_NOW", when)

    return set_time


def write_site(site: Site, extra: str = "") -> None:
    site.configure(extra=extra)
    for name in NAMES:
        if name == "p3":
            text = page(name, name, robots="noindex")
        elif name == "p6":
            text = page(name, name, canonical=url("p0"))
        else:
            text = page(name, name)
        path = site.write(f"{name}.html", text)
        os.utime(path, (w3c.to_epoch(hours(-48)),) * 2)


def journal_lines(site: Site, name: str) -> list[str]:
    """Return the journal lines `explain` prints for `name` (none: the URL has none)."""
    out = site.cli("explain", url(name)).stdout
    if "journal:\n" not in out:
        return []
    lines = out.split("journal:\n")[1].splitlines()
    return lines[: next(n for n, line in enumerate(lines) if not line.startswith("  "))]


def newest(site: Site) -> list[tuple[int, str, str, str]]:
    """Return `(seq, page, kind, at)` of the status page's newest changes."""
    conn = sqlite3.connect(site.state / "ledger.sqlite3")
    try:
        return [
            (c["seq"], c["url"].removeprefix(ORIGIN).removesuffix(".html"), c["kind"], c["at"])
            for c in _changes(conn)
        ]
    finally:
        conn.close()


def first_build(site: Site, at: Clock) -> None:
    write_site(site)
    at(T)
    site.build()


def as_rows_of_an_earlier_release(path: Path) -> None:
    """Rewrite the first-load runs of the ledger at `path` as the row a URL that earlier
    releases wrote."""
    with sqlite3.connect(path) as conn:
        conn.execute(
            "INSERT INTO journal (seq, url_id, kind, at) SELECT r.seq + u.id - r.first_id, "
            "u.id, 'new', r.at FROM journal_runs r JOIN urls u "
            "ON u.id BETWEEN r.first_id AND r.last_id"
        )
        conn.execute("DELETE FROM journal_runs")


# The status page's newest changes after the first build: its live URLs, newest first.
FIRST = [
    (seq, name, "new", T)
    for seq, name in zip(range(7, 0, -1), ["p8", "p7", "p5", "p4", "p2", "p1", "p0"], strict=True)
]


@pytest.mark.parametrize("rows", [False, True], ids=["runs", "rows"])
def test_a_first_build_is_each_urls_first_seen_and_the_newest_changes(
    site: Site, at: Clock, rows: bool
) -> None:
    first_build(site, at)
    if rows:
        as_rows_of_an_earlier_release(site.state / "ledger.sqlite3")
    assert journal_lines(site, "p4") == [f"  {T} new: first seen in its source"]
    assert journal_lines(site, "p3") == []  # never in the sitemaps
    assert newest(site) == FIRST
    # An edit, a forgotten URL read as new, an exclusion lifted.
    site.write("p5.html", page("p5", "edited"))
    at(hours(1))
    site.build()
    site.cli("forget", url("p2"))
    site.write("p3.html", page("p3", "p3"))
    at(hours(2))
    site.build()
    assert journal_lines(site, "p5") == [
        f"  {hours(1)} updated: its page's text changed (main content not found: the whole "
        "text counts)",
        f"  {T} new: first seen in its source",
    ]
    assert journal_lines(site, "p2") == [f"  {hours(1)} new: first seen in its source"]
    assert journal_lines(site, "p3") == [
        f"  {hours(2)} new: back in the sitemaps after a removal or an exclusion"
    ]
    later = [
        (10, "p3", "new", hours(2)),
        (9, "p2", "new", hours(1)),
        (8, "p5", "updated", hours(1)),
    ]
    assert newest(site) == later + [item for item in FIRST if item[1] != "p2"]


def test_a_dry_run_of_a_first_build_lists_every_url_as_new(site: Site, at: Clock) -> None:
    write_site(site)
    at(T)
    report = json.loads(site.cli("build", "--dry-run", "--json").stdout)
    assert report["new"] == sorted(url(name) for name in NAMES if name not in ("p3", "p6"))
    assert [e["loc"] for e in report["excluded"]] == [url("p3"), url("p6")]
    site.build()
    site.write("p7.html", page("p7", "edited"))
    report = json.loads(site.cli("build", "--dry-run", "--json").stdout)
    assert (report["new"], report["updated"]) == ([], [url("p7")])


def test_the_feed_after_a_first_build_holds_its_newest_urls(site: Site, at: Clock) -> None:
    write_site(site, '[feed]\ntitle = "Updates"\nmax_entries = 3\n')
    at(T)
    site.build()

    def entries() -> list[str]:
        feed = feedparser.parse((site.out / "atom.xml").read_bytes())
        return [entry.link for entry in feed.entries]

    # The first build's newest URLs by journal order (their lastmods are alike): none on
    # a later page.
    assert entries() == [url("p8"), url("p7"), url("p5")]
    assert not list(site.out.glob("atom-*.xml"))
    site.write("p1.html", page("p1", "edited"))
    at(hours(1))
    site.build()
    assert entries() == [url("p1"), url("p8"), url("p7")]


def test_indexnow_hears_of_no_url_of_the_first_build(
    site: Site, at: Clock, endpoint: Endpoint
) -> None:
    first_build(site, at)
    site.configure(extra=f'[indexnow]\nkey = "{KEY}"\nendpoint = "{endpoint.url("/indexnow")}"\n')
    site.build()
    assert "indexnow:     0 changes waiting" in site.cli("status").stdout
    site.write("p4.html", page("p4", "edited"))
    site.cli("forget", url("p1"))
    at(hours(1))
    site.build()
    sent = [u for r in endpoint.seen("/indexnow") for u in r.json()["urlList"]]  # type: ignore[union-attr]
    assert sorted(sent) == [url("p1"), url("p4")]
    assert "indexnow:     0 changes waiting" in site.cli("status").stdout


def _observations(count: int) -> list[Observation]:
    return [
        Observation(f"{ORIGIN}{n}.html", "list", f"h{n}", "2024-01-01T00:00:00+00:00")
        for n in range(count)
    ]


@pytest.mark.parametrize("gaps", [3, 1200])
def test_a_first_load_journals_each_live_url_once_in_id_order(tmp_path: Path, gaps: int) -> None:
    """As runs while the live ids make few, a row each past that: the entries alike."""
    excluded = {f"{ORIGIN}{n}.html" for n in range(1, 2 * gaps, 2)}
    robots = RobotsRules("some", lambda loc: loc not in excluded)
    ledger = Ledger(tmp_path / "ledger.sqlite3", Limits(50_000, 52_428_800))
    ledger.apply(_observations(2 * gaps + 5), robots=robots, now=T)
    conn = ledger.conn
    live = [i for (i,) in conn.execute("SELECT id FROM urls WHERE status = 'live' ORDER BY id")]
    entries = conn.execute("SELECT seq, url_id, kind, at FROM journal_entries ORDER BY seq")
    assert entries.fetchall() == [(n, i, "new", T) for n, i in enumerate(live, start=1)]
    (rows,) = conn.execute("SELECT count(*) FROM journal").fetchone()
    assert rows == (1 if gaps < 1000 else len(live))
    assert ledger.last_seq() == len(live)
    assert ledger.cursor("journal_baseline") == str(len(live))
    ledger.close()


def _answers(path: Path) -> list[Any]:
    """Return what every journal reader answers from the ledger at `path`."""
    ledger = Ledger(path, Limits(50_000, 52_428_800))
    conn = ledger.conn
    last = ledger.last_seq()
    states = [history.url_state(conn, loc) for (loc,) in conn.execute("SELECT loc FROM urls")]
    seqs = range(last + 2)
    found = [
        last,
        [list(ledger.recent_changes(after)) for after in seqs],
        [ledger.changed_urls(a, b, n) for a in seqs for b in seqs for n in (1, 3, 100)],
        [count_between(conn, a, b) for a in seqs for b in seqs],
        [first_seq_since(conn, at, last) for at in (T, hours(0.5), hours(1), hours(2))],
        [history.changes(conn, state, n) for state in states for n in (1, 10) if state],
        _changes(conn),
    ]
    ledger.close()
    return found


def test_every_reader_answers_alike_from_runs_and_from_rows(tmp_path: Path) -> None:
    """A ledger whose first load wrote runs, and the same ledger with them rewritten as
    the rows of an earlier release, after a `forget` within a run and later changes."""
    excluded = {f"{ORIGIN}{n}.html" for n in (3, 4, 11)}
    robots = RobotsRules("some", lambda loc: loc not in excluded)
    path = tmp_path / "runs.sqlite3"
    ledger = Ledger(path, Limits(50_000, 52_428_800))
    observations = _observations(20)
    ledger.apply(observations, robots=robots, now=T)
    forget(ledger, f"{ORIGIN}7.html")  # within the second run
    edited = observations[14]._replace(content_hash="edited")
    ledger.apply([edited, *_observations(22)[20:]], robots=robots, now=hours(1))
    (runs,) = ledger.conn.execute("SELECT count(*) FROM journal_runs").fetchone()
    assert runs == 4  # 0-2, 5-6, 8-10 and 12-18 (19 is a row)
    ledger.close()
    rows = tmp_path / "rows.sqlite3"
    with sqlite3.connect(path) as source, sqlite3.connect(rows) as copy:
        source.backup(copy)
    as_rows_of_an_earlier_release(rows)
    assert _answers(path) == _answers(rows)
