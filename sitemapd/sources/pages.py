"""Read one file of a directory source: what it says about itself and its fingerprint.

An HTML page is parsed once for both its facts (title, canonical, robots, article data)
and its significant-change fingerprint; other files are fingerprinted by their bytes.
`load` does all of it from the path, in whichever process reads it.
"""

# Annotations evaluated, not text: see core/observation.py.
import os
import re
from typing import NamedTuple

from sitemapd.config.sources import DirectorySource
from sitemapd.core import w3c
from sitemapd.core.observation import file_key
from sitemapd.fingerprint import (
    Material,
    Reading,
    Settings,
    TemplateMemory,
    bytes_digest,
    bytes_hasher,
    parse_html,
    read_html,
    without_ignored,
)
from sitemapd.ledger.model import KnownFile
from sitemapd.sources.content import PageFacts, read_page
from sitemapd.sources.jsonld import is_article, ld_objects, one_product

HTML_SUFFIXES = (".html", ".htm", ".xhtml")
# The bytes of an HTML page that are read for what it says: Googlebot reads the first 15
# MB of an HTML file and indexes nothing past them. A page of 200 MB took 874 MB to parse;
# its bytes past these are hashed as they are read, never held.
HTML_READ = 15 << 20
# A longer page is cut after the last end of a block in the 64 KiB before HTML_READ (of a
# line, or of a tag, where it has none there), not at a byte: a template a few bytes
# longer or shorter (an asset's version, a stamp) then moves what is read only where
# such an end crosses the mark, not the text of the last block.
_BLOCK_END = re.compile(
    rb"</(?:p|li|div|tr|table|[uod]l|dd|section|article|h[1-6]|pre|blockquote|figure)\s*>",
    re.IGNORECASE,
)
_BLOCKS_BEFORE = 64 << 10


class PageRead:
    """A file as read: its facts (HTML only) and what its fingerprint is taken over."""

    __slots__ = ("bytes_fingerprint", "facts", "reading", "settings")

    def __init__(
        self,
        settings: Settings,
        facts: PageFacts | None,
        reading: Reading | None,
        bytes_fingerprint: str | None,
    ) -> None:
        self.settings = settings
        self.facts = facts
        # The content fingerprint's material (HTML in "content" mode), else None.
        self.reading = reading
        # The bytes fingerprint ("page" mode and non-HTML files), else None.
        self.bytes_fingerprint = bytes_fingerprint

    def digest(self, memory: TemplateMemory) -> str:
        """Return the fingerprint, the site's template texts in `memory` left out."""
        fingerprint = self.fingerprint()
        return fingerprint if isinstance(fingerprint, str) else fingerprint.digest(memory.known)

    def fingerprint(self) -> Material | str:
        """Return what the fingerprint is hashed from (HTML in "content" mode), else the
        fingerprint of the bytes."""
        if self.reading is not None:
            return self.reading.material()
        assert self.bytes_fingerprint is not None
        return self.bytes_fingerprint

    @property
    def fallback(self) -> bool:
        """True when no main content was found and the whole page counted."""
        return self.reading is not None and self.reading.fallback


def is_html(relpath: str) -> bool:
    """True when the file at `relpath` is read as an HTML page."""
    return relpath.lower().endswith(HTML_SUFFIXES)


def fingerprint_settings(source: DirectorySource) -> Settings:
    """Return how the HTML pages of `source` are fingerprinted."""
    return Settings(
        mode=source.fingerprint,
        selector=source.content_selector,
        ignore=tuple(p.pattern.decode() for p in source.ignore),
    )


def settings_for(relpath: str, settings: Settings) -> Settings:
    """Return the fingerprint settings of the file at `relpath`: non-HTML files always
    hash their bytes."""
    if settings.mode == "page" or is_html(relpath):
        return settings
    return Settings(mode="page", ignore=settings.ignore, version=settings.version)


def read_file(
    relpath: str,
    data: bytes,
    settings: Settings,
    images_selector: str | None = None,
    explain: bool = False,
) -> PageRead:
    """Return what the file at `relpath` holding `data` says, by fingerprint `settings`.

    `images_selector` asks for the images inside it (image:image entries).
    """
    settings = settings_for(relpath, settings)
    if not is_html(relpath):
        return PageRead(settings, None, None, bytes_digest(data, settings.patterns()))
    part = read_part(data)
    if settings.mode == "page":
        facts = read_page(part, images_selector)
        return PageRead(settings, facts, None, bytes_digest(data, settings.patterns()))
    text = without_ignored(part, settings.patterns())
    tree = parse_html(text)
    facts = read_page(part, images_selector, tree=tree)
    if tree is None:
        return PageRead(settings, facts, Reading([], [], fallback=True), None)
    objects = ld_objects(text)
    articles = [o for o in objects if is_article(o)]
    reading = read_html(tree, articles, settings, explain=explain, product=one_product(objects))
    return PageRead(settings, facts, reading, None)


def read_part(data: bytes) -> bytes:
    """Return what is read of the HTML page `data` (whole, or its first HTML_READ bytes
    and more: `is_cut`) for what it says: all of it, or its first HTML_READ bytes up to
    the last end of a block in them."""
    if not is_cut(len(data)):
        return data
    start = HTML_READ - _BLOCKS_BEFORE
    ends = [end.end() for end in _BLOCK_END.finditer(data, start, HTML_READ)]
    if ends:
        return data[: ends[-1]]
    for mark in (b"\n", b">"):
        at = data.rfind(mark, start, HTML_READ)
        if at >= 0:
            return data[: at + 1]
    return data[:HTML_READ]


def held(settings: Settings) -> int | None:
    """Return how many bytes of a file read by `settings` (its own: `settings_for`) are
    held: all (None), or one more than HTML_READ for a page fingerprinted by its content,
    which can do without the rest (the one more tells that there is more)."""
    return HTML_READ + 1 if settings.mode == "content" else None


def is_cut(size: int) -> bool:
    """True when an HTML page of `size` bytes is read for its first HTML_READ alone."""
    return size > HTML_READ


class Job(NamedTuple):
    """A file to read: where it is, its URL, and what the ledger knows of it (None: a new
    file)."""

    relpath: str
    path: str
    loc: str
    known: KnownFile | None
    # Read and parse even when the bytes are those the ledger has (what is read changed).
    reread: bool


class Loaded(NamedTuple):
    """A file as read from disk: its key, time and bytes hash, and what it says."""

    file_key: str
    source_time: str
    # The hash of the file's bytes.
    raw: str
    # The bytes, kept only when the fingerprint by the stored settings needs them.
    data: bytes | None
    # None when the bytes are those the ledger has: nothing to parse.
    read: PageRead | None
    # The bytes of an HTML page read for its first HTML_READ alone (`is_cut`), else 0.
    cut: int = 0


def load(job: Job, settings: Settings, images_selector: str | None = None) -> Loaded | OSError:
    """Return what the file of `job` holds now, or the error reading it raised."""
    chosen = settings_for(job.relpath, settings)
    try:
        stat, data, raw, size = read_hashed(job.path, held(chosen))
    except OSError as exc:
        return exc
    key, source_time = file_key(stat), w3c.format_epoch(stat.st_mtime)
    cut = size if is_html(job.relpath) and is_cut(size) else 0
    known = job.known
    if (
        known is not None
        and not job.reread
        and known.bytes_hash == raw
        and known.fp_settings == chosen.key
    ):
        # Touched or copied with the same bytes: nothing to parse.
        return Loaded(key, source_time, raw, None, None, cut)
    read = read_file(job.relpath, data, settings, images_selector)
    # The stored fingerprint was taken by other settings: comparing needs the bytes.
    keep = (
        known is not None
        and known.content_hash is not None
        and known.bytes_hash != raw
        and known.fp_settings != read.settings.key
    )
    return Loaded(key, source_time, raw, data if keep else None, read, cut)


def read_hashed(path: str, head: int | None = None) -> tuple[os.stat_result, bytes, str, int]:
    """Return the status, the bytes (their first `head` alone, when given), the hash
    (`bytes_digest`) and the size of the whole file at `path`, as read."""
    if head is None:
        stat, data = read_bytes(path)
        return stat, data, bytes_digest(data), len(data)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        stat = os.fstat(fd)
        asked = min(stat.st_size + 1, head)
        data = os.read(fd, asked)
        if len(data) < asked:  # the whole file, as for `read_bytes`
            return stat, data, bytes_digest(data), len(data)
        # Longer than `head`, or grown meanwhile: the rest is hashed as it comes.
        digest, kept, size = bytes_hasher(data), [data], len(data)
        while rest := os.read(fd, 1 << 20):
            digest.update(rest)
            if size < head:
                kept.append(rest[: head - size])
            size += len(rest)
    finally:
        os.close(fd)
    return stat, b"".join(kept), digest.hexdigest(), size


def read_bytes(path: str) -> tuple[os.stat_result, bytes]:
    """Return the status and bytes of the file at `path`, in four system calls for most
    files: this runs for every page of a first scan."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        stat = os.fstat(fd)
        # One byte more than its size: a file that grew meanwhile is read to its end.
        data = os.read(fd, stat.st_size + 1)
        if len(data) > stat.st_size:
            chunks = [data]
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            data = b"".join(chunks)
    finally:
        os.close(fd)
    return stat, data
