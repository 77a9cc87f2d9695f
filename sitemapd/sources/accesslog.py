"""Access log source: follow a web server's log and tell what crawlers fetched.

Reads the nginx/Apache "combined" (or "common") format, follows the file across rotation
by rename and by copytruncate, and sums a chunk of hits up as the newest successful feed
fetch per crawler and the last answer each target gave a crawler. Pure reading: no ledger.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO, NamedTuple

from sitemapd.core import w3c
from sitemapd.errors import SourceError

DEFAULT_CRAWLERS: dict[str, str] = {"googlebot": r"Googlebot", "bingbot": r"bingbot"}

_QUOTED = rb'"([^"\\]*(?:\\.[^"\\]*)*)"'
# Splitting the request line in the same match saves a second regex per line; a request
# line that is not `METHOD target [HTTP/x.y]` still matches, with no method.
_REQUEST = (
    rb'"(?:([!#$%&\'*+.^_`|~0-9A-Za-z-]+) ([^"\s\\]*(?:\\.[^"\s\\]*)*)'
    rb'(?: HTTP/\d+(?:\.\d+)?)?|[^"\\]*(?:\\.[^"\\]*)*)"'
)
_LINE = re.compile(
    rb"\S+ \S+ .*? \[(\d\d/[A-Za-z]{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4})\] "
    + _REQUEST
    + rb" (\d{3}) (?:\d+|-)(?: "
    + _QUOTED
    + rb" "
    + _QUOTED
    + rb")?"
)
_ABSOLUTE = re.compile(rb"https?://[^/?#]*", re.IGNORECASE)
_ESCAPE = re.compile(rb"\\(x[0-9A-Fa-f]{2}|.)", re.DOTALL)
_MONTHS = {
    name: number
    for number, name in enumerate(b"Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)
}
_PAGE_METHODS = frozenset({"GET", "HEAD"})
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".lz4", ".z", ".zip")
_FINGERPRINT = 4096  # leading bytes hashed: a few lines, each with its own timestamp
_CURSOR_VERSION = "v1"
_HASHED = re.compile(r"\d+/[0-9a-f]+\Z")


class Hit(NamedTuple):
    """One request from the log."""

    at: str  # canonical W3C UTC, from the log's own timestamp
    method: str
    target: str  # path and optional ?query, as requested
    status: int
    user_agent: str


@dataclass
class Chunk:
    """The complete lines appended since a cursor, parsed."""

    hits: list[Hit]
    cursor: str  # opaque; pass it to the next read_new
    bad_lines: int  # lines that did not parse
    rotated: bool  # this read moved on to a new file (after a rename or copytruncate)
    more: bool = False  # stopped at max_bytes: call again at once for the rest


@dataclass
class CrawlFacts:
    """What a chunk of hits says about crawlers."""

    # (crawler, feed page) -> newest `at` of a successful (2xx or 304) GET of it
    feed_fetches: dict[tuple[str, int], str]
    # target -> (status, crawler, at) of the last crawler GET/HEAD of it
    answers: dict[str, tuple[int, str, str]]


def _unescape(field: bytes) -> bytes:
    """Return a logged field with Apache's `\\"` and nginx's `\\xHH` escapes undone."""
    if b"\\" not in field:
        return field
    return _ESCAPE.sub(_unescaped, field)


def _unescaped(match: re.Match[bytes]) -> bytes:
    """Return the byte one escape sequence stands for."""
    escape = match.group(1)
    if len(escape) == 3:
        return bytes((int(escape[1:], 16),))
    return escape


@lru_cache(maxsize=1024)
def _text(field: bytes) -> str:
    """Return a logged field (method, User-Agent: a few distinct values) as text."""
    return _unescape(field).decode("utf-8", "replace")


@lru_cache(maxsize=4096)
def _when(stamp: bytes) -> str | None:
    """Return the canonical UTC form of `10/Oct/2026:13:55:36 -0700`, or None if impossible."""
    month = _MONTHS.get(stamp[3:6])
    year = int(stamp[7:11])
    if month is None or not 1970 <= year <= 9998:
        return None
    try:
        local = datetime(year, month, int(stamp[0:2]), int(stamp[12:14]), int(stamp[15:17]))
    except ValueError:
        return None
    second = int(stamp[18:20])
    zone_hours, zone_minutes = int(stamp[22:24]), int(stamp[24:26])
    if second > 60 or zone_minutes > 59:
        return None
    offset = (zone_hours * 60 + zone_minutes) * 60
    if stamp[21:22] == b"-":
        offset = -offset
    epoch = (local - datetime(1970, 1, 1)).total_seconds() + second - offset
    return w3c.format_epoch(epoch)


def _target(raw: bytes) -> str | None:
    """Return the path and query a request target names, or None if it names no path."""
    if not raw.startswith(b"/"):
        absolute = _ABSOLUTE.match(raw)
        if absolute is None:
            return None  # `*`, `host:443` or garbage: never a page
        raw = raw[absolute.end() :]
        if not raw.startswith(b"/"):
            raw = b"/" + raw
    return _unescape(raw).decode("utf-8", "replace")


def parse_line(line: bytes) -> Hit | None:
    """Return the request a combined/common format log line records.

    None when the line does not parse or its request line names no path (TLS bytes sent to
    a plain port, `CONNECT host:443`); never raises.
    """
    match = _LINE.match(line)
    if match is None:
        return None
    stamp, method, raw_target, status, _referer, agent = match.groups()
    if method is None:
        return None
    at = _when(stamp)
    target = _target(raw_target)
    if at is None or target is None:
        return None
    return Hit(at, _text(method), target, int(status), "" if agent is None else _text(agent))


def crawler_of(user_agent: str, crawlers: Sequence[tuple[str, re.Pattern[str]]]) -> str | None:
    """Return the name of the first crawler whose pattern is found in `user_agent`, or None."""
    for name, pattern in crawlers:
        if pattern.search(user_agent):
            return name
    return None


def crawl_facts(
    hits: Iterable[Hit],
    crawlers: Sequence[tuple[str, re.Pattern[str]]],
    feed_page: Callable[[str], int | None],
) -> CrawlFacts:
    """Return the feed fetches and the last answers to crawlers among `hits`, in log order;
    `feed_page` tells which feed page a target path is, if any."""
    known: dict[str, str | None] = {}  # a log holds few distinct User-Agents
    fetches: dict[tuple[str, int], str] = {}
    answers: dict[str, tuple[int, str, str]] = {}
    for hit in hits:
        if hit.method not in _PAGE_METHODS:
            continue
        agent = hit.user_agent
        if agent in known:
            crawler = known[agent]
        else:
            crawler = known[agent] = crawler_of(agent, crawlers)
        if crawler is None:
            continue
        answers[hit.target] = (hit.status, crawler, hit.at)
        # A HEAD answer carries no entries: it is no fetch of the feed.
        if hit.method != "GET" or not (200 <= hit.status < 300 or hit.status == 304):
            continue
        page = feed_page(hit.target.partition("?")[0])
        if page is not None and hit.at > fetches.get((crawler, page), ""):
            fetches[crawler, page] = hit.at
    return CrawlFacts(fetches, answers)


@dataclass(frozen=True)
class _Position:
    """Where reading stopped in one file, and how to recognise that file again."""

    dev: int
    ino: int
    offset: int
    align: bool  # offset may be inside a line: skip to the next line start first
    fingerprint: str  # "<length>/<hash>" of the file's first bytes, up to offset

    def encode(self) -> str:
        """Return the position as an opaque cursor string."""
        fields = (self.dev, self.ino, self.offset, int(self.align), self.fingerprint)
        return ":".join(str(field) for field in (_CURSOR_VERSION, *fields))

    @classmethod
    def decode(cls, cursor: str) -> _Position | None:
        """Return the position a cursor names, or None when it is not one of ours."""
        fields = cursor.split(":")
        if len(fields) != 6 or fields[0] != _CURSOR_VERSION or not _HASHED.match(fields[5]):
            return None
        try:
            dev, ino, offset, align = (int(field) for field in fields[1:5])
        except ValueError:
            return None
        return cls(dev, ino, offset, bool(align), fields[5])


def _fingerprint(handle: BinaryIO, offset: int) -> str:
    """Return the fingerprint of the file's first `offset` bytes (at most _FINGERPRINT)."""
    length = min(offset, _FINGERPRINT)
    head = os.pread(handle.fileno(), length, 0)
    return f"{len(head)}/{hashlib.blake2b(head, digest_size=12).hexdigest()}"


def _same_start(handle: BinaryIO, size: int, position: _Position) -> bool:
    """Return whether `handle` still holds what `position` was read from, up to its offset."""
    if size < position.offset:
        return False
    length = int(position.fingerprint.partition("/")[0])
    return _fingerprint(handle, length) == position.fingerprint


def _open(path: Path) -> BinaryIO:
    """Return the log opened for reading; raises SourceError naming it if that fails."""
    try:
        return open(path, "rb")
    except OSError as exc:
        raise SourceError(f"cannot read access log {path} ({exc.strerror})") from exc


def _sibling(path: Path, live_ino: int, match: _Position, by_content: bool) -> BinaryIO | None:
    """Return the rotated-away copy of the log `match` was reading, opened, or None.

    A sibling is a plain, uncompressed file named like `path` plus a suffix (`access.log.1`).
    It is found by (device, inode) after a rename, by its first bytes after copytruncate.
    """
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return None
    for entry in entries:
        name = entry.name
        if (
            name == path.name
            or not name.startswith(path.name)
            or name.lower().endswith(_COMPRESSED)
        ):
            continue
        try:
            if not entry.is_file(follow_symlinks=False) or entry.inode() == live_ino:
                continue
            if not by_content and entry.inode() != match.ino:
                continue
            handle = open(entry.path, "rb")  # noqa: SIM115 - returned open
        except OSError:
            continue
        status = os.fstat(handle.fileno())
        same_device = by_content or status.st_dev == match.dev
        if same_device and _same_start(handle, status.st_size, match):
            return handle
        handle.close()
    return None


class _Reader:
    """Reads complete lines from files in turn, within one byte budget."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.hits: list[Hit] = []
        self.bad_lines = 0

    def take(self, line: bytes) -> None:
        """Parse one line into the hits, or count it as bad."""
        hit = parse_line(line)
        if hit is not None:
            self.hits.append(hit)
        elif line.strip(b"\r"):
            self.bad_lines += 1

    def read(self, handle: BinaryIO, position: _Position) -> tuple[_Position, bytes, bool]:
        """Return the new position, the partial line left at the end, and whether EOF was hit."""
        size = os.fstat(handle.fileno()).st_size
        wanted = min(self.budget, max(0, size - position.offset))
        data = os.pread(handle.fileno(), wanted, position.offset)
        at_end = len(data) < self.budget
        start, align = 0, position.align
        if align:
            first = data.find(b"\n")
            if first >= 0:
                start, align = first + 1, False
            else:
                start = len(data)
        end = max(data.rfind(b"\n") + 1, start)
        if end == 0 and not at_end:
            # One line longer than the whole budget: skip it rather than stall on it.
            self.bad_lines += 1
            start = end = len(data)
            align = True
        lines = data[start:end].split(b"\n")
        lines.pop()  # the empty string after the last newline
        hits, parse, bad = self.hits, parse_line, 0
        for line in lines:
            hit = parse(line)
            if hit is not None:
                hits.append(hit)
            elif line not in (b"", b"\r"):
                bad += 1
        self.bad_lines += bad
        self.budget -= end
        offset = position.offset + end
        moved = _Position(position.dev, position.ino, offset, align, position.fingerprint)
        if position.fingerprint.partition("/")[0] != str(_FINGERPRINT):
            moved = _Position(moved.dev, moved.ino, offset, align, _fingerprint(handle, offset))
        return moved, data[end:], at_end


def _first_position(handle: BinaryIO, max_bytes: int) -> _Position:
    """Return where a log never read starts: its last `max_bytes`, from the next line start."""
    status = os.fstat(handle.fileno())
    start = max(0, status.st_size - max_bytes)
    align = start > 0 and os.pread(handle.fileno(), 1, start - 1) != b"\n"
    fingerprint = _fingerprint(handle, start)
    return _Position(status.st_dev, status.st_ino, start, align, fingerprint)


def read_new(path: Path, cursor: str | None, max_bytes: int = 16 * 2**20) -> Chunk:
    """Return the complete lines appended to the log at `path` since `cursor`, parsed.

    Without a cursor (or with one that is not ours) reading starts `max_bytes` before the
    end. Raises SourceError when the log cannot be opened (missing, EACCES).
    """
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be positive, not {max_bytes}")
    reader = _Reader(max_bytes)
    with _open(path) as live:
        status = os.fstat(live.fileno())
        fresh = _Position(status.st_dev, status.st_ino, 0, False, _fingerprint(live, 0))
        old = None if cursor is None else _Position.decode(cursor)
        if old is None:
            position = _first_position(live, max_bytes)
            position, _, at_end = reader.read(live, position)
            return Chunk(reader.hits, position.encode(), reader.bad_lines, False, not at_end)
        same_file = (old.dev, old.ino) == (status.st_dev, status.st_ino)
        if same_file and _same_start(live, status.st_size, old):
            position, _, at_end = reader.read(live, old)
            return Chunk(reader.hits, position.encode(), reader.bad_lines, False, not at_end)
        previous = _sibling(path, status.st_ino, old, by_content=same_file)
        if previous is None:
            position, _, at_end = reader.read(live, fresh)
            return Chunk(reader.hits, position.encode(), reader.bad_lines, True, not at_end)
        with previous:
            copy = os.fstat(previous.fileno())
            # After copytruncate the cursor moves to the copy, which is now another inode.
            old = _Position(copy.st_dev, copy.st_ino, old.offset, old.align, old.fingerprint)
            position, tail, at_end = reader.read(previous, old)
            if not at_end or status.st_size == 0:
                # A server keeps writing to the renamed file until it reopens its log:
                # the old file is finished only once the new one has lines.
                return Chunk(reader.hits, position.encode(), reader.bad_lines, False, not at_end)
        reader.take(tail)  # the server will never finish this line
        reader.budget -= len(tail)
        if reader.budget <= 0:
            return Chunk(reader.hits, fresh.encode(), reader.bad_lines, True, True)
        position, _, at_end = reader.read(live, fresh)
        return Chunk(reader.hits, position.encode(), reader.bad_lines, True, not at_end)
