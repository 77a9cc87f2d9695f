"""The manifest file format: one per published shard, kept beside the sitemaps under
`.sitemapd/manifest/<shard>.tsv.gz` (never named in an index, never served by the
sidecar).

Version 1: gzip of UTF-8 text; a first line `sitemapd-manifest 1`, then one line per
live URL of the shard: `loc <TAB> fingerprint <TAB> lastmod <TAB> bytes`, where bytes is
the hash of the page's file as read (empty for a source that reads no file). Files
without the first line (version 0, sitemapd 0.x on S3) hold the first three fields. A
file of a later version is skipped: its lines may mean something else.
"""

from __future__ import annotations

import gzip
import io
import logging
import zlib
from collections.abc import Iterator

log = logging.getLogger("sitemapd.manifestfile")

# Where sitemapd keeps what crawlers never read: leases and manifests.
PRIVATE = ".sitemapd/"
VERSION = 1
_HEADER = f"sitemapd-manifest {VERSION}"
_HEADER_LINE = f"{_HEADER}\n".encode()
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
    out = io.BytesIO()
    # mtime=0: the same rows give the same bytes. Level 1: read by sitemapd alone. Written
    # in pieces: the rows of a shard (5 MB) are not copied behind the first line.
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=1, mtime=0) as stream:
        stream.write(_HEADER_LINE)
        stream.write(lines)
    return out.getvalue()


def decode(data: bytes, where: str) -> Iterator[Row]:
    """Yield the rows of the manifest file `data` (read from `where`, for messages);
    nothing for an empty, damaged or later-version file."""
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
