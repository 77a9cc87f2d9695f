"""What sources tell the ledger. Sources only observe; the ledger decides what changed."""

# Annotations are evaluated, not kept as text: `typing.NamedTuple` compiles each text one
# into a ForwardRef, half of what its classes cost every start (0.2 ms each).
import errno
import os
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple


class ArticleMeta(NamedTuple):
    """A page's news, hreflang and image data, normalised for rendering (a tuple: worker
    processes hand it back for every page they read)."""

    published: str | None
    language: str | None
    news_title: str | None
    article: bool
    # (hreflang, canonical URL), sorted by hreflang with x-default last.
    alternates: tuple[tuple[str, str], ...]
    # Absolute http(s) URLs on any host (images often live on a CDN).
    images: tuple[str, ...]


class Observation(NamedTuple):
    """A URL as a source sees it now."""

    loc: str
    source: str
    # None when the source gives no content (a URL list): its `source_time` decides instead.
    content_hash: str | None
    # The source's own time for this URL, canonical W3C (file mtime, a list's datetime).
    source_time: str | None
    title: str | None = None
    # Why the page itself asks to stay out of sitemaps ("noindex", "canonical: URL").
    exclusion: str | None = None
    # "size:mtime_ns:inode" of the file read, so an unchanged file is not read again.
    file_key: str | None = None
    # News and language facts, when the source has any.
    meta: ArticleMeta | None = None
    # The rendered xhtml:link / image:image elements of its sitemap entry.
    extra: str = ""
    # The hash of the file's bytes as read, and the `Settings.key` of the fingerprint
    # settings that produced `content_hash` (files only).
    bytes_hash: str | None = None
    fp_settings: str | None = None
    # The content's fingerprint by the settings of the stored one, when those differ from
    # `fp_settings`: the ledger compares this with what it stored instead.
    old_measure: str | None = None
    # True when the page's main content was not found and the whole page counted.
    fallback: bool = False


class Seen:
    """A URL whose content is unchanged since the last scan: still there."""

    __slots__ = ("file_key", "loc", "source")

    loc: str
    source: str
    # The file's new key when only it moved (a touch, a copy of the same bytes).
    file_key: str | None

    def __init__(self, loc: str, source: str, file_key: str | None = None) -> None:
        self.loc = loc
        self.source = source
        self.file_key = file_key


class Gone:
    """A URL whose content no longer exists at the source (a deleted file)."""

    __slots__ = ("loc", "source")

    loc: str
    source: str

    def __init__(self, loc: str, source: str) -> None:
        self.loc = loc
        self.source = source


class Rejected(NamedTuple):
    """An item that cannot become a sitemap URL, with the reason."""

    source: str
    item: str
    reason: str


class Unreadable:
    """A file whose read failed for now (TRANSIENT): read again soon, never applied."""

    __slots__ = ("item", "reason", "source")

    source: str
    item: str  # the path to read again, relative to the source's root
    reason: str

    def __init__(self, source: str, item: str, reason: str) -> None:
        self.source = source
        self.item = item
        self.reason = reason


# Read errors that pass: descriptors run out (EMFILE, ENFILE), a disk or network file
# system hiccups (EIO, EAGAIN), memory is short, a signal interrupts.
TRANSIENT = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.EIO, errno.EAGAIN, errno.ENOMEM, errno.EINTR}
)


class ListChunk(NamedTuple):
    """A stretch of a URL list, cut where its content says (so that an edit changes only
    the stretches around it): the unit in which lists are read and remembered."""

    source: str
    # Position in the file, from 0, and the number of the chunk's first line, from 1.
    pos: int
    first_line: int
    # xxh3-128 of the chunk's bytes, and the offset after them in the file.
    digest: bytes
    end: int
    # `(loc, canonical datetime or "")` of each valid line, in order; None when the
    # ledger knows the chunk by its digest and it was not parsed again.
    lines: Sequence[tuple[str, str]] | None
    # How many of its lines were rejected (re-parsed each read, for their line numbers).
    rejects: int = 0


class Changes:
    """A change log's rows of one read that name URLs, in order, column by column: the
    unit in which change logs are applied, so that a backlog drains without an object
    per row. Row `i` deletes `locs[i]` when `deleted[i]`, else upserts it with the
    other columns' values."""

    __slots__ = ("content_hashes", "deleted", "locs", "metas", "source", "source_times", "titles")

    source: str
    locs: list[str]
    deleted: list[bool]
    content_hashes: list[str | None]
    # Canonical W3C: the row's change time, or the time of the run when it has none.
    source_times: list[str]
    titles: list[str | None]
    metas: list[ArticleMeta]

    def __init__(
        self,
        source: str,
        locs: list[str],
        deleted: list[bool],
        content_hashes: list[str | None],
        source_times: list[str],
        titles: list[str | None],
        metas: list[ArticleMeta],
    ) -> None:
        self.source = source
        self.locs = locs
        self.deleted = deleted
        self.content_hashes = content_hashes
        self.source_times = source_times
        self.titles = titles
        self.metas = metas

    @property
    def upserts(self) -> int:
        """Return how many rows upsert their URL."""
        return len(self.locs) - sum(self.deleted)

    def items(self) -> Iterator[Observation | Gone]:
        """Yield each row as the Observation or Gone it stands for."""
        source = self.source
        for loc, deleted, content_hash, source_time, title, meta in zip(
            self.locs,
            self.deleted,
            self.content_hashes,
            self.source_times,
            self.titles,
            self.metas,
            strict=True,
        ):
            if deleted:
                yield Gone(loc, source)
            else:
                # A change log names no alternates or images: its entries have no extras.
                yield Observation(loc, source, content_hash, source_time, title, meta=meta)

    def only(self, keep: Callable[[str], bool]) -> "Changes":
        """Return the rows whose URL `keep` holds true of, in order."""
        kept = [at for at, loc in enumerate(self.locs) if keep(loc)]
        return Changes(
            self.source,
            [self.locs[at] for at in kept],
            [self.deleted[at] for at in kept],
            [self.content_hashes[at] for at in kept],
            [self.source_times[at] for at in kept],
            [self.titles[at] for at in kept],
            [self.metas[at] for at in kept],
        )


class Checkpoint(NamedTuple):
    """A source's cursor after the items before it: stored in the same transaction."""

    name: str
    value: str


Item = Observation | Seen | Gone | Rejected | Unreadable | Checkpoint | ListChunk | Changes


def file_key(stat: os.stat_result) -> str:
    """Return an `Observation.file_key`: what tells whether a file changed without reading
    it. The ctime tells an edit of the same size copied with its mtime kept (`cp -p`,
    `rsync --inplace -t`), which size, mtime and inode miss."""
    return f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ino}:{stat.st_ctime_ns}"


def keyed_before_ctime(key: str) -> str:
    """Return `key` as releases before the ctime was part of it wrote it (size, mtime,
    inode): a ledger's old key is trusted once, then replaced, rather than every page of
    a site read again on upgrade."""
    return key.rpartition(":")[0]
