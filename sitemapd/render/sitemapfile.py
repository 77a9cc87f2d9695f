"""Reading sitemaps: existing ones to import, and our own to verify.

Files are streamed with lxml's iterparse, so a 50,000-URL shard never becomes a tree.
Gzip is recognised by its magic bytes, whatever the file is called.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from lxml import etree

from sitemapd.errors import SitemapdError

NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


@dataclass(frozen=True, slots=True)
class Entry:
    """One `<url>` or `<sitemap>` element: its kind, loc and lastmod as written."""

    kind: str  # "url" or "sitemap"
    loc: str
    lastmod: str | None


class CountingReader(io.RawIOBase):
    """A binary stream that counts the bytes read through it."""

    def __init__(self, inner: BinaryIO) -> None:
        self.inner = inner
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.inner.read(len(buffer))
        buffer[: len(data)] = data
        self.count += len(data)
        return len(data)


def open_sitemap(path: Path) -> BinaryIO:
    """Return the uncompressed contents of `path` as a stream; raises SitemapdError."""
    try:
        handle: BinaryIO = path.open("rb")
    except OSError as exc:
        raise SitemapdError(f"{path}: cannot open ({exc.strerror})") from exc
    if handle.read(2) == b"\x1f\x8b":
        handle.seek(0)
        return gzip.GzipFile(fileobj=handle, mode="rb")  # type: ignore[return-value]
    handle.seek(0)
    return handle


def entries(stream: BinaryIO, where: str) -> Iterator[Entry]:
    """Yield every entry of a sitemap or sitemap index; raises SitemapdError when malformed."""
    try:
        for _, element in etree.iterparse(
            stream, events=("end",), tag=(f"{NS}url", f"{NS}sitemap"), resolve_entities=False
        ):
            loc = element.findtext(f"{NS}loc")
            lastmod = element.findtext(f"{NS}lastmod")
            kind = "url" if element.tag == f"{NS}url" else "sitemap"
            yield Entry(kind, (loc or "").strip(), lastmod.strip() if lastmod else None)
            element.clear()
            while element.getprevious() is not None:
                del element.getparent()[0]
    except (etree.XMLSyntaxError, OSError, EOFError) as exc:
        raise SitemapdError(f"{where}: not a well-formed sitemap ({exc})") from exc


def root_tag(path: Path) -> str:
    """Return the qualified tag of the document element of sitemap file `path`."""
    with open_sitemap(path) as stream:
        try:
            for _, element in etree.iterparse(stream, events=("start",), resolve_entities=False):
                return str(element.tag)
        except (etree.XMLSyntaxError, OSError, EOFError) as exc:
            raise SitemapdError(f"{path}: not well-formed XML ({exc})") from exc
    raise SitemapdError(f"{path}: empty document")
