"""Where the gzip members of a publish manifest's rows end (publish/manifestfile.py):
after the first line end at least `MEMBER` bytes into each. The rows are cut by their
text alone, so that whoever packs them (the publisher whole, a first load's spool as
they come) packs the same members, and a changed row is packed again with the rows of
its member alone. The first member of every manifest file holds its header line alone.
"""

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
