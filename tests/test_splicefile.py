"""A published shard streamed into its successor a buffer's worth of lines at a time: the
same bytes, digest and entry numbers as the whole document rendered with the changed
entries, wherever the entries fall against the reads; a shard unlike its record, or
missing an entry, gives no document and leaves no temp file."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from sitemapd.core import docdigest
from sitemapd.core.fileread import BLOCK
from sitemapd.publish.atomic import Unsynced
from sitemapd.publish.splicefile import Spliced, spliced
from sitemapd.render.sitemap import URLSET_HEAD, url_entry

HEAD = URLSET_HEAD.encode()
STAMP = "2025-01-01T00:00:00+00:00"
# More entries than two reads hold: changes fall in every read and across their ends.
COUNT = 3 * BLOCK // 100


def loc(n: int) -> str:
    return f"https://example.com/{'a' * (n % 50)}/{n}.html"


def document(stamps: dict[int, str]) -> bytes:
    """Return the shard of COUNT entries, entry n given `stamps[n]` (else STAMP)."""
    entries = "".join(url_entry(loc(n), stamps.get(n, STAMP)) for n in range(COUNT))
    return HEAD + f"{entries}</urlset>\n".encode()


def splice(
    tmp_path: Path, published: bytes, stamps: dict[int, str], recorded: str | None = None
) -> Spliced | None:
    """Splice the entries of `stamps` into the shard `published` (recorded as `recorded`,
    by default its digest)."""
    path = tmp_path / "sitemap-1.xml"
    path.write_bytes(published)
    changes = [
        (url_entry(loc(n), STAMP).encode(), url_entry(loc(n), stamp).encode())
        for n, stamp in sorted(stamps.items())
    ]
    with path.open("rb", buffering=0) as handle:
        return spliced(
            handle, HEAD, changes, recorded or docdigest.of(published), lambda: Unsynced(path)
        )


def written(found: Spliced) -> bytes:
    """Return the bytes of the temp file `found` was written to."""
    assert isinstance(found.document, Unsynced)
    found.document.synced()
    data = found.document.temp.read_bytes()
    found.document.discard()
    return data


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob(".sitemapd-tmp-*"))


@pytest.mark.parametrize("seed", range(6))
def test_a_streamed_splice_is_the_document_rendered_with_its_changes(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    published = document({})
    # Entries at random, and the ones either side of where each read's lines end; of the
    # same length (a datetime) and of others (a date alone).
    ends, pos = [], 0
    while pos + BLOCK < len(published):
        pos = published.rfind(b"\n", pos, pos + BLOCK) + 1
        ends.append(pos)
    assert len(ends) >= 2
    near = [published.count(b"<url>", 0, end) + d for end in ends for d in (-1, 0)]
    picked = set(rng.sample(range(COUNT), 20)) | set(near) | {0, COUNT - 1}
    stamps = {n: rng.choice(["2026-02-03T04:05:06+00:00", "2026-02-03"]) for n in picked}
    found = splice(tmp_path, published, stamps)
    assert found is not None
    expected = document(stamps)
    assert written(found) == expected
    assert found.digest == docdigest.of(expected)
    assert found.numbers == sorted(picked)
    assert temps(tmp_path) == []


def test_entries_that_change_no_byte_give_the_published_bytes(tmp_path: Path) -> None:
    published = document({})
    found = splice(tmp_path, published, {5: STAMP, COUNT - 5: STAMP})
    assert found is not None
    assert found.document == published
    assert found.digest == docdigest.of(published)
    assert found.numbers == [5, COUNT - 5]
    assert temps(tmp_path) == []


def test_a_record_of_an_earlier_release_is_checked_by_sha256(tmp_path: Path) -> None:
    published = document({})
    stamps = {COUNT // 2: "2026-02-03T04:05:06+00:00"}
    found = splice(tmp_path, published, stamps, hashlib.sha256(published).hexdigest())
    assert found is not None
    assert written(found) == document(stamps)
    assert found.digest == docdigest.of(document(stamps))
    wrong = hashlib.sha256(published + b"x").hexdigest()
    assert splice(tmp_path, published, stamps, wrong) is None
    assert temps(tmp_path) == []


@pytest.mark.parametrize("damage", ["edited", "cut", "head", "inside a line", "missing"])
def test_a_shard_unlike_its_record_or_the_changes_gives_none(tmp_path: Path, damage: str) -> None:
    published = document({})
    recorded = docdigest.of(published)
    stamps = {COUNT // 2: "2026-02-03T04:05:06+00:00", COUNT - 3: "2026-02-03"}
    if damage == "edited":  # a byte past every change, in the last read
        published = published[:-12] + b"X" + published[-11:]
    elif damage == "cut":
        published = published[: len(published) // 2]
    elif damage == "head":
        published = published.replace(b"<urlset", b"<urlsex", 1)
        recorded = docdigest.of(published)
    elif damage == "inside a line":  # the changed entry only ever follows other text
        entry = url_entry(loc(COUNT // 2), STAMP).encode()
        published = published.replace(entry, b"<x/>" + entry)
        recorded = docdigest.of(published)
    else:
        published = published.replace(url_entry(loc(COUNT - 3), STAMP).encode(), b"")
        recorded = docdigest.of(published)
    assert splice(tmp_path, published, stamps, recorded) is None
    assert temps(tmp_path) == []
