"""A first build renders the shards its URL lists fill as it loads them (ledger/spool.py):
what it publishes must be what the ledger renders, byte for byte, whatever the list holds,
and nothing of the spool may stay behind."""

from __future__ import annotations

import itertools
import logging
import random
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from conftest import Site, assert_valid, page, snapshot, write_atomic
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapd.config import load
from sitemapd.core import docdigest
from sitemapd.engine.engine import Engine
from sitemapd.errors import LedgerError
from sitemapd.ledger import listfirst, spool
from sitemapd.publish import manifestfile
from sitemapd.render import members
from sitemapd.sources import listworker

SPOOLED = "entries as the first load rendered them"


def listed(site: Site, lines: list[str]) -> None:
    """Configure `site` with a URL list of `lines` (300 URLs a shard) beside its folder."""
    site.configure(
        sitemap="max_urls = 300",
        extra='[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"\n',
    )
    write_atomic(site.base / "urls.txt", "".join(f"{line}\n" for line in lines))


def first_build(site: Site) -> tuple[dict[str, bytes], int]:
    """Build `site` from an empty ledger; return what it published and how many shards
    came from the spool."""
    result = site.cli("--log-level", "debug", "build")
    assert_valid(site.out)
    assert not (site.state / "ledger.sqlite3.spool").exists()
    return published_bytes(site.out), result.stderr.count(SPOOLED)


def published_bytes(out: Path) -> dict[str, bytes]:
    """Return the bytes of every file published in `out`, and of every shard's manifest
    (which a first load spools too), by name."""
    files = {name: data for name, (_, _, data) in snapshot(out).items()}
    manifests = out / ".sitemapd" / "manifest"
    for name, (_, _, data) in snapshot(manifests).items():
        files[f"manifest/{name}"] = data
    return files


def rendered_by_the_ledger(site: Site) -> dict[str, bytes]:
    """Delete what was published and build again: the ledger renders every file anew."""
    shutil.rmtree(site.out)
    result = site.cli("--log-level", "debug", "build")
    assert SPOOLED not in result.stderr
    return published_bytes(site.out)


def assert_journal_of_a_first_load(site: Site) -> None:
    """Assert that the journal holds each live URL once, as new, in id order from seq 1."""
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        journal = conn.execute(
            "SELECT seq, url_id, kind FROM journal_entries ORDER BY seq"
        ).fetchall()
        live = [i for (i,) in conn.execute("SELECT id FROM urls WHERE status = 'live' ORDER BY id")]
    assert journal == [(seq, url_id, "new") for seq, url_id in enumerate(live, start=1)]


def build_here(site: Site, caplog: pytest.LogCaptureFixture) -> None:
    """Build `site` in this process, its debug log caught by `caplog`."""
    engine = Engine(load(site.config))
    try:
        with caplog.at_level(logging.DEBUG, logger="sitemapd"):
            engine.build()
    finally:
        engine.close()


def varied(count: int) -> list[str]:
    """Return `count` list lines of every kind a shard renders: escaped characters,
    non-ASCII paths, no datetime, datetimes in the future and in other zones."""
    lines = []
    for n in range(count):
        kind = n % 6
        url = f"https://example.com/story-{n}.html"
        if kind == 0:
            lines.append(url)
        elif kind == 1:
            lines.append(f"https://example.com/q&a/{n}?x=1&y='{n}'")
        elif kind == 2:
            lines.append(f"https://example.com/café/{n}\t2025-03-0{n % 9 + 1}T10:00:00Z")
        elif kind == 3:
            lines.append(f"{url}\t2099-01-01T00:00:00+00:00")
        elif kind == 4:
            lines.append(f"{url}\t2024-06-01T12:30:00+02:00")
        else:
            lines.append(f"{url}\t2024-06-01")
    return lines


def test_shards_rendered_while_loading_are_those_the_ledger_renders(site: Site) -> None:
    listed(site, varied(1000))
    first, spooled = first_build(site)
    shards = [name for name in first if name.startswith("sitemap-")]
    assert len(shards) == 4
    assert spooled == len(shards)
    assert len([name for name in first if name.startswith("manifest/sitemap-")]) == len(shards)
    assert b"q&amp;a" in first["sitemap-1.xml"]
    assert b"&apos;" in first["sitemap-1.xml"]
    assert first == rendered_by_the_ledger(site)


def test_entries_a_parse_worker_formatted_are_those_the_ledger_renders(
    site: Site, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Every chunk to the worker, which formats the entries and manifest lines of those
    # whose lines all have a datetime: shards of 300 URLs end within chunks of 900 lines.
    monkeypatch.setattr(listworker, "_ELSEWHERE", 0)
    monkeypatch.setattr(listworker, "_HEAD", 0)
    started = []
    start = listworker._start

    def recorded(*args: Any) -> Any:
        started.append(start(*args))
        return started[-1]

    monkeypatch.setattr(listworker, "_start", recorded)
    lines = [
        f"https://example.com/s/story-{n}.html\t2024-0{n % 9 + 1}-1{n % 10}T10:00:00+00:00"
        for n in range(9000)
    ]
    lines[3000:3300] = varied(300)  # no datetime, later ones: formatted by this process
    for n in range(6000, 6040):  # escaped in a chunk the worker formats
        lines[n] = f"https://example.com/q&a/{n}?x='{n}'\t2023-01-01T00:00:00+00:00"
    listed(site, lines)
    build_here(site, caplog)
    assert len(started) == 1
    assert started[0] is not None
    assert started[0].returncode == 0
    assert not (site.state / "ledger.sqlite3.spool").exists()
    first = published_bytes(site.out)
    assert caplog.text.count(SPOOLED) == 30
    assert b"q&amp;a/6000?x=&apos;6000&apos;" in b"".join(first.values())
    assert_journal_of_a_first_load(site)
    assert first == rendered_by_the_ledger(site)


@pytest.mark.parametrize(
    ("stamp", "lastmod"),
    [
        # Once taken as it is by the chunk pattern's `\d` (a digit of two bytes); now
        # refused, as the datetime rules say.
        ("2020-01-1\u0665T00:00:00+00:00", None),
        # Once given back by `w3c.parse` a digit short; now in four digits.
        ("0150-06-01T00:00:00Z", "0150-06-01T00:00:00+00:00"),
    ],
)
def test_a_worker_chunk_whose_entries_are_not_their_sizes_is_published_whole(
    site: Site,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    stamp: str,
    lastmod: str | None,
) -> None:
    # Sizes count a datetime as 25 ASCII bytes, which these once were not: a chunk
    # holding one was cut mid-entry where a shard ends within it.
    monkeypatch.setattr(listworker, "_ELSEWHERE", 0)
    monkeypatch.setattr(listworker, "_HEAD", 0)
    lines = [f"https://example.com/s/{n}\t2020-01-01T00:00:00+00:00" for n in range(3000)]
    lines[50] = f"https://example.com/s/50\t{stamp}"
    listed(site, lines)
    build_here(site, caplog)
    first = published_bytes(site.out)
    if lastmod is None:
        assert b"/s/50<" not in first["sitemap-1.xml"]
    else:
        assert f"/s/50</loc><lastmod>{lastmod}<".encode() in first["sitemap-1.xml"]
    assert caplog.text.count(SPOOLED) > 0
    assert first == rendered_by_the_ledger(site)


def test_a_url_listed_twice_is_rendered_by_the_ledger(site: Site) -> None:
    lines = varied(700)
    lines.insert(650, lines[10].split("\t")[0] + "\t2025-01-01T00:00:00+00:00")
    listed(site, lines)
    first, spooled = first_build(site)
    assert spooled == 0
    assert_journal_of_a_first_load(site)
    assert first == rendered_by_the_ledger(site)
    # Its last line counts, in the shard of that line.
    entries = b"".join(data for name, data in first.items() if name.startswith("sitemap-"))
    assert entries.count(b"/story-10.html<") == 1
    assert b"/story-10.html</loc><lastmod>2025-01-01T00:00:00+00:00<" in first["sitemap-3.xml"]


def test_pages_and_a_list_loaded_together_share_shards_rightly(site: Site) -> None:
    for n in range(40):
        site.write(f"page-{n}.html", page(f"Page {n}", "text " * 30))
    listed(site, varied(500))
    first, _ = first_build(site)
    assert_journal_of_a_first_load(site)
    assert first == rendered_by_the_ledger(site)
    assert first["sitemap.xml"].count(b"<sitemap>") == 2


def test_a_spool_that_cannot_be_written_costs_nothing(site: Site) -> None:
    listed(site, varied(700))
    site.state.mkdir()
    blocker = site.state / "ledger.sqlite3.spool"
    blocker.write_text("not a folder")
    result = site.cli("--log-level", "debug", "build")
    assert SPOOLED not in result.stderr
    first = published_bytes(site.out)
    assert first == rendered_by_the_ledger(site)


def test_a_spool_left_by_a_killed_build_is_not_published(site: Site) -> None:
    listed(site, varied(700))
    leftover = site.state / "ledger.sqlite3.spool"
    leftover.mkdir(parents=True)
    (leftover / "shard-1").write_text("<url><loc>https://example.com/stale</loc></url>\n")
    first, spooled = first_build(site)
    assert spooled == 3
    assert b"stale" not in first["sitemap-1.xml"]
    assert first == rendered_by_the_ledger(site)


def test_a_disk_short_of_space_is_left_to_the_ledger(
    site: Site, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    listed(site, varied(700))
    # Free space counts as short from the start: no shard is spooled. More than the disk
    # holds, not the free space of now: other tests free space meanwhile.
    monkeypatch.setattr(spool, "_RESERVE", shutil.disk_usage(site.base).total + 1)
    build_here(site, caplog)
    assert SPOOLED not in caplog.text
    assert not (site.state / "ledger.sqlite3.spool").exists()
    first = published_bytes(site.out)
    assert len([name for name in first if not name.startswith("manifest/")]) == 4
    assert first == rendered_by_the_ledger(site)


def test_a_change_log_first_load_spools_what_the_ledger_renders(site: Site) -> None:
    db = site.base / "cms.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE changes (id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT, op TEXT, "
            "changed_at TEXT, title TEXT, digest TEXT)"
        )
        # Escaped characters, times in the future, rows with a content hash and without.
        conn.executemany(
            "INSERT INTO changes (url, op, changed_at, title, digest) VALUES (?, ?, ?, ?, ?)",
            [
                (
                    f"/q&a/{n}?x='{n}'" if n % 5 == 0 else f"/story-{n}.html",
                    "upsert",
                    f"2025-0{n % 9 + 1}-01T10:00:00Z" if n % 3 else "2099-01-01T00:00:00Z",
                    f"Title {n}" if n % 2 else None,
                    f"v{n % 4}" if n % 2 else None,
                )
                for n in range(700)
            ],
        )
    conn.close()
    site.configure(
        sitemap="max_urls = 300",
        extra=f'[[source]]\ntype = "changelog"\ndsn = "sqlite:///{db}"\ntable = "changes"\n'
        '[source.columns]\ntitle = "title"\ncontent_hash = "digest"\n',
    )
    first, spooled = first_build(site)
    shards = [name for name in first if name.startswith("sitemap-")]
    assert len(shards) == 3
    assert spooled == len(shards)
    assert b"q&amp;a" in first["sitemap-1.xml"]
    assert first == rendered_by_the_ledger(site)


def test_moved_shards_are_recorded_as_published(site: Site) -> None:
    listed(site, varied(1000))
    first, spooled = first_build(site)
    assert spooled == 4
    stamps = {p.name: p.stat().st_mtime_ns for p in site.out.glob("sitemap-*.xml")}
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        recorded = dict(conn.execute("SELECT name, sha256 FROM published").fetchall())
    conn.close()
    for name in stamps:
        assert recorded[name] == docdigest.of(first[name])
    # The digests, sizes and stamps recorded are those of the files moved into place:
    # nothing looks changed, edited or lost to the next build.
    assert "wrote 0 files" in site.build().stdout
    assert site.cli("verify").returncode == 0
    assert {p.name: p.stat().st_mtime_ns for p in site.out.glob("sitemap-*.xml")} == stamps
    assert published_bytes(site.out) == first


def other_file_system(site: Site) -> Path:
    """Return /dev/shm or /var/tmp, whichever is another file system than the site's
    (the suite may run on tmpfs); skips when neither is."""
    for folder in (Path("/dev/shm"), Path("/var/tmp")):
        if folder.is_dir() and folder.stat().st_dev != site.base.stat().st_dev:
            return folder
    pytest.skip("no second file system at /dev/shm or /var/tmp")


def test_a_spool_on_another_file_system_is_copied(site: Site) -> None:
    listed(site, varied(700))
    state = Path(tempfile.mkdtemp(dir=other_file_system(site)))
    try:
        site.config.write_text(
            site.config.read_text().replace('state_dir = "state"', f'state_dir = "{state}"')
        )
        result = site.cli("--log-level", "debug", "build")
        assert result.stderr.count(SPOOLED) == 3
        assert not (state / "ledger.sqlite3.spool").exists()
        assert_valid(site.out)
        first = published_bytes(site.out)
        assert "wrote 0 files" in site.build().stdout
        assert first == rendered_by_the_ledger(site)
    finally:
        shutil.rmtree(state, ignore_errors=True)


def test_manifests_on_another_file_system_are_copied(site: Site) -> None:
    """Documents are moved into place, but the manifests' folder is on another file
    system: the spooled manifests are read and written there, the same bytes."""
    listed(site, varied(700))
    private = Path(tempfile.mkdtemp(dir=other_file_system(site)))
    try:
        site.out.mkdir(parents=True, exist_ok=True)
        (site.out / ".sitemapd").symlink_to(private)
        first, spooled = first_build(site)
        assert spooled == 3
        assert len(list((private / "manifest").iterdir())) == 3
        assert "wrote 0 files" in site.build().stdout
        (site.out / ".sitemapd").unlink()
        assert first == rendered_by_the_ledger(site)
    finally:
        shutil.rmtree(private, ignore_errors=True)


def test_a_spool_write_that_fails_on_its_thread_is_left_to_the_ledger(
    site: Site, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    listed(site, varied(700))
    written = spool._Files.write

    def failing(files: spool._Files, pieces: tuple[bytes, bytes]) -> None:
        if files.shard == 2:
            raise OSError(28, "No space left on device")
        written(files, pieces)

    monkeypatch.setattr(spool._Files, "write", failing)
    build_here(site, caplog)
    # Shards 1 and 3 came from the spool, shard 2 from the ledger.
    assert caplog.text.count(SPOOLED) == 2
    assert "No space left on device" in caplog.text
    assert not (site.state / "ledger.sqlite3.spool").exists()
    first = published_bytes(site.out)
    assert first == rendered_by_the_ledger(site)


def test_an_insert_that_fails_part_way_rolls_the_first_load_back(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed(site, varied(6000))  # several chunks, each inserted in several statements
    inserted = listfirst.insert_values
    calls = 0

    def failing(conn: sqlite3.Connection, *args: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise sqlite3.OperationalError("database or disk is full")
        inserted(conn, *args)

    monkeypatch.setattr(listfirst, "insert_values", failing)
    engine = Engine(load(site.config))
    try:
        with pytest.raises(LedgerError, match="disk is full"):
            engine.build()
    finally:
        engine.close()
    assert calls == 3
    assert not (site.out / "sitemap.xml").exists()
    assert not (site.state / "ledger.sqlite3.spool").exists()
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        assert conn.execute("SELECT count(*) FROM urls").fetchone() == (0,)
    monkeypatch.undo()
    first, spooled = first_build(site)
    assert spooled == 20
    assert first == rendered_by_the_ledger(site)


def test_lists_loaded_together_past_robots_rules_are_read_again_by_chunks(site: Site) -> None:
    # Rows the robots.txt rules exclude take ids between the listed ones: each chunk's ids
    # must be those of its lines, or a re-read by chunks would lose or keep URLs.
    site.write("robots.txt", "User-agent: *\nDisallow: /q&a/\n")
    site.configure(
        site='robots_txt = "site/robots.txt"',
        sitemap="max_urls = 5000",
        extra='[[source]]\ntype = "urllist"\npath = "a.txt"\nname = "a"\n'
        '[[source]]\ntype = "urllist"\npath = "b.txt"\nname = "b"\n',
    )
    lines = varied(60000)  # about 20 chunks a list
    write_atomic(site.base / "a.txt", "".join(f"{line}\n" for line in lines[:30000]))
    write_atomic(site.base / "b.txt", "".join(f"{line}\n" for line in lines[30000:]))
    first, spooled = first_build(site)
    assert spooled == 10
    assert_journal_of_a_first_load(site)
    assert b"q&amp;a" not in b"".join(first.values())
    assert first == rendered_by_the_ledger(site)
    # One line of each list dropped, one changed: read again by the chunks they are in.
    kept = lines[:100] + lines[101:30000]
    write_atomic(site.base / "a.txt", "".join(f"{line}\n" for line in kept))
    changed = [*lines[30000:50000], lines[50000].split("\t")[0], *lines[50002:]]
    write_atomic(site.base / "b.txt", "".join(f"{line}\n" for line in changed))
    result = site.cli("--log-level", "info", "build")
    assert "chunks changed" in result.stderr
    again = published_bytes(site.out)
    # What a first load of the edited lists gives, in a ledger of its own.
    shutil.rmtree(site.state)
    shutil.rmtree(site.out)
    fresh, _ = first_build(site)
    urls = {name: data for name, data in again.items() if not name.startswith("manifest/")}
    assert set(urls) == {name for name in fresh if not name.startswith("manifest/")}
    listed_now = {
        line.split("\t")[0].replace("&", "&amp;").replace("'", "&apos;")
        for line in kept + changed
        if "/q&a/" not in line
    }
    for data in (urls, fresh):
        shards = b"".join(body for name, body in data.items() if name.startswith("sitemap-"))
        assert shards.count(b"<url>") == len(listed_now)


@given(
    rows=st.lists(st.integers(1, 300), max_size=80),
    cuts=st.lists(st.integers(0, 80), max_size=12),
)
@settings(max_examples=100, deadline=None)
def test_a_manifest_spooled_in_pieces_is_the_one_packed_whole(
    rows: list[int], cuts: list[int]
) -> None:
    # The spool closes each member where it fills, counting its rows on whichever side
    # of the member's end is shorter: any cut of the same rows gives the same file.
    # (Members of 256 bytes: many in a few rows; a cut given twice, an empty piece. Rows of
    # varied bytes, as URLs are: ISA-L's deflate, fed a member in pieces, gives other
    # bytes for a few in a hundred of such members.)
    lines = b"".join(
        bytes(random.Random(n).choices(b"abcdefghijklmnop/.-0123456789", k=size - 1)) + b"\n"
        for n, size in enumerate(rows)
    )
    ends = [0, *itertools.accumulate(rows)]
    at = sorted([0, len(rows), *(cut % (len(rows) + 1) for cut in cuts)])
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(members, "MEMBER", 256):
        path = Path(tmp) / "shard-0"
        files = spool._Files(0, path)
        for first, last in itertools.pairwise(at):
            files.write((b"", lines[ends[first] : ends[last]], last - first))
        files.close()
        assert spool.manifest_path(path).read_bytes() == manifestfile.encode_lines(lines)


def test_a_shard_of_urls_spooled_in_pieces_has_the_manifest_packed_whole(tmp_path: Path) -> None:
    # A worker's chunks end anywhere in a member: a deflate fed a member's lines piece by
    # piece can give other bytes than one fed them whole (ISA-L's does, for 2 of these
    # 16 members in pieces of 13 lines), and a shard rendered later would then differ
    # from the spooled one.
    rng = random.Random(7)
    rows = [
        f"https://news.example.com/{rng.choice(['world', 'sport', 'arts'])}/{n}/"
        f"{rng.randrange(10**9):x}-story.html\t\t2026-0{n % 9 + 1}-1{n % 10}T0{n % 10}:00:00"
        "+00:00\t\n".encode()
        for n in range(12_000)
    ]
    files = spool._Files(0, tmp_path / "shard-0")
    for at in range(0, len(rows), 13):
        files.write((b"", b"".join(rows[at : at + 13]), len(rows[at : at + 13])))
    files.close()
    packed = manifestfile.encode_lines(b"".join(rows))
    assert spool.manifest_path(tmp_path / "shard-0").read_bytes() == packed
