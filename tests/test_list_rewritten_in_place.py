"""A URL list rewritten in place while a build reads it: the build fails with a clear
error and is retried, and the process is never killed.

A mapped file that shrinks under its reader raises SIGBUS when a page past its new end
is touched; the list is therefore read with `preadv`, where a truncated file gives a
short read.
"""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import pytest
from conftest import Site, write_atomic

from sitemapd.core.fileread import BLOCK, FileBytes, FileShrank
from sitemapd.sources import listchunks

ROOT = "https://example.com/"


def list_bytes(count: int) -> bytes:
    return "".join(f"{ROOT}s/{n}.html\t2024-01-01T00:00:00+00:00\n" for n in range(count)).encode()


def test_a_list_truncated_while_being_cut_raises_not_kills(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    path.write_bytes(list_bytes(300_000))  # more than a read at a time
    with path.open("rb") as handle:
        chunks = listchunks.cut(handle)
        first = next(chunks)
        os.truncate(path, first.end + 10)
        with pytest.raises(FileShrank):  # an OSError: a build that reads one fails
            list(chunks)


def test_a_file_truncated_while_being_read_raises_not_kills(tmp_path: Path) -> None:
    path = tmp_path / "urls.txt"
    data = list_bytes(300_000)  # more than a read at a time
    path.write_bytes(data)
    with path.open("rb") as handle:
        read = FileBytes(handle.fileno(), len(data))
        try:
            assert read.view(0, 100).tobytes() == data[:100]
            os.truncate(path, 1000)
            with pytest.raises(FileShrank):  # what hashing the known chunks gets
                read.view(len(data) - 100, len(data))
        finally:
            read.close()


def test_bytes_read_by_offset_in_any_order_are_the_files(tmp_path: Path) -> None:
    data = random.Random(7).randbytes(100_000).replace(b"\n", b"-")
    lines = bytearray(data)
    for at in random.Random(8).sample(range(len(lines)), 40):
        lines[at] = ord("\n")
    path = tmp_path / "file"
    path.write_bytes(lines)
    rng = random.Random(9)
    with path.open("rb") as handle:
        read = FileBytes(handle.fileno(), len(lines), block=4096)
        try:
            # Forwards, backwards from the end (as a recut's tail is hashed), at random.
            spans = [
                (at, min(len(lines), at + rng.randint(0, 9000))) for at in range(0, 100_000, 997)
            ]
            spans += reversed(spans)
            spans += [tuple(sorted(rng.sample(range(len(lines) + 1), 2))) for _ in range(300)]
            for start, end in spans:
                assert read.view(start, end).tobytes() == bytes(lines[start:end])
            for at in [0, *rng.sample(range(len(lines)), 200), len(lines) - 1]:
                assert read.find_line_end(at) == lines.find(b"\n", at)
        finally:
            read.close()


def test_whole_lines_read_a_buffer_at_a_time_are_the_files(tmp_path: Path) -> None:
    rng = random.Random(10)
    # Lines of every length, one of them longer than a buffer; no line end at the end.
    lines = [rng.randbytes(rng.randint(0, 300)).replace(b"\n", b"-") for _ in range(400)]
    lines.insert(200, b"x" * 10_000)
    data = b"\n".join(lines)
    path = tmp_path / "file"
    path.write_bytes(data)
    with path.open("rb") as handle, FileBytes(handle.fileno(), len(data), block=4096) as read:
        pieces, pos = [], 0
        while pos < len(data):
            buffer, lo, hi = read.lines(pos)
            pieces.append(bytes(buffer[lo:hi]))
            pos += hi - lo
    assert b"".join(pieces) == data
    assert all(piece.endswith(b"\n") for piece in pieces[:-1])
    assert not pieces[-1].endswith(b"\n")
    assert any(len(piece) > 4096 for piece in pieces)  # the long line, whole


def test_reads_at_once_and_one_after_another_read_their_own_files(tmp_path: Path) -> None:
    """Reads of BLOCK bytes hand their buffers on to the next: never two reads at once."""
    files = {
        name: random.Random(name).randbytes(size)
        for name, size in (("a", 3 * BLOCK + 5), ("b", BLOCK // 3), ("c", 2 * BLOCK))
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    a, b, c = files.values()
    for _ in range(3):
        with (
            (tmp_path / "a").open("rb") as one,
            (tmp_path / "b").open("rb") as other,
            FileBytes(one.fileno(), len(a)) as first,
            FileBytes(other.fileno(), len(b)) as second,
        ):
            for at in range(0, len(a), BLOCK // 2):
                assert first.view(at, at + 5).tobytes() == a[at : at + 5]
                assert second.view(0, len(b)).tobytes() == b
        with (tmp_path / "c").open("rb") as handle, FileBytes(handle.fileno(), len(c)) as third:
            assert third.view(BLOCK - 3, BLOCK + 3).tobytes() == c[BLOCK - 3 : BLOCK + 3]


def test_a_list_rewritten_in_place_during_builds_never_kills_them(site: Site) -> None:
    site.configure(extra='[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"')
    listing = site.base / "urls.txt"
    full = list_bytes(150_000)
    listing.write_bytes(full)
    stop = threading.Event()

    def rewrite() -> None:
        """Write the list again and again the way `>` in a shell does: truncated, then
        written a MiB at a time, alternately whole and a third of it."""
        turn = 0
        while not stop.is_set():
            data = full if turn % 2 == 0 else full[: len(full) // 3]
            with listing.open("wb") as out:
                for at in range(0, len(data), 1 << 20):
                    out.write(data[at : at + (1 << 20)])
            turn += 1

    writer = threading.Thread(target=rewrite)
    writer.start()
    try:
        results = [site.cli("build", check=False) for _ in range(6)]
    finally:
        stop.set()
        writer.join()
    for result in results:
        assert result.returncode in (0, 1), (result.returncode, result.stderr)
        if result.returncode:
            assert "changed while being read" in result.stderr, result.stderr
    write_atomic(listing, full)
    result = site.cli("build")
    assert len(site.urls()) == 150_000, result.stdout
