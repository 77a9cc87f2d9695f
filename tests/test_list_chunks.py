"""URL lists re-read by content-defined chunks: the same result as a full read, for a
fraction of the work.

The property test edits a list at random (lines inserted, deleted, moved, repeated with
other datetimes, datetimes moved either way, bad lines) and builds two ledgers side by
side after every edit: one re-reads only the chunks it does not know, the other is made
to read the whole file (its chunk records erased first). Their ledgers, journals,
rejects and published files must be the same. Chunks are made tiny so that a few
hundred lines span dozens of them.
"""

from __future__ import annotations

import calendar
import os
import random
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import xxhash
from conftest import Site, snapshot, write_atomic
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from pyfastcdc import FastCDC

from sitemapd.config import load
from sitemapd.core import filedigest
from sitemapd.core.fileread import FileShrank
from sitemapd.core.listlines import ListLines
from sitemapd.core.observation import Item
from sitemapd.core.urls import Origin, URLPolicy
from sitemapd.engine.engine import Engine
from sitemapd.sources import listchunks, urllist

ROOT = "https://example.com/"
# 256-byte chunks on average: four or five lines each.
TINY = FastCDC(avg_size=256, min_size=64, max_size=1024)


@pytest.fixture
def tiny_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of a few KiB, and files of any size hashed from both ends on two threads."""
    monkeypatch.setattr(listchunks, "_CDC", TINY)
    monkeypatch.setattr(filedigest, "_BOTH_AT_ONCE", 0)


def line(n: int, hours: int | None, fmt: int = 0) -> str:
    url = f"{ROOT}s/{n % 7}/story-{n}.html"
    if hours is None:
        return url
    day, hour = divmod(hours, 24)
    year, month = divmod(day // 28, 12)
    stamp = f"{2020 + year}-{1 + month:02d}-{1 + day % 28:02d}T{hour:02d}:00:00"
    return f"{url}\t{stamp}{'+00:00' if fmt == 0 else 'Z'}"


LINE = st.builds(
    line,
    st.integers(0, 400),
    st.one_of(st.none(), st.integers(0, 2000)),
    st.integers(0, 1),
)
BAD = st.sampled_from(
    ["ftp://example.com/x", "https://other.org/x", f"{ROOT}x\tnot a date", "", "# comment"]
)
INDEX = st.integers(0, 10**6)
OPS = st.one_of(
    st.tuples(st.just("insert"), INDEX, st.lists(LINE, min_size=1, max_size=20)),
    st.tuples(st.just("delete"), INDEX, st.integers(1, 25)),
    st.tuples(st.just("replace"), INDEX, LINE),
    st.tuples(st.just("repeat"), INDEX, INDEX, st.integers(0, 2000)),
    st.tuples(st.just("move"), INDEX, st.integers(1, 30), INDEX),
    st.tuples(st.just("bad"), INDEX, BAD),
    st.just(("same",)),
)


def edit(lines: list[str], op: tuple[Any, ...]) -> None:
    """Apply one random edit to the list's lines."""
    kind, size = op[0], len(lines)
    if kind == "insert":
        at = op[1] % (size + 1)
        lines[at:at] = op[2]
    elif kind == "delete" and size > 1:
        at = op[1] % size
        del lines[at : at + op[2]]
    elif kind == "replace" and size:
        lines[op[1] % size] = op[2]
    elif kind == "repeat" and size:
        # The same URL again elsewhere, with another datetime.
        url = lines[op[1] % size].partition("\t")[0]
        lines.insert(op[2] % (size + 1), f"{url}\t2025-02-{1 + op[3] % 28:02d}T00:00:00Z")
    elif kind == "move" and size:
        at = op[1] % size
        block = lines[at : at + op[2]]
        del lines[at : at + op[2]]
        to = op[3] % (len(lines) + 1)
        lines[to:to] = block
    elif kind == "bad":
        lines.insert(op[1] % (size + 1), op[2])


def ledger_state(state: Path) -> dict[str, Any]:
    """Return what a build decided, in a form two ledgers can be compared by."""
    conn = sqlite3.connect(state / "ledger.sqlite3")
    try:
        return {
            "urls": conn.execute(
                "SELECT loc, status, reason, source_time, lastmod, change_count, shard, "
                "entry_bytes FROM urls ORDER BY loc"
            ).fetchall(),
            "shards": conn.execute(
                "SELECT id, url_count, bytes, lastmod FROM shards ORDER BY id"
            ).fetchall(),
            "journal": conn.execute(
                "SELECT j.kind, u.loc FROM journal_entries j JOIN urls u ON u.id = j.url_id "
                "ORDER BY j.seq"
            ).fetchall(),
            "rejects": conn.execute(
                "SELECT item, reason FROM rejects ORDER BY item, reason"
            ).fetchall(),
        }
    finally:
        conn.close()


def build(base: Path, now: str, *, whole: bool) -> None:
    if whole:
        # Erased chunk records: the list is read in full, as on its first read.
        conn = sqlite3.connect(base / "state" / "ledger.sqlite3")
        with conn:
            conn.execute("DELETE FROM list_chunks")
        conn.close()
    engine = Engine(load(base / "sitemapd.toml"))
    try:
        engine.build(now=now, confirm_removal=True)
    finally:
        engine.close()


def sites(tmp: Path) -> Iterator[Path]:
    for name in ("chunked", "whole"):
        base = tmp / name
        base.mkdir()
        (base / "sitemapd.toml").write_text(
            f'[site]\nbase_url = "{ROOT}"\noutput_dir = "out"\nstate_dir = "state"\n'
            "[sitemap]\nmax_urls = 40\n"
            '[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"\n'
        )
        yield base


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(initial=st.lists(LINE, min_size=30, max_size=250), ops=st.lists(OPS, max_size=12))
# A block moved to the top puts a URL's earlier line after its later one: no line of it
# is in a chunk the re-read parses, and its last line is another.
@example(
    initial=[
        *[line(0, None)] * 21,
        line(1, 1),
        line(2, None),
        *[line(0, None)] * 7,
        line(1, 0),
        line(2, None),
        line(2, None),
        *[line(0, None)] * 23,
    ],
    ops=[("delete", 999409, 12), ("move", 1080, 10, 0)],
)
# A block listed twice loses its second copy: the URLs it lists twice take the line of
# the block between the copies now, a chunk that did not change.
@example(
    initial=[
        *[line(300 + n, 5) for n in range(30)],
        *[line(n, 1) for n in range(60)],
        *[line(n, 100) for n in range(60)],
        *[line(n, 1) for n in range(60)],
        *[line(200 + n, 5) for n in range(30)],
    ],
    ops=[("delete", 201, 6)],
)
def test_chunked_reread_equals_a_full_read(
    tiny_chunks: None, initial: list[str], ops: list[tuple[Any, ...]]
) -> None:
    reads: list[str] = []
    changed_chunks = urllist._changed_chunks

    def counted(*args: Any) -> list[Item] | None:
        items = changed_chunks(*args)
        reads.append("whole" if items is None else "chunks")
        return items

    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as patch:
        patch.setattr(urllist, "_changed_chunks", counted)
        chunked, whole = sites(Path(tmp))
        lines = list(initial)
        for step, op in enumerate([("same",), *ops]):
            edit(lines, op)
            now = f"2026-01-01T00:{step:02d}:00+00:00"
            for base in (chunked, whole):
                write_atomic(base / "urls.txt", "".join(f"{text}\n" for text in lines))
                build(base, now, whole=base is whole and step > 0)
            where = f"step {step} {op[0]}"
            assert ledger_state(chunked / "state") == ledger_state(whole / "state"), where
            published = {n: data for n, (_, _, data) in snapshot(chunked / "out").items()}
            assert published == {n: d for n, (_, _, d) in snapshot(whole / "out").items()}, where
            event(f"edit {op[0]}")
    for read in reads:
        event(f"chunked site read {read}")


def test_a_block_listed_again_then_edited_in_one_copy_reads_as_a_whole_read(
    tiny_chunks: None,
) -> None:
    """Whole chunks listed a second time parse nothing, so which URLs the list repeats
    is not learnt; a line then re-dated in the first copy loses to its twin in the second,
    as a whole read has it (the re-read took the first copy's datetime)."""
    lines = [line(n, 10 + n) for n in range(200)]
    with tempfile.TemporaryFile() as handle:
        handle.write("".join(f"{text}\n" for text in lines).encode())
        handle.flush()
        handle.seek(0)
        cuts = list(listchunks.cut(handle))
    start, end, at = (cuts[n].first_line - 1 for n in (3, 7, 12))
    twice = lines[:at] + lines[start:end] + lines[at:]
    edited = list(twice)
    url = edited[start + 1].partition("\t")[0]
    edited[start + 1] = f"{url}\t2025-06-01T00:00:00Z"
    with tempfile.TemporaryDirectory() as tmp:
        chunked, whole = sites(Path(tmp))
        for step, listed in enumerate([lines, twice, edited]):
            for base in (chunked, whole):
                write_atomic(base / "urls.txt", "".join(f"{text}\n" for text in listed))
                build(base, f"2026-01-01T00:{step:02d}:00+00:00", whole=base is whole and step > 0)
            assert ledger_state(chunked / "state") == ledger_state(whole / "state"), step


def rebuilt(site: Site, edit: Callable[[list[str]], None]) -> tuple[dict[str, str], str]:
    """Build a 20,000-line list, `edit` its lines, build again; return the URLs and
    lastmods published before, and what the second build logged."""
    lines = [line(n, n) for n in range(20_000)]
    site.configure(extra='[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"')
    write_atomic(site.base / "urls.txt", "".join(f"{text}\n" for text in lines))
    site.cli("build")
    before = site.urls()
    edit(lines)
    write_atomic(site.base / "urls.txt", "".join(f"{text}\n" for text in lines))
    result = site.cli("--log-level", "info", "build")
    assert "list: 1 of " in result.stderr, result.stderr  # one chunk parsed
    return before, result.stdout


def test_one_changed_line_parses_one_chunk_and_writes_one_shard(site: Site) -> None:
    before, summary = rebuilt(site, lambda lines: lines.__setitem__(12_345, line(12_345, 30_000)))
    assert "wrote 2 files" in summary  # its shard and the index
    after = site.urls()
    assert {loc for loc in after if after[loc] != before[loc]} == {line(12_345, None)}


def test_a_line_inserted_at_the_top_moves_nothing_else(site: Site) -> None:
    before, _ = rebuilt(site, lambda lines: lines.insert(0, line(99_999, 5)))
    after = site.urls()
    assert set(after) - set(before) == {line(99_999, None)}
    assert all(after[loc] == before[loc] for loc in before)


def test_a_list_written_again_with_the_same_bytes_is_not_parsed(site: Site) -> None:
    lines = [line(n, n) for n in range(3_000)]
    site.configure(extra='[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"')
    listing = site.base / "urls.txt"
    write_atomic(listing, "".join(f"{text}\n" for text in lines))
    site.cli("build")
    before = site.urls()
    for again in range(2):  # a new file (inode, mtime), then the same one touched
        if again:
            os.utime(listing, ns=(1, listing.stat().st_mtime_ns + 10**9))
        else:
            write_atomic(listing, "".join(f"{text}\n" for text in lines))
        result = site.cli("--log-level", "info", "build")
        assert "chunks changed" not in result.stderr, result.stderr  # its digest alone
        assert result.stdout.startswith("0 new, 0 updated, 0 gone"), result.stdout
    assert site.urls() == before
    lines[1_234] = line(1_234, 9_000)  # the same length: only the bytes tell
    write_atomic(listing, "".join(f"{text}\n" for text in lines))
    assert site.cli("build").stdout.startswith("0 new, 1 updated"), "a change goes unseen"


@given(
    lines=st.lists(
        st.one_of(
            LINE,
            BAD,
            st.text(alphabet="ab/.%2eE&'\t:-0123456789TZ+ ", max_size=40).map(
                lambda tail: ROOT + tail
            ),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_chunk_parse_equals_line_by_line(lines: list[str]) -> None:
    parser = listchunks.LineParser("list", URLPolicy(Origin("https", "example.com")))
    data = "".join(f"{text}\n" for text in lines).encode()
    fast = parser.parse(data, 1, data.count(b"\n"))
    slow = parser._line_by_line(data, 1)
    assert fast == slow


@given(
    lines=st.lists(
        st.builds(line, st.integers(0, 400), st.integers(0, 40000), st.just(0)), max_size=40
    ),
    odd=st.lists(
        st.tuples(
            st.text(alphabet="ab/.%2eE&'\t:-0123456789TZ+ \r", max_size=40),
            st.sampled_from(["2024-02-29T00:00:00+00:00", "2023-02-29T00:00:00+00:00"]),
        ).map(lambda parts: f"{ROOT}{parts[0]}\t{parts[1]}"),
        max_size=2,
    ),
    at=st.integers(0, 40),
    ended=st.booleans(),
)
def test_a_chunk_of_dated_lines_parses_as_line_by_line(
    lines: list[str], odd: list[str], at: int, ended: bool
) -> None:
    # Lines that all have a datetime are matched whole and split into columns.
    lines[at:at] = odd
    parser = listchunks.LineParser("list", URLPolicy(Origin("https", "example.com")))
    data = "\n".join(lines).encode() + (b"\n" if ended and lines else b"")
    fast = parser.parse(data, 1, data.count(b"\n"))
    slow = parser._line_by_line(data, 1)
    assert fast == slow


@pytest.mark.parametrize("digits", ["\u0662\u0660\u0662\u0664", "\uff12\uff10\uff12\uff14"])
def test_a_datetime_in_digits_of_another_script_is_refused_as_line_by_line(digits: str) -> None:
    # Arabic-Indic and fullwidth digits are digits to a `str` pattern's `\d`, but not to
    # the datetime rules: the fast paths took such a line as canonical and published it.
    parser = listchunks.LineParser("list", URLPolicy(Origin("https", "example.com")))
    odd = f"{ROOT}a\t{digits}-01-02T03:04:05+00:00"
    for lines in ([odd], [line(1, 7), odd], [line(1, 7), f"{ROOT}b", odd]):
        data = "".join(f"{text}\n" for text in lines).encode()
        parsed = parser.parse(data, 1, len(lines))
        assert parsed == parser._line_by_line(data, 1)
        assert [reject.item for reject in parsed.rejects] == [f"{ROOT}a"]


@pytest.mark.parametrize("month", range(1, 13))
def test_a_day_past_the_28th_is_checked_against_its_month(month: int) -> None:
    # The whole-chunk pattern takes any month's days to the 31st and looks back at the
    # month from the 29th on: a day the month lacks (or February 29th, left to the full
    # rules) is refused as line by line; any other comes as columns.
    parser = listchunks.LineParser("list", URLPolicy(Origin("https", "example.com")))
    for year in (2023, 2024):
        for day in (28, 29, 30, 31, 32):
            odd = f"{ROOT}a\t{year}-{month:02d}-{day}T03:04:05+00:00"
            lines = [line(1, 7), odd, line(2, 9)]
            data = "".join(f"{text}\n" for text in lines).encode()
            parsed = parser.parse(data, 1, len(lines))
            assert parsed == parser._line_by_line(data, 1)
            real = day <= calendar.monthrange(year, month)[1] and (month, day) != (2, 29)
            assert isinstance(parsed.lines, ListLines) is real, (year, month, day)
            assert bool(parsed.rejects) is (day > calendar.monthrange(year, month)[1])


def test_a_chunk_of_canonical_dated_lines_comes_as_columns() -> None:
    parser = listchunks.LineParser("list", URLPolicy(Origin("https", "example.com")))
    lines = [line(n, n * 7) for n in range(50)]
    data = "".join(f"{text}\n" for text in lines).encode()
    parsed = parser.parse(data, 1, 50)
    assert isinstance(parsed.lines, ListLines)
    assert parsed == ([tuple(text.split("\t")) for text in lines], [])


def test_insertions_change_the_chunks_around_them_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # 4 KiB chunks: 2,000 lines make about 30. Fixed-size pieces would all change when a
    # line goes in at the top; content-defined ones change around the insertion, now and
    # then one more (FastCDC re-synchronises at the next cut point of the old content).
    monkeypatch.setattr(listchunks, "_CDC", FastCDC(avg_size=4096))
    chance = random.Random(16)
    lines = [line(n, n % 5000) for n in chance.sample(range(10**6), 2000)]
    path = tmp_path / "urls.txt"

    def chunks() -> dict[bytes, int]:
        path.write_text("".join(f"{text}\n" for text in lines))
        with path.open("rb") as handle:
            return {chunk.digest: len(chunk.data) for chunk in listchunks.cut(handle)}

    changed = []
    for n in range(40):
        before = chunks()
        lines.insert(0 if n == 0 else chance.randrange(len(lines) + 1), line(10**6 + n, 7))
        after = chunks()
        changed.append(sum(size for digest, size in after.items() if digest not in before))
    total = path.stat().st_size
    assert len(before) >= 25
    assert max(changed) <= 4 * 4096 * 4  # at most four chunks of the largest size
    assert sum(changed) / len(changed) <= total / 10


# No deadline: an example's time is the machine's load, not what is tested.
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    initial=st.lists(st.one_of(LINE, BAD), min_size=0, max_size=300),
    ops=st.lists(OPS, min_size=1, max_size=3),
)
def test_a_recut_from_the_known_chunks_equals_a_whole_cut(
    tiny_chunks: None, initial: list[str], ops: list[tuple[Any, ...]]
) -> None:
    # Edits anywhere (the head, the middle, the last bytes, the whole file, none), the
    # file growing or shrinking: hashing the known chunks in place and cutting between
    # them gives the chunks, offsets, line numbers and bytes a cut of the whole file does.
    # A file of the same size keeps the chunks' ends instead, wherever each ends a line.
    lines = list(initial)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "urls.txt"
        path.write_text("".join(f"{text}\n" for text in lines))
        with path.open("rb") as handle:
            known = [filedigest.Place(c.digest, c.end) for c in listchunks.cut(handle)]
        for op in ops:
            edit(lines, op)
        path.write_text("".join(f"{text}\n" for text in lines))
        data = path.read_bytes()
        with path.open("rb") as handle:
            whole = list(listchunks.cut(handle))
            counts = {chunk.digest: chunk.lines for chunk in whole[::2]}
            recut = list(listchunks.recut(handle, known, counts))
            if not known or len(data) != known[-1].end:
                assert recut == list(listchunks.cut(handle, counts))
                assert list(listchunks.recut(handle, known)) == whole
                event("another size")
                return
        assert_chunks_of(data, recut, counts)
        kept = kept_ends(data, known)
        assert [chunk.end for chunk in recut][: len(kept)] == kept
        event("the same size: " + ("all kept" if len(kept) == len(known) else "a stretch cut"))


def kept_ends(data: bytes, known: list[filedigest.Place]) -> list[int]:
    """Return the ends a recut of `data` (of the size of the file cut into `known`) keeps
    from the start: each chunk's whose bytes are as they were, or end a line before the
    end of the file or the next chunk's bytes as they were; up to the first that is
    neither."""

    def same(index: int, start: int) -> bool:
        place = known[index]
        return xxhash.xxh3_128_digest(data[start : place.end]) == place.digest

    ends: list[int] = []
    for index, place in enumerate(known):
        start = ends[-1] if ends else 0
        bounded = place.end == len(data) or (
            data[place.end - 1 : place.end] == b"\n" and same(index + 1, place.end)
        )
        if not (same(index, start) or bounded):
            break
        ends.append(place.end)
    return ends


def assert_chunks_of(data: bytes, chunks: list[listchunks.Chunk], counts: dict[bytes, int]) -> None:
    """Check that `chunks` cut `data` in order at line ends, each with its own place,
    digest, line numbers and bytes (none when its digest is in `counts`)."""
    start, line = 0, 1
    for pos, chunk in enumerate(chunks):
        piece = data[start : chunk.end]
        assert chunk.end == len(data) or piece.endswith(b"\n")
        assert (chunk.pos, chunk.start, chunk.first_line) == (pos, start, line)
        assert chunk.digest == xxhash.xxh3_128_digest(piece)
        assert chunk.lines == piece.count(b"\n")
        assert chunk.data == (b"" if chunk.digest in counts else piece)
        start, line = chunk.end, line + chunk.lines
    assert start == len(data)


def write_lines(path: Path, lines: list[str]) -> None:
    """Write `lines` to `path`, each ended by a line end."""
    path.write_text("".join(f"{text}\n" for text in lines))


def cut_places(path: Path, lines: list[str]) -> list[filedigest.Place]:
    """Write `lines` to `path`; return its chunks as a recut knows them."""
    write_lines(path, lines)
    with path.open("rb") as handle:
        return [filedigest.Place(c.digest, c.end) for c in listchunks.cut(handle)]


def recut_counting_cuts(path: Path, known: list[filedigest.Place]) -> tuple[list[Any], int]:
    """Return the chunks of a recut of `path` from `known`, and how many times it cut."""
    pieces = 0
    cut_buf = TINY.cut_buf

    class Counting:
        max_size = TINY.max_size

        def cut_buf(self, buf: memoryview) -> Iterator[Any]:
            nonlocal pieces
            pieces += 1
            return cut_buf(buf)

    listchunks._CDC = Counting()  # type: ignore[assignment]
    try:
        with path.open("rb") as handle:
            return list(listchunks.recut(handle, known)), pieces
    finally:
        listchunks._CDC = TINY


def test_a_recut_hashes_the_unchanged_chunks_and_cuts_only_the_changed_stretch(
    tiny_chunks: None, tmp_path: Path
) -> None:
    lines = [line(n, n) for n in range(3_000)]
    path = tmp_path / "urls.txt"
    known = cut_places(path, lines)
    lines.insert(1_500, line(10**6, 7))
    write_lines(path, lines)
    chunks, pieces = recut_counting_cuts(path, known)
    assert len(chunks) > 300
    assert 1 <= pieces <= 3  # the changed chunk, and the one or two after it


def test_a_line_of_the_same_size_changed_keeps_the_chunks_ends_and_cuts_nothing(
    tiny_chunks: None, tmp_path: Path
) -> None:
    lines = [line(n, n) for n in range(3_000)]
    path = tmp_path / "urls.txt"
    known = cut_places(path, lines)
    lines[1_500] = line(1_500, 9_999)  # another datetime: the same size
    write_lines(path, lines)
    chunks, pieces = recut_counting_cuts(path, known)
    assert pieces == 0
    assert [chunk.end for chunk in chunks] == [place.end for place in known]
    changed = [
        chunk for chunk, place in zip(chunks, known, strict=True) if chunk.digest != place.digest
    ]
    assert len(changed) == 1
    assert changed[0].data.decode().splitlines()[1_501 - changed[0].first_line] == lines[1_500]
    # A line moved further down, the same size: the chunks between hold shifted bytes, and
    # are cut from the first changed one as a file of another size would be (FastCDC
    # finds the known chunks again after it).
    lines.insert(2_500, lines.pop(500))
    write_lines(path, lines)
    chunks, pieces = recut_counting_cuts(path, known)
    assert pieces >= 1
    digests = {place.digest for place in known}
    assert sum(chunk.digest not in digests for chunk in chunks) <= 6
    # A line end moved: the chunk whose end is no longer one is cut from its start.
    at = chunks[len(chunks) // 2].end - 1
    data = bytearray(path.read_bytes())
    data[at - 1 : at + 1] = b"\nx"
    path.write_bytes(bytes(data))
    chunks, pieces = recut_counting_cuts(path, known)
    assert pieces >= 1
    assert_chunks_of(bytes(data), chunks, {})


def test_the_chunks_found_unchanged_are_known_until_the_file_is_written(
    tiny_chunks: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build's early check and its scan ask the same of the same list (`matching`,
    `ends`): the second is answered without hashing while the file's status (ctime
    included) stays, and not once the file is written."""
    lines = [line(n, n) for n in range(3_000)]
    path = tmp_path / "urls.txt"
    known = cut_places(path, lines)
    assert len(known) > 3
    lines[1_500] = line(1_500, 9_999)  # the same size
    path.write_text("".join(f"{text}\n" for text in lines))
    hashed = 0
    hashing = filedigest._Ends.found

    def counted(self: filedigest._Ends) -> filedigest.Found:
        nonlocal hashed
        hashed += 1
        return hashing(self)

    monkeypatch.setattr(filedigest._Ends, "found", counted)

    def found() -> int:
        with path.open("rb") as handle:
            return filedigest.matching(handle, known)

    first = found()
    assert 0 < first < len(known)
    assert (found(), hashed) == (first, 1)
    with path.open("rb") as handle:  # both ends were hashed: the tail is known too
        head, tail = filedigest.ends(handle, known)
    assert (head, hashed) == (first, 1)
    assert head + tail == len(known) - 1  # the changed line's chunk alone
    with path.open("rb") as handle:  # other chunks: hashed
        assert filedigest.matching(handle, [*known[:-1], known[-1]._replace(digest=b"x")])
    assert hashed == 2
    path.write_bytes(path.read_bytes())  # the same bytes, written: its ctime moves
    assert (found(), hashed) == (first, 3)


def test_a_file_cut_short_while_its_tail_is_hashed_raises(
    tiny_chunks: None, tmp_path: Path
) -> None:
    """The tail is hashed on a thread of its own: a file found shorter there than its
    size said (cut while being read) raises FileShrank in the caller, as the head does."""
    path = tmp_path / "urls.txt"
    path.write_text("".join(f"{line(n, n)}\n" for n in range(3_000)))
    with path.open("rb") as handle:
        known = [filedigest.Place(c.digest, c.end) for c in listchunks.cut(handle)]
        size = known[-1].end
        with pytest.raises(FileShrank):
            filedigest._Ends(handle.fileno(), known, size + 4096).found()
        assert filedigest._Ends(handle.fileno(), known, size).found() == (len(known), 0)
