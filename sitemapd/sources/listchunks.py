"""URL list files cut into content-defined chunks, and the lines of a chunk parsed.

Chunk boundaries come from FastCDC (a rolling hash over the bytes: the same content
gives the same boundaries wherever it sits in the file), moved to the next line end.
An inserted, changed or deleted line therefore changes the one or two chunks around
it and leaves every other chunk, and its digest, as it was: a re-read parses only the
chunks whose digest the ledger does not know. FastCDC restarts at each chunk's start, so
that where a chunk ends depends on its own bytes (and, within FastCDC's largest chunk of
the end of the file, on where that is): a re-read that knows where the chunks ended
hashes them in place and cuts only the stretch that changed (`recut`). In a file of the
same size, a changed chunk whose end still ends a line before bytes as they were (a line
given a new datetime, the common change of an export) keeps its end, and no chunker
loads: FastCDC would cut it there too but for a cut point made or lost within the ~150
bytes the change touches (about one change in 200 at this average), and a chunk ending
elsewhere costs a later re-read a few more lines to parse, never a wrong one.

Lines are parsed a chunk at a time: one compiled pattern accepts the canonical lines
(the site's own URLs in canonical spelling, an optional canonical UTC datetime) that
make up nearly every real export; a chunk holding anything else is parsed line by line
with the full rules, so both give the same result. A chunk whose lines all have a
datetime is matched whole, and its URLs and datetimes split apart as columns.
"""

# Annotations evaluated, not text: see core/observation.py.
import contextlib
import functools
import re
from collections.abc import Container, Generator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

import xxhash

from sitemapd.core import w3c
from sitemapd.core.filedigest import Found, Place, ends
from sitemapd.core.fileread import FileBytes
from sitemapd.core.listlines import HELD, ListLines
from sitemapd.core.observation import Rejected
from sitemapd.core.urls import MAX_URL_LENGTH, URLPolicy
from sitemapd.errors import InvalidURL

if TYPE_CHECKING:
    from pyfastcdc import FastCDC

# Average chunk of 64 KiB: about 800 lines of a typical export, a few ms to re-parse.
_AVERAGE = 65536
# Its largest chunk as pyfastcdc sets it for that average (checked when it loads): a
# re-read that finds every chunk known cuts nothing, and loads no cutter (5 ms).
_LARGEST = 4 * _AVERAGE
_CDC: "FastCDC | None" = None  # loaded by the first cut
_SHOWN = 200  # characters of a bad line kept in logs and status
# A canonical UTC datetime that is a real instant, day by month; February 29th (real in
# leap years only) and year 0 are left to the full rules. The days past the 28th look
# back at their month: a branch for each kind of month cost the whole-chunk pattern a
# fifth more steps on every line (a fifth of the parse worker's time went to it).
_STAMP = (
    r"(?!0000)\d{4}-(?:0[1-9]|1[0-2])"
    r"-(?:0[1-9]|1\d|2[0-8]|29(?<!02-29)|30(?<!02-30)|31(?<!(?:0[2469]|11)-31))"
    r"T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\+00:00"
)
# What the pattern's characters let through that the full rules would change or refuse:
# a dot segment, an escaped dot, a `%` that does not start an escape.
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
# A dot segment's start. Searched by the pattern engine: `"/." in text` stops at every
# slash of every URL, which made it 8% of the parse worker's time (85 us a chunk, 34 here).
_SLASH_DOT = re.compile(r"/\.")


class Chunk(NamedTuple):
    """One chunk of a list file: its place and its bytes' digest."""

    pos: int
    start: int  # offset in the file
    first_line: int
    digest: bytes
    data: bytes  # empty for a chunk known by `cut`'s counts: its lines are not read
    lines: int
    end: int  # offset after its last byte


def cut(handle: BinaryIO, counts: Mapping[bytes, int] | None = None) -> Iterator[Chunk]:
    """Yield the chunks of the open file `handle`, in order, each ending at a line end
    (the last at the end of the file). `counts` gives the line ends of chunks known by
    digest, whose bytes are then not copied out (copying and counting them again would
    cost more than the cut)."""
    size = _size(handle)
    if size == 0:
        return
    with _File.of(handle, size, counts) as file:
        yield from _cut_from(file, 0, 1, 0, ())


def recut(
    handle: BinaryIO, known: Sequence[Place], counts: Mapping[bytes, int] | None = None
) -> Iterator[Chunk]:
    """Yield what `cut(handle, counts)` yields, given the chunks `known` of the file's last
    read: those whose bytes are unchanged at the head and at the tail of the file are
    hashed in place (`filedigest.ends`: a build's early check may have found them
    already), and only the stretch between them is cut. In a file of the same size, a
    changed chunk followed by bytes as they were keeps its end (see above)."""
    size = _size(handle)
    if size == 0 or not known:
        yield from cut(handle, counts)
        return
    found = ends(handle, known)
    with _File.of(handle, size, counts) as file:
        yield from _recut(file, known, found)


def _size(handle: BinaryIO) -> int:
    handle.seek(0, 2)
    return handle.tell()


class _File:
    """A list file read for one cut, and the line ends of the chunks known by digest."""

    __slots__ = ("counts", "read", "size")

    read: FileBytes
    size: int
    counts: Mapping[bytes, int]

    def __init__(self, read: FileBytes, size: int, counts: Mapping[bytes, int]) -> None:
        self.read = read
        self.size = size
        self.counts = counts

    @classmethod
    @contextlib.contextmanager
    def of(
        cls, handle: BinaryIO, size: int, counts: Mapping[bytes, int] | None
    ) -> Iterator["_File"]:
        """Yield the first `size` bytes of the open file `handle` to be cut."""
        with FileBytes(handle.fileno(), size) as read:
            yield cls(read, size, counts or {})

    def chunk(self, pos: int, start: int, line: int, end: int, digest: bytes) -> Chunk:
        """Return the chunk of bytes `start` to `end`, its bytes copied out unless its
        digest is in `counts`."""
        count = self.counts.get(digest)
        data = b""
        if count is None:
            data = self.read.view(start, end).tobytes()
            count = data.count(b"\n")
        return Chunk(pos, start, line, digest, data, count, end)

    def digest(self, start: int, end: int) -> bytes:
        """Return the digest of bytes `start` to `end`."""
        return xxhash.xxh3_128_digest(self.read.view(start, end))


def _cut_from(
    file: _File, start: int, line: int, pos: int, stop: Container[int]
) -> Generator[Chunk, None, tuple[int, int, int]]:
    """Yield the chunks from offset `start` (chunk `pos`, line `line`) until the end of
    the file or an offset in `stop`; return where it stopped: (pos, line, offset).

    Each chunk is cut from its own start (FastCDC restarted there): where a chunk starts
    and its bytes decide where it ends, so that a re-read can cut from any known start."""
    size = file.size
    while start < size and start not in stop:
        window = file.read.view(start, min(size, start + _largest()))
        piece = next(iter(_cutter().cut_buf(window)))
        cut_at = start + piece.length
        if cut_at < size:
            newline = file.read.find_line_end(cut_at - 1)
            cut_at = size if newline < 0 else newline + 1
        chunk = file.chunk(pos, start, line, cut_at, file.digest(start, cut_at))
        yield chunk
        pos, line, start = pos + 1, line + chunk.lines, cut_at
    return pos, line, start


def _cutter() -> "FastCDC":
    """Return the chunker, loaded on first use. Raises RuntimeError when pyfastcdc's
    largest chunk is not `_LARGEST`."""
    global _CDC  # one per process, made when first needed
    if _CDC is None:
        from pyfastcdc import FastCDC

        cdc = FastCDC(avg_size=_AVERAGE)
        if cdc.max_size != _LARGEST:
            raise RuntimeError(f"pyfastcdc's largest chunk is {cdc.max_size}, not {_LARGEST}")
        _CDC = cdc
    return _CDC


def _largest() -> int:
    """Return the chunker's largest chunk, without loading it."""
    return _LARGEST if _CDC is None else _CDC.max_size


def _recut(file: _File, known: Sequence[Place], found: Found) -> Iterator[Chunk]:
    size, old = file.size, known[-1].end
    starts = [0, *(place.end for place in known[:-1])]
    # The head: known chunks whose bytes are the same. Where a chunk ends depends on where
    # the file ends only when that is within FastCDC's largest chunk of its start.
    pos, line, start = 0, 1, 0
    for place in known[: found.head]:
        if min(size, old) - start <= _largest() and size != old:
            break
        chunk = file.chunk(pos, start, line, place.end, place.digest)
        yield chunk
        pos, line, start = pos + 1, line + chunk.lines, place.end
    # The tail: known chunks whose bytes end the file the same way, by their new start.
    # Cut from one of these starts, the rest of the file cuts as it did.
    shift = size - old
    tail: dict[int, int] = {}
    for index in range(len(known) - 1, max(pos, len(known) - found.tail) - 1, -1):
        moved = starts[index] + shift
        if moved < start:
            break
        tail[moved] = index
    if shift == 0:
        pos, line, start = yield from _kept(file, known, pos, line, start, tail)
    pos, line, start = yield from _cut_from(file, start, line, pos, tail)
    for index in range(tail[start], len(known)) if start in tail else ():
        end = known[index].end + shift
        chunk = file.chunk(pos, start, line, end, known[index].digest)
        yield chunk
        pos, line, start = pos + 1, line + chunk.lines, end


def _kept(
    file: _File, known: Sequence[Place], pos: int, line: int, start: int, tail: Container[int]
) -> Generator[Chunk, None, tuple[int, int, int]]:
    """Yield the chunks of a file of the same size from chunk `pos` (offset `start`, line
    `line`) at the ends the `known` ones had, hashed in place: each holds the bytes it held,
    or others that end a line before bytes as they were (`_bounded`). Stop at the tail (an
    offset in `tail`), the end of the file or the first chunk that is neither; return where
    it stopped: (pos, line, offset)."""
    while pos < len(known) and start not in tail:
        end = known[pos].end
        digest = file.digest(start, end)
        if digest != known[pos].digest and not _bounded(file, known, pos, tail):
            break
        chunk = file.chunk(pos, start, line, end, digest)
        yield chunk
        pos, line, start = pos + 1, line + chunk.lines, end
    return pos, line, start


def _bounded(file: _File, known: Sequence[Place], pos: int, tail: Container[int]) -> bool:
    """True when the end of chunk `pos` of `known` still ends a line and is followed by
    bytes as they were: the end of the file, the tail, or the next chunk's own bytes in
    place (a line shifted across it would change them: that stretch is cut)."""
    end = known[pos].end
    if end == file.size:
        return True
    if file.read.view(end - 1, end).tobytes() != b"\n":
        return False
    following = known[pos + 1]
    return end in tail or file.digest(end, following.end) == following.digest


class Parsed(NamedTuple):
    """The valid lines of a chunk as `(loc, canonical datetime or "")`, and the rest."""

    lines: Sequence[tuple[str, str]]  # a list, or columns (`ListLines`) from a worker
    rejects: list[Rejected]


class LineParser:
    """Parses chunks of one list source's lines for one site."""

    def __init__(self, source: str, policy: URLPolicy, now: str = "") -> None:
        """`now`: the build's time, where the parse worker formats a first load's entries."""
        self.source = source
        self.now = now
        self.policy = policy
        root = re.escape(policy.origin.root)
        # Characters alone, so that the pattern runs at memchr-like speed; what they let
        # through that the full rules would change is `_DOUBTFUL`.
        path = MAX_URL_LENGTH - len(policy.origin.root)
        self._url = url = rf"{root}[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]{{0,{path}}}"
        # Every line canonical with a datetime, `\n`-ended (nearly every chunk of an
        # export): matched whole and split into columns, in four fifths of the time
        # `findall` and taking its pairs apart take. Possessive: neither a URL nor a line
        # once matched is ever given back (the character after a URL is not a URL's, and
        # a line matches in one way alone), so the engine keeps no place to go back to.
        self._stamped = re.compile(rf"(?:{url}+\t{_STAMP}\n)*+", re.ASCII)

    @functools.cached_property
    def _canonical(self) -> re.Pattern[str]:
        """The canonical lines one at a time, for a chunk not all of stamped lines:
        compiled then (half of a parser's start, 0.5 ms), as a changed line's build
        parses one chunk of those."""
        # ASCII: a `str` pattern's `\d` takes the digits of every script, which the
        # datetime rules refuse.
        return re.compile(rf"^({self._url})(?:\t({_STAMP}))?\r?$", re.MULTILINE | re.ASCII)

    def parse(self, data: bytes, first_line: int, count: int) -> Parsed:
        """Return the lines of a chunk of `count` line ends starting at line `first_line`."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is not None and not _doubtful(text):
            if self._stamped.fullmatch(text):
                # URLs and datetimes alternate once each tab is a line end.
                fields = text.replace("\t", "\n").split("\n")
                return Parsed(ListLines(fields[0:-1:2], fields[1::2]), [])
            lines = self._canonical.findall(text)
            if len(lines) == count + (not text.endswith("\n")):
                return Parsed(lines, [])
        return self._line_by_line(data, first_line)

    def _line_by_line(self, data: bytes, first_line: int) -> Parsed:
        lines: list[tuple[str, str]] = []
        rejects: list[Rejected] = []
        raw_lines = data.split(b"\n")
        if not raw_lines[-1]:
            raw_lines.pop()  # the chunk's last line end
        for number, raw in enumerate(raw_lines, start=first_line):
            line = self._line(number, raw)
            if isinstance(line, tuple) and isinstance(line[1], Rejected):
                lines.append((line[0], HELD))
                rejects.append(line[1])
            elif isinstance(line, Rejected):
                rejects.append(line)
            elif line is not None:
                lines.append(line)
        return Parsed(lines, rejects)

    def _line(
        self, number: int, raw: bytes
    ) -> tuple[str, str] | tuple[str, Rejected] | Rejected | None:
        """Return the `(loc, datetime or "")` of one line, None for a blank line or a
        comment, or why it is rejected (with its URL, when only its datetime is)."""
        try:
            line = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            return self._rejected(f"line {number}", "not valid UTF-8")
        if number == 1:
            line = line.removeprefix("\ufeff")  # a byte-order mark, as editors save
        if not line or line.startswith("#"):
            return None
        url, _, stamp = line.partition("\t")
        head, _, tail = url.rpartition(" ")
        if head and not stamp and _looks_like_datetime(tail):
            reject = self._rejected(url, f"line {number}: separate the datetime with a tab")
            try:
                return self.policy.normalise(head), reject
            except InvalidURL:
                return reject
        try:
            loc = self.policy.normalise(url)
        except InvalidURL as exc:
            return self._rejected(url, f"line {number}: {exc}")
        if not stamp.strip():
            return loc, ""
        try:
            return loc, w3c.parse(stamp)
        except ValueError:
            # Published without it, a new URL would take a made-up time: held as the
            # ledger has it (`HELD`), as logged, until the line is fixed.
            return loc, self._rejected(url, f"line {number}: bad datetime {stamp!r}")

    def _rejected(self, item: str, reason: str) -> Rejected:
        # Logged by the reader, when it yields it.
        return Rejected(self.source, item[:_SHOWN], reason)


def _doubtful(text: str) -> bool:
    """True when `text` may hold a line the canonical pattern would wrongly accept."""
    return _SLASH_DOT.search(text) is not None or (
        "%" in text and ("%2e" in text or "%2E" in text or _BAD_ESCAPE.search(text) is not None)
    )


def _looks_like_datetime(text: str) -> bool:
    try:
        w3c.parse(text)
    except ValueError:
        return False
    return True
