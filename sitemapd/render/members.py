"""The gzip members of a publish manifest's rows (publish/manifestfile.py): where they end
(after the first line end at least `MEMBER` bytes into each) and how each is packed. The
rows are cut by their text alone, so that whoever packs them (the publisher whole, a
first load's spool as they come) packs the same members, and a changed row is packed
again with the rows of its member alone.

Each member's gzip header carries an extra field (RFC 1952's FEXTRA, subfield `SM`)
with the member's length and its count of rows, as BGZF's blocks carry theirs: the
member holding a given row is found by reading headers alone, and only it is inflated.
The field ends with the CRC-32 of the member's bytes after it: a damaged member is told
without inflating it (its gzip trailer checks its rows only once they are inflated).
Every gzip reader skips the field. The first member of every manifest file holds its
header line alone, and says nothing of the kind."""

from __future__ import annotations

import zlib

# Bytes of rows a member holds at least.
MEMBER = 65536
# The manifest format's version, and the header line that names it.
VERSION = 1
HEADER = f"sitemapd-manifest {VERSION}"
# The header's member: the bytes of gzip.compress(..., 1, mtime=0), without loading gzip
# for a quiet build.
HEADER_MEMBER = zlib.compress(f"{HEADER}\n".encode(), 1, 31)
# The extra field: its length (XLEN, 16), the subfield's id and length (12), then the
# member's bytes and rows and the CRC-32 of its bytes after the field, little-endian as
# gzip's fields are (not `struct`: a quiet build that reads no manifest does not load it).
_FIELD = b"\x10\x00SM\x0c\x00"
_LABEL = len(_FIELD) + 12
# The first bytes of a labelled member: gzip's magic, deflate, the FEXTRA flag alone.
_START = b"\x1f\x8b\x08\x04"
# Where the extra field starts in a gzip header (after ID1 ID2 CM FLG MTIME XFL OS).
_EXTRA_AT = 10


def boundaries(lines: bytes, filled: int) -> list[int]:
    """Return the offsets in `lines` after which a member ends, `filled` bytes of the
    member they go on being before them."""
    ends: list[int] = []
    at = max(MEMBER - 1 - filled, 0)
    while (newline := lines.find(b"\n", at)) >= 0:
        ends.append(newline + 1)
        at = newline + MEMBER
    return ends


def member_ends(lines: bytes) -> list[int]:
    """Return where in the rows `lines` their members end: at each of the `boundaries`
    and at the end of the rows (one empty member for no rows)."""
    ends = boundaries(lines, 0)
    return ends if ends and ends[-1] == len(lines) else [*ends, len(lines)]


def pack_member(rows: bytes, count: int | None = None) -> bytes:
    """Return the member of `rows` (whole lines, `count` of them when known): level 1
    (read by sitemapd alone), mtime 0 and no name (the same rows give the same bytes),
    labelled."""
    # zlib, not ISA-L's deflate (40% of its time): ISA-L once packed the same three rows
    # into two different members in one test run, which no isolated trial repeated.
    return labelled(zlib.compress(rows, 1, 31), rows.count(b"\n") if count is None else count)


def labelled(member: bytes, rows: int) -> bytes:
    """Return the gzip member `member` as zlib writes it (a 10-byte header, no flags),
    of `rows` rows, with the extra field giving its length, its rows and its CRC."""
    rest = member[_EXTRA_AT:]
    size = (len(member) + _LABEL).to_bytes(4, "little")
    extra = _FIELD + size + rows.to_bytes(4, "little") + zlib.crc32(rest).to_bytes(4, "little")
    return _START + member[4:_EXTRA_AT] + extra + rest


def label(data: bytes, at: int) -> tuple[int, int] | None:
    """Return the length and the rows of the labelled member at offset `at` of `data`, as
    its header says; None when no labelled member starts there, or it is cut short or not
    the bytes its CRC was taken of."""
    field = at + _EXTRA_AT
    if data[at : at + len(_START)] != _START or data[field : field + len(_FIELD)] != _FIELD:
        return None
    values = data[field + len(_FIELD) : field + _LABEL]
    if len(values) < 12:  # cut short
        return None
    size, rows, crc = (int.from_bytes(values[n : n + 4], "little") for n in (0, 4, 8))
    # A length within its own header would not move its reader on.
    if not _EXTRA_AT + _LABEL < size <= len(data) - at:
        return None
    if zlib.crc32(memoryview(data)[field + _LABEL : at + size]) != crc:
        return None
    return size, rows
