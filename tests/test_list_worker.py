"""Big URL lists parsed by a worker process: the same chunks and lines as parsing them in
the building process, whether the worker runs to the end, dies half-way, cannot start,
or is no longer wanted."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import Site

from sitemapd.core import w3c
from sitemapd.core.listlines import HELD, ListLines, Rendered
from sitemapd.core.urls import Origin, URLPolicy
from sitemapd.render.sitemap import column_entries, entry_sizes, manifest_lines
from sitemapd.sources import listworker
from sitemapd.sources.listchunks import LineParser, cut
from sitemapd.sources.listworker import ParsedChunk, parsed_chunks

ROOT = "https://example.com/"
PARSER = LineParser("list", URLPolicy(Origin.from_base_url(ROOT)))


def big_list(path: Path, lines: int = 300_000) -> Path:
    """Write a list past the worker's threshold, with lines of every kind on both sides
    of the head the building process parses itself."""
    rows = []
    for n in range(lines):
        url = f"{ROOT}section-{n % 13}/story-{n}.html"
        kind = n % 997
        if kind == 1:
            rows.append(f"{url}?a=1&b='2'")  # needs escaping
        elif kind == 2:
            rows.append(f"{ROOT}./dots/../story-{n}.html")  # not canonical: normalised
        elif kind == 3:
            rows.append(f"https://other.example/{n}")  # another site: rejected
        elif kind == 4:
            rows.append(f"{url}\tnot a date")  # rejected
        elif kind == 5:
            rows.append("# a comment")
        elif kind == 6:
            rows.append(f"{url}\t2021-03-04T05:06:07Z\r")  # CRLF, Z for +00:00
        elif kind == 7:
            rows.append(f"{ROOT}caf\u00e9/{n}")  # non-ASCII: percent-encoded
        elif kind == 8:
            rows.append("")
        else:
            rows.append(f"{url}\t2020-{1 + n % 12:02d}-{1 + n % 28:02d}T10:00:00+00:00")
    data = ("\n".join(rows) + "\n").encode()
    # A line that is not UTF-8, past the head.
    data += f"{ROOT}latin-1-\xe9\n".encode("latin-1") + f"{ROOT}last\n".encode()
    path.write_bytes(data)
    assert len(data) >= listworker._ELSEWHERE
    return path


def here(path: Path) -> list[ParsedChunk]:
    """Return the chunks of the list at `path`, all parsed in this process."""
    with path.open("rb") as handle:
        return [
            ParsedChunk(
                c.pos, c.first_line, c.digest, c.end, PARSER.parse(c.data, c.first_line, c.lines)
            )
            for c in cut(handle)
        ]


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[bytes]]:
    """Record the workers `parsed_chunks` starts."""
    workers: list[subprocess.Popen[bytes]] = []
    start = listworker._start

    def recorded(*args: object) -> subprocess.Popen[bytes] | None:
        worker = start(*args)  # type: ignore[arg-type]
        if worker is not None:
            workers.append(worker)
        return worker

    monkeypatch.setattr(listworker, "_start", recorded)
    return workers


def test_a_worker_parses_as_this_process_does(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    path = big_list(tmp_path / "urls.txt")
    with path.open("rb") as handle:
        chunks = list(parsed_chunks(PARSER, handle))
    assert len(started) == 1
    assert started[0].returncode == 0
    expected = here(path)
    assert chunks == expected
    # The worker's part is most of the list, and holds rejects of every kind.
    head = sum(1 for c in cut(path.open("rb")) if c.start < listworker._HEAD)
    assert len(expected) > 2 * head
    late = [r.reason for c in expected[head:] for r in c.parsed.rejects]
    assert any("not valid UTF-8" in r for r in late)
    assert any("bad datetime" in r for r in late)
    assert any("%C3%A9" in loc for c in expected[head:] for loc, _ in c.parsed.lines)
    # Chunks whose lines all have a datetime come with their entries, manifest lines and
    # entry sizes, as a first load formats them when the datetimes are its lastmods.
    formatted = 0
    for chunk in chunks[head:]:
        lines = chunk.parsed.lines
        assert isinstance(lines, ListLines)
        if lines.rendered is None:
            assert "" in lines.stamps or HELD in lines.stamps
            continue
        formatted += 1
        locs, stamps = lines.locs, lines.stamps
        entries, manifest, latest, sizes, capped = lines.rendered
        assert capped == ""
        assert entries == column_entries(locs, stamps).encode()
        assert manifest == manifest_lines(locs, stamps, stamps).encode()
        assert latest == max(stamps)
        assert list(sizes) == entry_sizes(locs)
    assert formatted > 0


def test_a_list_dated_past_the_build_s_time_comes_formatted_with_it(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    path = tmp_path / "urls.txt"
    stamps = [w3c.format_epoch(1_600_000_000 + n * 97) for n in range(300_000)]
    path.write_text("".join(f"{ROOT}s/story-{n}.html\t{t}\n" for n, t in enumerate(stamps)))
    now = stamps[200_000]
    parser = LineParser("list", URLPolicy(Origin.from_base_url(ROOT)), now)
    with path.open("rb") as handle:
        chunks = list(parsed_chunks(parser, handle))
    assert len(started) == 1
    kinds = {"past": 0, "late": 0, "both": 0}
    for chunk in chunks:
        lines = chunk.parsed.lines
        assert isinstance(lines, ListLines)
        if lines.rendered is None:  # the head the building process parses, or both
            kinds["both"] += min(lines.stamps) <= now < max(lines.stamps)
            continue
        locs, stamps_of = lines.locs, lines.stamps
        late = min(stamps_of) > now
        kinds["late" if late else "past"] += 1
        lastmods = [now] * len(locs) if late else stamps_of
        assert lines.rendered.capped == (now if late else "")
        assert lines.rendered.latest == max(stamps_of)
        assert lines.rendered.entries == column_entries(locs, lastmods).encode()
        assert lines.rendered.manifest == manifest_lines(locs, stamps_of, lastmods).encode()
    assert kinds["both"] == 1
    assert kinds["past"] > 10
    assert kinds["late"] > 10


def test_a_worker_stopped_and_continued_sends_every_chunk_whole(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    """A build stopped and continued (Ctrl-Z, `fg`) while the worker waits on a full pipe:
    a write cut short by the stop goes on where it stopped, neither lost nor repeated."""
    path = big_list(tmp_path / "urls.txt")
    expected = here(path)
    pokes = 0

    def poke(worker: subprocess.Popen[bytes]) -> None:
        nonlocal pokes
        while worker.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGSTOP)
                time.sleep(0.001)
                os.kill(worker.pid, signal.SIGCONT)
                pokes += 1
            time.sleep(0.002)

    chunks: list[ParsedChunk] = []
    poker: threading.Thread | None = None
    with path.open("rb") as handle:
        for chunk in parsed_chunks(PARSER, handle):
            if poker is None and started:
                poker = threading.Thread(target=poke, args=(started[0],))
                poker.start()
            chunks.append(chunk)
            time.sleep(0.002)  # slower than the worker: its pipe stays full
    assert poker is not None
    poker.join()
    assert started[0].returncode == 0
    assert pokes > 10
    assert chunks == expected
    rendered = [c.parsed.lines for c in chunks if getattr(c.parsed.lines, "rendered", None)]
    assert rendered
    for lines in rendered:
        assert isinstance(lines, ListLines)
        assert lines.rendered is not None
        assert lines.rendered.entries == column_entries(lines.locs, lines.stamps).encode()
        assert lines.rendered.manifest == manifest_lines(lines.locs, *[lines.stamps] * 2).encode()


def test_a_worker_that_dies_half_way_leaves_the_rest_to_this_process(
    tmp_path: Path, started: list[subprocess.Popen[bytes]], caplog: pytest.LogCaptureFixture
) -> None:
    path = big_list(tmp_path / "urls.txt")
    expected = here(path)
    chunks: list[ParsedChunk] = []
    with path.open("rb") as handle, caplog.at_level(logging.WARNING, "sitemapd.sources"):
        for chunk in parsed_chunks(PARSER, handle):
            chunks.append(chunk)
            if len(chunks) == len(expected) // 2:
                started[0].kill()
    assert chunks == expected
    assert "parsing the rest of the list in this process" in caplog.text
    assert started[0].returncode is not None


def test_a_worker_that_cannot_start_leaves_it_all_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = big_list(tmp_path / "urls.txt")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    with path.open("rb") as handle, caplog.at_level(logging.WARNING, "sitemapd.sources"):
        chunks = list(parsed_chunks(PARSER, handle))
    assert chunks == here(path)
    assert "parsing the list in this process" in caplog.text


def test_a_worker_no_longer_wanted_is_stopped(
    tmp_path: Path, started: list[subprocess.Popen[bytes]]
) -> None:
    path = big_list(tmp_path / "urls.txt")
    with path.open("rb") as handle:
        chunks = parsed_chunks(PARSER, handle)
        for _ in range(200):  # past the head: the worker's chunks are being read
            next(chunks)
        chunks.close()
    assert started[0].returncode is not None


def test_a_big_list_builds_through_the_worker(site: Site) -> None:
    """A first build of a big list through the CLI: every URL, every reject reported."""
    path = big_list(site.base / "urls.txt")
    site.configure(extra='[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"\n')
    result = site.build()
    expected = here(path)
    # A line held for its bad datetime lists no URL of a first build.
    locs = {loc for c in expected for loc, stamp in c.parsed.lines if stamp != HELD}
    rejects = sum(len(c.parsed.rejects) for c in expected)
    assert f"{len(locs)} new" in result.stdout
    assert result.stderr.count(": skipped ") == rejects
    assert set(site.urls()) == locs


def test_lines_as_columns_read_as_the_pairs_they_hold() -> None:
    pairs = [(f"{ROOT}{n}", "" if n % 3 else "2024-01-01T00:00:00+00:00") for n in range(7)]
    lines = ListLines.of(pairs)
    assert lines == pairs
    assert list(lines) == pairs
    assert len(lines) == 7
    assert lines[2] == pairs[2]
    assert lines[1:4] == pairs[1:4]
    assert lines != pairs[:6]
    assert ListLines.of(lines) is lines
    with pytest.raises(ValueError, match="7 URLs and 6 datetimes"):
        ListLines(lines.locs, lines.stamps[:6])


def test_lines_kept_by_url_keep_what_was_rendered_only_when_all_are() -> None:
    locs = [f"{ROOT}{n}" for n in range(4)]
    stamps = ["2024-01-01T00:00:00+00:00"] * 4
    done = Rendered(b"entries", b"lines", stamps[0], [1, 2, 3, 4])
    lines = ListLines(locs, stamps, done)
    assert lines.only(lambda loc: True) is lines
    odd = lines.only(lambda loc: loc.endswith(("1", "3")))
    assert odd == [(locs[1], stamps[1]), (locs[3], stamps[3])]
    assert odd.rendered is None
    assert lines[0:2].rendered is None
