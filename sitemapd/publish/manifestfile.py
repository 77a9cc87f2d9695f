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
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Iterator
from itertools import accumulate
from typing import NamedTuple

# The header line and its member are render/members.py's: a first load's spool writes it.
from sitemapd.render.members import HEADER as _HEADER
from sitemapd.render.members import HEADER_MEMBER as _HEADER_MEMBER
from sitemapd.render.members import VERSION as VERSION
from sitemapd.render.members import member_ends

log = logging.getLogger("sitemapd.manifestfile")

# Where sitemapd keeps what crawlers never read: leases and manifests.
PRIVATE = ".sitemapd/"
_PREFIX = "sitemapd-manifest "
# Compressed bytes inflated at a time when a file is unpacked (a member of 64 KiB of rows
# is 8-10 KiB).
_FED = 16384

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


class Packed(NamedTuple):
    """The rows of a manifest file: their text, each member as packed, where each ends."""

    rows: bytes
    members: list[bytes]
    ends: list[int]


def pack(lines: bytes) -> bytes:
    """Return the gzip members of the rows `lines` that follow the header's in a manifest
    file: one for each stretch `member_ends` gives, level 1 (read by sitemapd alone),
    mtime 0 and no name (the same rows give the same bytes). A first load's spool
    (ledger/spool.py) compresses them as they come, to the same bytes."""
    start, members = 0, []
    for end in member_ends(lines):
        members.append(zlib.compress(lines[start:end], 1, 31))
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
        members.append(member if rows == packed.rows[start:end] else zlib.compress(rows, 1, 31))
        start = end
    return b"".join(members)


def with_header(members: bytes) -> bytes:
    """Return the manifest file of the rows packed in `members` (see `pack`)."""
    return _HEADER_MEMBER + members


def unpack(data: bytes) -> Packed | None:
    """Return the rows of the manifest file `data` as `encode_lines` packed them, or None
    when `data` is no such file (another version, damaged, other members)."""
    if not data.startswith(_HEADER_MEMBER):
        return None
    members: list[bytes] = []
    texts: list[bytes] = []
    view = memoryview(data)
    start = len(_HEADER_MEMBER)
    while start < len(data) or not members:
        end = _member_end(view, start, texts)
        if end is None:
            return None
        members.append(data[start:end])
        start = end
    rows = b"".join(texts)
    ends = list(accumulate(map(len, texts)))
    return Packed(rows, members, ends) if ends == member_ends(rows) else None


def _member_end(view: memoryview, start: int, texts: list[bytes]) -> int | None:
    """Inflate the gzip member that starts at `start` of `view`, its text appended to
    `texts`; return where it ends, or None when it is damaged or cut short."""
    member = zlib.decompressobj(31)
    text: list[bytes] = []
    fed = start
    # Fed a piece at a time: what follows the member is copied out as `unused_data`,
    # which for the rest of the file would copy it once for each member.
    while not member.eof and fed < len(view):
        piece = view[fed : fed + _FED]
        fed += len(piece)
        try:
            text.append(member.decompress(piece))
        except zlib.error:
            return None
    if not member.eof:
        return None
    texts.append(b"".join(text))
    return fed - len(member.unused_data)


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
