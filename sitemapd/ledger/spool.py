"""Shards of a first load (of URL lists and change logs), rendered as their rows are
inserted and kept beside the ledger for the publish that follows the load's commit, with
the lines of their publish manifests (publish/manifestfile.py), at hand there too.

Rendering a shard from the ledger costs SQLite a row lookup and a concatenation for
every URL; a first load has each URL and lastmod at hand as it inserts them, and
formatting them there costs a fifth of that. A spooled shard stands in for its rendering
only when it holds what the ledger then holds: its count of URLs and of entry bytes
agree with the shard's, and no row was deleted or repeated since. Any doubt, a full
disk, a crash: the shard is rendered from the ledger, as every later publish does.

The publish that follows has little left to do. A spooled document's digest is taken
as it is written and the file is fsynced (on a thread of the spool's own, as the next
shard fills): a local publish on the same file system moves it into place instead of
reading and copying it. The manifest lines are packed on the same thread, into the gzip
members that follow the header's in the shard's manifest file (each compressed and
written once its lines are all there: its header says its length), which is synced and
moved into place too.
"""

# Annotations evaluated, not text: see core/observation.py.
import os
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import NamedTuple, TypeVar

from sitemapd.core import docdigest, logs
from sitemapd.core.workers import Pending, Workers
from sitemapd.ledger.shards import ShardState
from sitemapd.render.members import HEADER_MEMBER, boundaries, pack_member
from sitemapd.render.sitemap import URLSET_HEAD, URLSET_TAIL, column_entries, manifest_lines

log = logs.Logger("sitemapd.ledger")

_T = TypeVar("_T")

# Free space a spool leaves the ledger: a first load's ledger grows by about twice the
# bytes of the sitemaps it renders, so spooling stops well before it could fill the disk.
_RESERVE = 1 << 30
_LEDGER_PER_SPOOLED = 4
_HEAD, _TAIL = URLSET_HEAD.encode(), URLSET_TAIL.encode()
# Pieces of work the spool's thread may lag behind by (a list chunk's entries and lines:
# a few hundred KB each): their bytes are held meanwhile, and those of the member being
# filled until it is packed (at most one more piece).
_QUEUE = 16


def manifest_path(path: Path) -> Path:
    """Return the manifest file spooled beside the document file `path`: the header's
    member, then the lines' gzip members as publish/manifestfile.py's `pack` gives them
    (level 1, no name, mtime 0); whole and synced once closed, as the document."""
    return path.with_name(path.name + ".manifest")


class _Spooled(NamedTuple):
    """A spooled shard: its document file, and the URLs and entry bytes written into it."""

    path: Path
    urls: int
    size: int


class SpooledShard:
    """A shard's document as a first load spooled it, complete and fsynced."""

    __slots__ = ("digest", "manifest", "path", "size")

    path: Path
    manifest: Path  # the gzip members of its manifest lines
    digest: str  # of the document (`docdigest.of`)
    size: int  # bytes of the document

    def __init__(self, path: Path, manifest: Path, digest: str, size: int) -> None:
        self.path = path
        self.manifest = manifest
        self.digest = digest
        self.size = size


class _Files:
    """The files of one spooled shard: its document, hashed as it is written, and its
    manifest lines, packed as each member fills. Written on the spool's thread alone, in
    order; the document is complete and on disk once closed."""

    def __init__(self, shard: int, path: Path) -> None:
        """Open the files of the document `path` of `shard`; raises OSError."""
        self.shard = shard
        self.document = path.open("wb")
        try:
            self.manifest = manifest_path(path).open("wb")
        except OSError:
            self.document.close()
            raise
        try:
            # The whole document and manifest file: the publish moves or reads each as
            # it is stored.
            self.document.write(_HEAD)
            self.manifest.write(HEADER_MEMBER)
        except OSError:
            self.document.close()
            self.manifest.close()
            raise
        self.hash = docdigest.hasher(_HEAD)
        # The members `pack` gives: each closed where `boundaries` says, packed whole
        # then (`pack_member`) and written, its header saying its length and rows.
        self.lines: list[bytes | memoryview] = []  # of the member being filled, so far
        self.filled = 0  # bytes of lines in the member being filled
        self.rows = 0  # and their rows
        self.members = 0  # members closed

    def write(self, pieces: tuple[bytes, bytes, int]) -> None:
        """Append entries and their manifest lines (of so many URLs); raises OSError."""
        entries, lines, urls = pieces
        self.document.write(entries)
        self.hash.update(entries)
        start = 0
        view = memoryview(lines)  # joined where they lie, not copied out first
        ends = boundaries(lines, self.filled)
        for end in ends:
            # The rows of the last member closed here are those before the lines left
            # after it: the shorter side is counted (a piece closes one member or none,
            # most often), and counting holds the GIL the loading thread waits for.
            if end == ends[-1] and len(lines) - end < end - start:
                rows = urls - lines.count(b"\n", end)
            else:
                rows = lines.count(b"\n", start, end)
            self._close_member(view[start:end], rows)
            start, urls = end, urls - rows
        if start < len(lines):
            self.lines.append(view[start:])
            self.filled += len(lines) - start
            self.rows += urls

    def _close_member(self, lines: bytes | memoryview, rows: int) -> None:
        """Write the member being filled, ended by `lines` of `rows` rows."""
        self.lines.append(lines)
        self.manifest.write(pack_member(b"".join(self.lines), self.rows + rows))
        self.lines, self.filled, self.rows, self.members = [], 0, 0, self.members + 1

    def close(self) -> str:
        """Finish both files and flush the document to disk; return the document's digest
        (`docdigest.of`). Raises OSError."""
        try:
            self.document.write(_TAIL)
            self.hash.update(_TAIL)
            if self.filled or not self.members:  # the last member, or the empty one
                self._close_member(b"", 0)
            self.manifest.flush()
            os.fsync(self.manifest.fileno())
            self.document.flush()
            os.fsync(self.document.fileno())
            # On disk now, and moved into the output folder unread: its pages leave the
            # page cache, and the load's next writes reuse them. A 10M load otherwise
            # leaves 1.2 GB more there, and on a virtual machine each page of memory the
            # guest has not written before costs a host fault inside the kernel's copy
            # (10M cold builds: 23.4-24.8 s against 25.7-26.1 s, system time 7-9 s
            # against 10.5-12 s).
            if hasattr(os, "posix_fadvise"):  # not on macOS
                os.posix_fadvise(self.document.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            return self.hash.hexdigest()
        finally:
            self.document.close()
            self.manifest.close()


class ShardSpool:
    """The `<urlset>` documents of the shards a first load fills, one file a shard, and
    the manifest lines of the same URLs, one file beside it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.shards: dict[int, _Spooled] = {}
        # The shard being filled, and its files.
        self._open: tuple[int, _Files] | None = None
        self._total = 0
        self._stopped = False
        # The digest of each closed shard's document.
        self._digests: dict[int, str] = {}
        # Writing, hashing, compressing and syncing wait outside the GIL, on a thread of
        # their own.
        self._thread: Workers | None = None
        self._pending: deque[Pending[None]] = deque()
        # Why the work of a shard failed (not kept as futures: a 10M-URL list loads in
        # 10,000 pieces of work, 16 MB of futures).
        self._failed: dict[int, Exception] = {}

    def add(
        self,
        shard: int,
        locs: Sequence[str],
        fingerprints: Sequence[str | None],
        lastmods: Sequence[str],
    ) -> None:
        """Append the entries and manifest lines of URLs read from no file (`locs`, their
        fingerprints and lastmods) to the spool of `shard`; once spooling fails (a full
        disk, a folder that cannot be made), it stops for the load."""
        if self._stopped:
            return
        data = column_entries(locs, lastmods).encode()
        lines = manifest_lines(locs, fingerprints, lastmods).encode()
        self.add_formatted(shard, len(locs), data, lines)

    def add_formatted(self, shard: int, urls: int, data: bytes, lines: bytes) -> None:
        """Append the entries `data` of `urls` URLs and their manifest `lines`, formatted
        already (UTF-8, as `add` formats them), to the spool of `shard`."""
        if self._stopped:
            return
        try:
            files = self._files(shard)
        except OSError as exc:
            log.debug("%s: shards rendered from the ledger instead (%s)", self.folder, exc)
            self.drop()
            return
        if files is None:
            return
        self._submit(shard, files.write, (data, lines, urls))
        path, spooled, size = self.shards[shard]
        self.shards[shard] = _Spooled(path, spooled + urls, size + len(data))
        self._total += len(data)

    def _submit(self, shard: int, job: Callable[[_T], None], arg: _T) -> None:
        """Run `job(arg)` on the spool's thread, after the work submitted before."""
        if self._thread is None:
            self._thread = Workers(1, "sitemapd-spool")
        while len(self._pending) >= _QUEUE:
            self._pending.popleft().result()  # waits (errors: see _run)
        self._pending.append(self._thread.submit(partial(self._run, shard, job, arg)))

    def _run(self, shard: int, job: Callable[[_T], None], arg: _T) -> None:
        """Run `job(arg)` for `shard`, noting why it failed."""
        try:
            job(arg)
        except Exception as exc:  # whatever it was, the shard's files are not to be trusted
            self._failed.setdefault(shard, exc)

    def _files(self, shard: int) -> _Files | None:
        """Return the open files of `shard`, opening them (and closing the last) on the
        first entries of a shard; None when there is no room."""
        if self._open is not None and self._open[0] == shard:
            return self._open[1]
        self._close()
        if shard in self.shards:
            # Shards fill in turn: entries coming back to a closed one mean other writes.
            self.drop()
            return None
        self.folder.mkdir(exist_ok=True)
        space = os.statvfs(self.folder)  # what shutil.disk_usage says is free
        if space.f_bavail * space.f_frsize < _RESERVE + _LEDGER_PER_SPOOLED * self._total:
            self._stopped = True
            return None
        path = self.folder / f"shard-{shard}"
        files = _Files(shard, path)
        self._open = (shard, files)
        self.shards[shard] = _Spooled(path, 0, 0)
        return files

    def seal(self) -> None:
        """Close the shard being filled: its document is synced on the spool's thread
        while the caller goes on. Entries that come for it after are not spooled."""
        self._close()

    def _close(self) -> None:
        if self._open is not None:
            shard, files = self._open
            self._open = None
            self._submit(shard, self._seal, files)

    def _seal(self, files: _Files) -> None:
        """Close `files`, keeping their document's digest (on the spool's thread)."""
        self._digests[files.shard] = files.close()

    def _wait(self) -> None:
        """Wait for the spool's thread to finish its work (its errors: `self._failed`)."""
        if self._thread is not None:
            self._thread.close()
            self._thread = None
        self._pending.clear()

    def drop(self) -> None:
        """Forget every spooled shard and delete its file; spooling stops for the load."""
        self._stopped = True
        self._close()
        self._wait()
        self.shards = {}
        import shutil  # here: a build that spools nothing does not load it (with bz2, lzma)

        shutil.rmtree(self.folder, ignore_errors=True)

    def keep(self, states: Mapping[int, ShardState]) -> dict[int, SpooledShard]:
        """Close the spool once its files are written and its documents on disk; return
        the shards whose URL and byte counts are those of `states` (the ledger's shards),
        deleting the others."""
        self._close()
        self._wait()
        kept: dict[int, SpooledShard] = {}
        for shard, (path, count, size) in self.shards.items():
            state = states.get(shard)
            failed = self._failed.get(shard)
            if failed is not None:
                log.debug("%s: rendered from the ledger instead (%s)", path, failed)
            elif state is not None and (state.url_count, state.bytes) == (count, size):
                document = len(_HEAD) + size + len(_TAIL)
                digest = self._digests[shard]
                kept[shard] = SpooledShard(path, manifest_path(path), digest, document)
                continue
            path.unlink(missing_ok=True)
            manifest_path(path).unlink(missing_ok=True)
        return kept
