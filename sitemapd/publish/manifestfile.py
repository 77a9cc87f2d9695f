"""The manifest file format: one per published shard, kept beside the sitemaps under
`.sitemapd/manifest/<shard>.tsv.gz` (never named in an index, never served by the
sidecar).

Version 1: gzip of UTF-8 text (written as several members, the first line's, then the
rows' in stretches of at least 64 KiB each ending at a line end, which gzip
readers read as one text); a first line `sitemapd-manifest 1`, then one line
per live URL of the shard: `loc <TAB> fingerprint <TAB> lastmod <TAB> bytes`, where
bytes is the hash of the page's file as read (empty for a source that reads no file). Files
without the first line (version 0, sitemapd 0.x on S3) hold the first three fields. A
file of a later version is skipped: its lines may mean something else.

Each member of rows says in its header how long it is and how many rows it holds
(render/members.py): a changed row is spliced into its member alone (`splice`). A file
whose members say nothing of the kind (written before they did) is rewritten whole the
first time one of its rows changes.
"""

# Annotations evaluated, not text: see core/observation.py.
import zlib
from collections.abc import Iterator, Sequence
from itertools import accumulate

from sitemapd.core import logs

# The header line and its member are render/members.py's: a first load's spool writes it.
from sitemapd.render.members import HEADER as _HEADER
from sitemapd.render.members import HEADER_MEMBER as _HEADER_MEMBER
from sitemapd.render.members import VERSION as VERSION
from sitemapd.render.members import label, member_ends, pack_member

log = logs.Logger("sitemapd.manifestfile")

# Where sitemapd keeps what crawlers never read: leases and manifests.
PRIVATE = ".sitemapd/"
_PREFIX = "sitemapd-manifest "

# (loc, fingerprint, lastmod, bytes hash or "")
Row = tuple[str, str, str, str]


def manifest_name(name: str) -> str:
    """Return the name (under the target's prefix or folder) of the manifest of `name`."""
    return f"{PRIVATE}manifest/{name}.tsv.gz"


def encode(lines: str) -> bytes:
    """Return the manifest file of `lines` (rows joined by tabs, then by newlines)."""
    return encode_lines(f"{lines}\n".encode() if lines else b"")


def encode_lines(lines: bytes) -> bytes:
    """Return the manifest file of `lines` (UTF-8 rows, each ended by a newline)."""
    return with_header(pack(lines))


class Packed:
    """The rows of a manifest file: their text, each member as packed, where each ends."""

    __slots__ = ("ends", "members", "rows")

    rows: bytes
    members: list[bytes]
    ends: list[int]

    def __init__(self, rows: bytes, members: list[bytes], ends: list[int]) -> None:
        self.rows = rows
        self.members = members
        self.ends = ends


def pack(lines: bytes) -> bytes:
    """Return the gzip members of the rows `lines` that follow the header's in a manifest
    file: one for each stretch `member_ends` gives (`pack_member`). A first load's spool
    (ledger/spool.py) packs each member whole as it fills, to the same bytes."""
    start, members = 0, []
    for end in member_ends(lines):
        members.append(pack_member(lines[start:end]))
        start = end
    return b"".join(members)


def repack(packed: Packed, lines: bytes) -> bytes:
    """Return `pack(lines)`, reusing the members of `packed` whose rows `lines` leaves as
    they were (when its line ends are where they were: else all are packed again)."""
    if member_ends(lines) != packed.ends:
        return pack(lines)
    start, members = 0, []
    for member, end in zip(packed.members, packed.ends, strict=True):
        rows = lines[start:end]  # a copy compares faster than a memoryview's slice
        members.append(member if rows == packed.rows[start:end] else pack_member(rows))
        start = end
    return b"".join(members)


def with_header(members: bytes) -> bytes:
    """Return the manifest file of the rows packed in `members` (see `pack`)."""
    return _HEADER_MEMBER + members


class Span:
    """A member of rows of a manifest file: where it starts and ends, and its rows."""

    __slots__ = ("end", "rows", "start")

    start: int
    end: int
    rows: int

    def __init__(self, start: int, end: int, rows: int) -> None:
        self.start = start
        self.end = end
        self.rows = rows


def spans(data: bytes) -> list[Span] | None:
    """Return the members of rows of the manifest file `data`, read from their headers
    alone (`label`); None when `data` is no such file (another version, a member that
    does not say its length and rows, cut short or damaged)."""
    if not data.startswith(_HEADER_MEMBER):
        return None
    found: list[Span] = []
    at = len(_HEADER_MEMBER)
    while at < len(data) or not found:
        said = label(data, at)
        if said is None:
            return None
        found.append(Span(at, at + said[0], said[1]))
        at += said[0]
    return found


def unpack(data: bytes) -> Packed | None:
    """Return the rows of the manifest file `data` as `encode_lines` packed them, or None
    when `data` is no such file (another version, damaged, other members)."""
    found = spans(data)
    if found is None:
        return None
    texts: list[bytes] = []
    for span in found:
        text = _inflated(data, span)
        if text is None:
            return None
        texts.append(text)
    rows = b"".join(texts)
    ends = list(accumulate(map(len, texts)))
    members = [data[span.start : span.end] for span in found]
    return Packed(rows, members, ends) if ends == member_ends(rows) else None


def splice(data: bytes, changes: Sequence[tuple[int, bytes, bytes]], rows: int) -> bytes | None:
    """Return the manifest file `data` of `rows` rows with row number `n` (from 0) of each
    of `changes` (`(n, old, new)`, in order of `n`), which holds `old`, replaced by `new`
    of the same length; only the members holding them are inflated and packed again.
    None when `data` does not hold `rows` rows in members that say theirs (`spans`), a
    member is damaged, or a row is not `old`."""
    found = spans(data)
    if found is None or sum(span.rows for span in found) != rows:
        return None
    pieces = [data[: found[0].start]]
    first, taken = 0, 0
    for span in found:
        mine = taken
        while mine < len(changes) and changes[mine][0] < first + span.rows:
            mine += 1
        if mine > taken:
            text = _inflated(data, span)
            member = None if text is None else _replaced_rows(text, first, changes[taken:mine])
            if member is None:
                return None
            pieces.append(member)
        else:
            pieces.append(data[span.start : span.end])
        first, taken = first + span.rows, mine
    return b"".join(pieces) if taken == len(changes) else None


def _replaced_rows(
    text: bytes, first: int, changes: Sequence[tuple[int, bytes, bytes]]
) -> bytes | None:
    """Return the member packing the rows `text` (row number `first` onwards) with the
    rows of `changes` (in order, each once) replaced; None when one is not its `old`."""
    pieces: list[bytes] = []
    number, at, done = first, 0, 0  # the row starting at `at`; bytes before `done` taken
    for row, old, new in changes:
        if at < done:  # past a replaced row: on to the next
            number, at = number + 1, text.index(b"\n", at) + 1
        if row < number or len(old) != len(new):
            return None
        for _ in range(row - number):
            at = text.index(b"\n", at) + 1
        number = row
        if not text.startswith(old, at):
            return None
        pieces += (text[done:at], new)
        done = at + len(old)
    pieces.append(text[done:])
    return pack_member(b"".join(pieces))


def _inflated(data: bytes, span: Span) -> bytes | None:
    """Return the rows of the member `span` of `data`, None when it is damaged or holds
    other than the rows its header says."""
    member = zlib.decompressobj(31)
    try:
        text = member.decompress(memoryview(data)[span.start : span.end])
    except zlib.error:
        return None
    if not member.eof or member.unused_data or text.count(b"\n") != span.rows:
        return None
    return text


def decode(data: bytes, where: str) -> Iterator[Row]:
    """Yield the rows of the manifest file `data` (read from `where`, for messages);
    nothing for an empty, damaged or later-version file."""
    import gzip  # for its reader of many members; loaded here, where a file is read whole

    try:
        lines = gzip.decompress(data).decode().splitlines() if data else []
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        log.warning("%s: unreadable manifest skipped (%s)", where, exc)
        return
    if lines and lines[0].startswith(_PREFIX):
        if lines[0] != _HEADER:
            log.warning(
                "%s: manifest %s skipped (this sitemapd reads %s)", where, lines[0], _HEADER
            )
            return
        lines = lines[1:]
    for line in lines:
        fields = line.split("\t")
        if len(fields) == 4:
            yield fields[0], fields[1], fields[2], fields[3]
        elif len(fields) == 3:  # version 0
            yield fields[0], fields[1], fields[2], ""
