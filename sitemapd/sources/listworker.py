"""A big URL list cut and parsed by a worker process, ahead of the ledger's inserts.

Parsing a million lines takes this process about a second; taking them in from a worker
takes a fifth of that. The worker (`python -m sitemapd.sources.listworker FD`) reads the
list from the descriptor it inherits and cuts and parses it as `listchunks` does. It
writes each chunk down a pipe: its place, its rejects, its URLs and datetimes as two
newline-joined strings, and, when every line has a datetime, the chunk's `<url>` entries,
manifest lines and entry sizes as a first load spools them (if none of the datetimes is
after the build's time: the building process checks), so that the building process,
whose thread runs every insert, does not format them too. The pipe holds a few chunks,
so the worker stays just ahead and memory stays flat.

Chunks arrive in file order. When no worker starts, or one fails, the chunks not yet
received are cut and parsed here: the same chunks, the same lines.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pickle
import struct
import subprocess
import sys
from array import array
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

from sitemapd.core import lifeline
from sitemapd.core.fileread import FileShrank
from sitemapd.core.listlines import HELD, ListLines, Rendered
from sitemapd.render.sitemap import column_entries, entry_sizes, manifest_lines
from sitemapd.sources.base import log
from sitemapd.sources.listchunks import Chunk, LineParser, Parsed, cut

# Lists of this many bytes or more go to a worker, but for the chunks that start in
# their first `_HEAD` bytes: this process parses those while the worker starts.
_ELSEWHERE = 16 << 20
_HEAD = 8 << 20
_PIPE_BYTES = 1 << 20  # about ten chunks ahead
_LENGTH = struct.Struct("<Q")
_SIZE = "I"  # an entry's bytes, in an array: a URL is at most a few KB
# The worker's buffers (a chunk's bytes, text, entries and manifest lines: 64-120 KB
# each) are freed and made again for every chunk. glibc maps the larger ones afresh or
# gives the top of its heap back after each, and the pages are faulted in again: 29,000
# to 37,000 page faults for a million lines, 4,400 with both thresholds out of reach (the
# worker's peak memory the same). Other C libraries ignore these variables.
_MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(16 << 20), "MALLOC_TRIM_THRESHOLD_": str(32 << 20)}


class ParsedChunk(NamedTuple):
    """A chunk of a list, parsed: its place, its digest and its lines."""

    pos: int
    first_line: int
    digest: bytes
    end: int  # offset after its last byte
    parsed: Parsed


class _WorkerFailed(Exception):
    """The worker stopped before the end of the list."""


def parsed_chunks(parser: LineParser, handle: BinaryIO) -> Iterator[ParsedChunk]:
    """Yield the chunks of the open list `handle`, parsed, in order; by a worker process,
    but for the first `_HEAD` bytes, when the list is big."""
    worker = _start(parser, handle) if os.fstat(handle.fileno()).st_size >= _ELSEWHERE else None
    received = 0
    if worker is not None:
        try:
            # The worker takes as long to start as this process takes to parse the head.
            for piece in cut(handle):
                if piece.start >= _HEAD:
                    break
                yield _parsed(parser, piece)
                received += 1
            for chunk in _received(worker):
                if chunk.pos != received:
                    raise _WorkerFailed(f"the worker sent chunk {chunk.pos} for {received}")
                yield chunk
                received += 1
            return
        except _WorkerFailed as exc:
            log.warning("%s: parsing the rest of the list in this process (%s)", parser.source, exc)
        finally:
            _stop(worker)
    for piece in cut(handle):
        if piece.pos >= received:
            yield _parsed(parser, piece)


def _parsed(parser: LineParser, chunk: Chunk) -> ParsedChunk:
    parsed = parser.parse(chunk.data, chunk.first_line, chunk.lines)
    return ParsedChunk(chunk.pos, chunk.first_line, chunk.digest, chunk.end, parsed)


def _start(parser: LineParser, handle: BinaryIO) -> subprocess.Popen[bytes] | None:
    """Return a worker parsing the list `handle` for `parser`, or None when none starts."""
    fd = handle.fileno()
    try:
        worker = subprocess.Popen(
            [sys.executable, "-m", __name__, str(fd), str(os.getpid()), str(_HEAD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            pass_fds=(fd,),
            env={**os.environ, **_MALLOC},
        )
    except OSError as exc:
        log.warning("%s: parsing the list in this process (%s)", parser.source, exc)
        return None
    assert worker.stdin is not None
    assert worker.stdout is not None
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setpipe is not None:
        with contextlib.suppress(OSError):  # a smaller pipe only keeps the worker nearer
            fcntl.fcntl(worker.stdout, setpipe, _PIPE_BYTES)
    try:
        worker.stdin.write(pickle.dumps(parser))
        worker.stdin.close()
    except OSError:  # it died at once: `_received` says how
        pass
    return worker


def _received(worker: subprocess.Popen[bytes]) -> Iterator[ParsedChunk]:
    """Yield the chunks `worker` writes; raises _WorkerFailed when it stops short."""
    stream = worker.stdout
    assert stream is not None
    while len(head := stream.read(_LENGTH.size)) == _LENGTH.size:
        (length,) = _LENGTH.unpack(head)
        payload = stream.read(length)
        if len(payload) != length:  # cut short: the worker is gone
            break
        pos, first_line, digest, end, rejects, latest, capped, lengths = pickle.loads(payload)
        blobs = [stream.read(length) for length in lengths]
        if list(map(len, blobs)) != lengths:
            break
        locs, stamps, entries, manifest, sizes = blobs
        lines = ListLines(
            locs.decode().split("\n") if latest is not None else [],
            stamps.decode().split("\n") if latest is not None else [],
            Rendered(entries, manifest, latest, array(_SIZE, sizes), capped) if latest else None,
        )
        yield ParsedChunk(pos, first_line, digest, end, Parsed(lines, rejects))
    if worker.wait() != 0:
        raise _WorkerFailed(f"the worker parsing it exited with status {worker.returncode}")


def _stop(worker: subprocess.Popen[bytes]) -> None:
    if worker.returncode is None:
        worker.kill()
    worker.wait()
    assert worker.stdout is not None
    worker.stdout.close()


def _work(fd: int, head: int, parser: LineParser, out: int) -> None:
    """Cut and parse the list open on `fd`, writing each chunk that starts `head` bytes
    or more into it to the descriptor `out`."""
    with os.fdopen(fd, "rb") as handle:
        for chunk in cut(handle):
            if chunk.start < head:
                continue
            parsed = parser.parse(chunk.data, chunk.first_line, chunk.lines)
            columns = ListLines.of(parsed.lines)
            rendered = _rendered(columns, parser.now)
            blobs = (
                "\n".join(columns.locs).encode(),
                "\n".join(columns.stamps).encode(),
                rendered.entries if rendered else b"",
                rendered.manifest if rendered else b"",
                array(_SIZE, rendered.sizes).tobytes() if rendered else b"",
            )
            # No lines: None; lines not rendered: "".
            latest = (rendered.latest if rendered else "") if columns else None
            meta = pickle.dumps(
                (
                    chunk.pos,
                    chunk.first_line,
                    chunk.digest,
                    chunk.end,
                    parsed.rejects,
                    latest,
                    rendered.capped if rendered else "",
                    [len(blob) for blob in blobs],
                ),
                protocol=pickle.HIGHEST_PROTOCOL,
            )
            _send(out, [_LENGTH.pack(len(meta)), meta, *blobs])


def _send(out: int, pieces: list[bytes]) -> None:
    """Write `pieces` to the descriptor `out`, whole and in order; raises OSError."""
    # Not through `sys.stdout.buffer`: where a write to the pipe is cut short by a stop
    # (SIGSTOP, or Ctrl-Z then `fg`), CPython's BufferedWriter can lose or repeat bytes,
    # and the building process then reads lengths out of the middle of a chunk.
    # `writev` says what it wrote: the rest goes after it. One call a chunk besides.
    views = [memoryview(piece) for piece in pieces if piece]
    while views:
        written = os.writev(out, views)
        while views and written >= len(views[0]):
            written -= len(views.pop(0))
        if views:
            views[0] = views[0][written:]


def _rendered(lines: ListLines, now: str) -> Rendered | None:
    """Return the entries and manifest lines a first load at `now` spools of `lines`:
    their datetimes as lastmods (the building process checks that they are: none after
    its time), or, where every datetime is after `now` (a list dated ahead of the
    clock), `now` as each lastmod, `capped`. None when a line has no datetime, some but
    not all are after `now`, or the entries' bytes are not their sizes."""
    if not lines or "" in lines.stamps or HELD in lines.stamps:
        return None
    locs, stamps = lines.locs, lines.stamps
    latest = max(stamps)
    lastmods, capped = stamps, ""
    if now and latest > now:
        if min(stamps) <= now:
            return None  # the building process works out which (one chunk of a list)
        lastmods, capped = [now] * len(stamps), now
    text = column_entries(locs, lastmods)
    sizes = entry_sizes(locs)
    # A first load cuts the entries where a shard ends by these sizes, which count a
    # datetime as 25 ASCII bytes. Not all are: the chunk pattern's `\d` takes digits of
    # other scripts too (more bytes each), and `w3c.parse` writes a year before 1000 in
    # fewer digits. ASCII alone, no entry is longer than its size: equal sums, all equal.
    if not text.isascii() or len(text) != sum(sizes):
        return None
    entries = text.encode()
    # A list's URL has no content hash: its fingerprint is its datetime.
    manifest = manifest_lines(locs, stamps, lastmods).encode()
    return Rendered(entries, manifest, latest, sizes, capped)


if __name__ == "__main__":
    lifeline.die_with(int(sys.argv[2]))  # not one line parsed for a daemon that is gone
    try:
        _work(
            int(sys.argv[1]), int(sys.argv[3]), pickle.load(sys.stdin.buffer), sys.stdout.fileno()
        )
    except BrokenPipeError:
        os._exit(1)  # the reader stopped early: nothing to tell it
    except FileShrank:
        os._exit(1)  # the reader, cutting the rest itself, finds the list cut short too
