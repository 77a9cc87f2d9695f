"""A shard whose few members changed in place since its publish is spliced: its published
bytes with their entries replaced, its manifest likewise. Whatever the splice meets, the
files equal, byte for byte, those of a first build of the same list elsewhere."""

from __future__ import annotations

import hashlib
import random
import shutil
import sqlite3
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import Site, write_atomic
from hypothesis import given, settings
from hypothesis import strategies as st

from sitemapd.core import docdigest
from sitemapd.ledger import spool
from sitemapd.publish.manifestfile import (
    decode,
    encode_lines,
    pack,
    repack,
    spans,
    splice,
    unpack,
    with_header,
)
from sitemapd.render.members import label

# 2,900 URLs in shards of 1,000: two full shards and an open one.
COUNT = 2_900
START = datetime(2025, 1, 1, tzinfo=UTC)
LIST_SOURCE = '[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"'


def line(n: int, hours: int) -> str:
    """Return list line `n` with a datetime `hours` after 2025-01-01 (`&` and `'` in some
    URLs: their entries are escaped)."""
    stamp = (START + timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%S+00:00")
    return f"https://example.com/{f'a/{n}' if n % 7 else f'b&c{n}'}\t{stamp}"


def files(folder: Path) -> dict[str, bytes]:
    """Return the bytes of every file under `folder` (manifests included) by path."""
    return {
        str(path.relative_to(folder)): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.name.endswith(".lock")
    }


def listed(site: Site, hours: dict[int, int], extra: int = 0) -> None:
    """Write the list: line n with `hours[n]` (else n), then `extra` new lines."""
    lines = [line(n, hours.get(n, n)) for n in range(COUNT + extra)]
    write_atomic(site.base / "urls.txt", "".join(f"{text}\n" for text in lines))


@pytest.fixture
def listing(site: Site) -> Site:
    """A site over a list of `COUNT` URLs in shards of 1,000, built once."""
    site.configure(sitemap="max_urls = 1000", extra=LIST_SOURCE)
    listed(site, {})
    site.build()
    return site


def fresh(tmp_path: Path, site: Site) -> dict[str, bytes]:
    """Return the files a first build of `site`'s list gives in a folder of its own."""
    (tmp_path / "fresh").mkdir(parents=True)
    other = Site(tmp_path / "fresh")
    other.configure(sitemap="max_urls = 1000", extra=LIST_SOURCE)
    write_atomic(other.base / "urls.txt", (site.base / "urls.txt").read_bytes())
    other.build()
    return files(other.out)


def republished(tmp_path: Path, site: Site) -> dict[str, bytes]:
    """Return the files a build gives from a copy of `site`'s ledger into an empty output
    folder: every shard rendered from the ledger."""
    (tmp_path / "copy").mkdir(parents=True)
    other = Site(tmp_path / "copy")
    other.configure(sitemap="max_urls = 1000", extra=LIST_SOURCE)
    write_atomic(other.base / "urls.txt", (site.base / "urls.txt").read_bytes())
    shutil.copytree(site.state, other.state, ignore=shutil.ignore_patterns("*.lock"))
    assert "spliced" not in build(other)
    return files(other.out)


def build(site: Site) -> str:
    """Build; return what it logged."""
    return site.cli("--log-level", "debug", "build").stderr


def test_changed_lines_are_spliced_into_their_shards(listing: Site, tmp_path: Path) -> None:
    # Two lines of the second shard (one of them escaped) and one of the third.
    changes = {1_400: 9_000, 1_407: 9_100, 2_500: 9_200}
    listed(listing, changes)
    logged = build(listing)
    assert "sitemap-2.xml: 2 changed entries spliced" in logged, logged
    assert "sitemap-3.xml: 1 changed entries spliced" in logged, logged
    # The first load's manifests say their members' rows: only those members are redone.
    assert "sitemap-2.xml: 2 manifest lines spliced into their members" in logged, logged
    assert "manifest is read from the ledger" not in logged, logged
    assert files(listing.out) == fresh(tmp_path, listing)
    # Again, on the spliced bytes, with one more change.
    listed(listing, {**changes, 1_407: 9_300, 10: 9_400})
    logged = build(listing)
    assert "sitemap-1.xml: 1 changed entries spliced" in logged, logged
    assert "sitemap-2.xml: 1 changed entries spliced" in logged, logged
    assert "sitemap-2.xml: 1 manifest lines spliced into their members" in logged, logged
    assert files(listing.out) == fresh(tmp_path / "again", listing)


def test_a_manifest_of_members_that_say_nothing_is_rewritten(listing: Site, tmp_path: Path) -> None:
    """A manifest written before its members said their length and rows (plain gzip
    members, as earlier releases wrote them) is read from the ledger the first time one
    of its rows changes, and written as members that say them."""
    manifest = listing.out / ".sitemapd" / "manifest" / "sitemap-2.xml.tsv.gz"
    packed = unpack(manifest.read_bytes())
    assert packed is not None
    starts = [0, *packed.ends]
    plain = [
        zlib.compress(packed.rows[s:e], 1, 31)
        for s, e in zip(starts[:-1], packed.ends, strict=True)
    ]
    manifest.write_bytes(with_header(b"".join(plain)))
    assert spans(manifest.read_bytes()) is None
    assert list(decode(manifest.read_bytes(), "old")) == list(
        decode(encode_lines(packed.rows), "new")
    )
    listed(listing, {1_401: 9_000})
    logged = build(listing)
    assert "sitemap-2.xml: 1 changed entries spliced" in logged, logged
    assert "sitemap-2.xml: its manifest is read from the ledger" in logged, logged
    assert spans(manifest.read_bytes()) is not None
    assert files(listing.out) == fresh(tmp_path, listing)


def test_a_shard_not_stored_as_published_is_rendered(listing: Site, tmp_path: Path) -> None:
    shard = listing.out / "sitemap-2.xml"
    stat = shard.stat()
    shard.write_bytes(shard.read_bytes().replace(b"a/1100<", b"a/1101<"))  # same size
    listed(listing, {1_400: 9_000})
    logged = build(listing)
    assert "sitemap-2.xml: 1 changed entries spliced" not in logged, logged
    assert shard.stat().st_mtime_ns != stat.st_mtime_ns
    assert files(listing.out) == fresh(tmp_path, listing)


def recorded(site: Site) -> dict[str, str]:
    """Return the digest the ledger records of each published file, by name."""
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        found = dict(conn.execute("SELECT name, sha256 FROM published").fetchall())
    conn.close()
    return found


def as_recorded_before(site: Site, wrong: str = "") -> None:
    """Record each published file's SHA-256, as earlier releases did (`wrong` gets one
    that is not its own)."""
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        for name in recorded(site):
            data = (site.out / name).read_bytes()
            digest = hashlib.sha256(data + (b"x" if name == wrong else b"")).hexdigest()
            conn.execute("UPDATE published SET sha256 = ? WHERE name = ?", (digest, name))
    conn.close()


def test_records_of_an_earlier_release_are_checked_by_their_own_digest(
    listing: Site, tmp_path: Path
) -> None:
    as_recorded_before(listing)
    stamps = {p.name: p.stat().st_mtime_ns for p in listing.out.iterdir() if p.is_file()}
    # Nothing changed: nothing is written, and the records stay as they were.
    assert "wrote 0 files" in listing.build().stdout
    assert {p.name: p.stat().st_mtime_ns for p in listing.out.iterdir() if p.is_file()} == stamps
    assert {len(digest) for digest in recorded(listing).values()} == {64}
    listed(listing, {1_400: 9_000})
    logged = build(listing)
    # Checked by SHA-256 and spliced; recorded anew by the digest of today.
    assert "sitemap-2.xml: 1 changed entries spliced" in logged, logged
    now = recorded(listing)
    assert now["sitemap-2.xml"] == docdigest.of((listing.out / "sitemap-2.xml").read_bytes())
    assert len(now["sitemap-1.xml"]) == len(now["sitemap-3.xml"]) == 64
    assert files(listing.out) == fresh(tmp_path, listing)
    # Spliced again, by the new record.
    listed(listing, {1_400: 9_100})
    assert "sitemap-2.xml: 1 changed entries spliced" in build(listing)
    assert files(listing.out) == fresh(tmp_path / "again", listing)


def test_a_shard_unlike_its_earlier_release_s_record_is_rendered(
    listing: Site, tmp_path: Path
) -> None:
    as_recorded_before(listing, wrong="sitemap-2.xml")
    listed(listing, {1_400: 9_000, 2_500: 9_100})
    logged = build(listing)
    assert "sitemap-2.xml: 1 changed entries spliced" not in logged, logged
    assert "sitemap-3.xml: 1 changed entries spliced" in logged, logged
    assert files(listing.out) == fresh(tmp_path, listing)


@pytest.mark.parametrize("damage", ["truncated", "missing", "edited", "flipped"])
def test_a_manifest_not_as_published_is_read_from_the_ledger(
    listing: Site, tmp_path: Path, damage: str
) -> None:
    manifest = listing.out / ".sitemapd" / "manifest" / "sitemap-2.xml.tsv.gz"
    if damage == "truncated":
        manifest.write_bytes(manifest.read_bytes()[:-100])
    elif damage == "missing":
        manifest.unlink()
    elif damage == "flipped":  # a byte of a member that holds no changed row
        data = bytearray(manifest.read_bytes())
        found = spans(bytes(data))
        assert found is not None
        assert len(found) > 1  # the changed row is in the first
        data[(found[-1].start + found[-1].end) // 2] ^= 0xFF
        manifest.write_bytes(bytes(data))
    else:  # a manifest as sitemapd writes them whose line of the changed URL differs
        packed = unpack(manifest.read_bytes())
        assert packed is not None
        manifest.write_bytes(encode_lines(packed.rows.replace(b"a/1401\t", b"a/1401\tx")))
    listed(listing, {1_401: 9_000})
    logged = build(listing)
    assert "sitemap-2.xml: 1 changed entries spliced" in logged, logged
    assert "sitemap-2.xml: its manifest is read from the ledger" in logged, logged
    assert files(listing.out) == fresh(tmp_path, listing)


def test_a_shard_a_url_joins_is_rendered(listing: Site, tmp_path: Path) -> None:
    listed(listing, {2_500: 9_000}, extra=1)  # a new URL fills the open third shard
    logged = build(listing)
    assert "sitemap-3.xml: 1 changed entries spliced" not in logged, logged
    assert files(listing.out) == fresh(tmp_path, listing)
    assert files(listing.out) == republished(tmp_path, listing)


def test_a_shard_a_url_leaves_is_rendered(listing: Site, tmp_path: Path) -> None:
    lines = [line(n, 9_000 if n == 1_400 else n) for n in range(COUNT) if n != 1_500]
    write_atomic(listing.base / "urls.txt", "".join(f"{text}\n" for text in lines))
    logged = build(listing)
    assert "spliced" not in logged, logged
    assert files(listing.out) == republished(tmp_path, listing)


def test_a_run_that_changes_many_rows_renders_in_full(listing: Site, tmp_path: Path) -> None:
    # More rows than a run notes (ledger/apply.py's NOTED_MOST): the notes stop.
    listed(listing, {n: 9_000 + n for n in range(0, COUNT, 4)})
    logged = build(listing)
    assert "spliced" not in logged, logged
    assert files(listing.out) == fresh(tmp_path, listing)
    listed(listing, {n: 9_000 + n for n in [*range(0, COUNT, 4), 1_401]})
    assert "sitemap-2.xml: 1 changed entries spliced" in build(listing)  # the next run notes


def test_a_datetime_moved_back_rewrites_the_manifest_alone(listing: Site, tmp_path: Path) -> None:
    shard = listing.out / "sitemap-2.xml"
    before = shard.stat().st_mtime_ns
    listed(listing, {1_401: 1_000})  # an earlier datetime: a new fingerprint, no new lastmod
    assert listing.build().stdout.startswith("0 new, 0 updated, 0 gone, 0 invalid; wrote 0")
    assert shard.stat().st_mtime_ns == before
    assert files(listing.out) == republished(tmp_path / "back", listing)
    listed(listing, {1_401: 1_000, 1_402: 9_000})  # then a change beside it is spliced
    assert "sitemap-2.xml: 1 changed entries spliced" in build(listing)
    assert files(listing.out) == republished(tmp_path / "then", listing)


ROWS = st.lists(
    st.tuples(st.integers(0, 10**9), st.integers(0, 3000)).map(
        lambda row: f"https://example.com/{row[0]}\t{'f' * row[1]}\t2025-01-01T00:00:00+00:00\t\n"
    ),
    max_size=400,
).map(lambda rows: "".join(rows).encode())


@settings(max_examples=60, deadline=None)
@given(rows=ROWS, cuts=st.lists(st.integers(1, 200_000), min_size=1, max_size=40), at=st.data())
def test_manifest_members_are_the_same_however_they_are_packed(
    tmp_path_factory: pytest.TempPathFactory, rows: bytes, cuts: list[int], at: st.DataObject
) -> None:
    """A first load's spool packs the rows as they come, in pieces of any size, into the
    members the publisher packs them in whole, which unpack to the rows; a splice packs
    again the member of a changed row of the same length alone, to the same bytes, and
    leaves a longer one to the whole rows."""
    path = tmp_path_factory.mktemp("spool") / "sitemap-1.xml"
    files = spool._Files(1, path)
    start = 0
    for cut in cuts * (len(rows) // sum(cuts) + 1):
        piece = rows[start : start + cut]
        files.write((b"", piece, piece.count(b"\n")))
        start += cut
    files.close()
    packed = pack(rows)
    # The whole manifest file, as the publisher writes it (moved into place as it is).
    assert spool.manifest_path(path).read_bytes() == with_header(packed)
    unpacked = unpack(with_header(packed))
    assert unpacked is not None
    assert unpacked.rows == rows
    if rows:  # one row's fingerprint changed, the same length, then a longer one
        end = rows.find(b"\n", at.draw(st.integers(0, len(rows) - 1))) + 1
        line = rows.rfind(b"\n", 0, end - 1) + 1
        for new in (rows[line:end].replace(b"\tf", b"\tg"), rows[line:end] + b"longer\n"):
            changed = rows[:line] + new + rows[end:]
            assert repack(unpacked, changed) == pack(changed)
            # Spliced as a published manifest is: the changed row's member alone.
            number = rows.count(b"\n", 0, line)
            spliced = splice(
                with_header(packed), [(number, rows[line:end], new)], rows.count(b"\n")
            )
            assert spliced == (with_header(pack(changed)) if len(new) == end - line else None)


def test_one_engine_splices_round_after_round(
    listing: Site, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """As the daemon does: one engine, one ledger connection, a change, a new URL, a
    removal and changes again, each built and published in turn, each equal to a full
    publish of the same ledger."""
    from sitemapd.config import load
    from sitemapd.engine.engine import Engine

    engine = Engine(load(listing.config))
    # (datetimes moved, URLs added at the end, URLs left out; the shards spliced)
    rounds: list[tuple[dict[int, int], int, set[int], set[str]]] = [
        ({1_401: 9_000}, 0, set(), {"sitemap-2.xml"}),
        # The open shard gains a URL: rendered in full.
        ({1_401: 9_000, 2_501: 9_100}, 1, set(), set()),
        # Again on the bytes of the last splice.
        ({1_401: 9_200, 2_501: 9_100}, 1, set(), {"sitemap-2.xml"}),
        # A URL leaves the first shard (rendered in full); 2,501 moves back (its manifest
        # line only) and 2,502 forward, into the shard published with its new URL.
        ({1_401: 9_200, 2_502: 9_300}, 1, {10}, {"sitemap-3.xml"}),
        ({1_401: 9_200, 2_502: 9_400, 20: 9_500}, 1, {10}, {"sitemap-1.xml", "sitemap-3.xml"}),
    ]
    try:
        for number, (hours, extra, removed, expected) in enumerate(rounds):
            lines = [line(n, hours.get(n, n)) for n in range(COUNT + extra) if n not in removed]
            write_atomic(listing.base / "urls.txt", "".join(f"{text}\n" for text in lines))
            caplog.clear()
            with caplog.at_level("DEBUG", logger="sitemapd.publish"):
                engine.build()
            logged = [record.getMessage() for record in caplog.records]
            assert {text.split(":")[0] for text in logged if "spliced" in text} == expected
            assert files(listing.out) == republished(tmp_path / str(number), listing), number
    finally:
        engine.close()


def test_manifest_members_larger_than_a_read_unpack_to_their_rows() -> None:
    """Rows that compress badly (random fingerprints) make members of more compressed
    bytes than unpack inflates at a time: they unpack to the rows all the same, and a
    damaged or cut member to nothing."""
    chance = random.Random(7)
    rows = "".join(
        f"https://example.com/{n}\t{chance.randbytes(48).hex()}\t2025-01-01T00:00:00+00:00\t\n"
        for n in range(4000)
    ).encode()
    packed = pack(rows)
    unpacked = unpack(with_header(packed))
    assert unpacked is not None
    assert unpacked.rows == rows
    assert b"".join(unpacked.members) == packed
    assert min(map(len, unpacked.members[:-1])) > 16384
    assert unpack(with_header(packed[:-9])) is None
    assert unpack(with_header(packed[:5000] + b"x" + packed[5001:])) is None
    # Each member's header says its rows; one that says other than it holds is refused.
    found = spans(with_header(packed))
    assert found is not None
    assert sum(span.rows for span in found) == 4000
    lying = bytearray(with_header(packed))
    lying[found[0].start + 20] += 1  # the first member's rows, as its header says them
    assert unpack(bytes(lying)) is None
    first = rows[: rows.index(b"\n") + 1]
    assert splice(bytes(lying), [(0, first, first)], 4000) is None
    assert splice(with_header(packed), [(0, first, first)], 4000) == with_header(packed)
    # A byte of a member that a splice leaves as it is, damaged: told from its header's
    # CRC, without inflating it; so is a length that would not move a reader past the
    # header (read again and again, it would hold the publish forever).
    last = found[-1]
    damaged = bytearray(with_header(packed))
    damaged[(last.start + last.end) // 2] ^= 0xFF
    assert spans(bytes(damaged)) is None
    assert splice(bytes(damaged), [(0, first, first)], 4000) is None
    stuck = bytearray(with_header(packed))
    stuck[found[1].start + 16 : found[1].start + 20] = bytes(4)  # its length: 0
    assert label(bytes(stuck), found[1].start) is None
    assert spans(bytes(stuck)) is None
