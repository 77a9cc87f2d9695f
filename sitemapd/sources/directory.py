"""Directory source: rendered files under a root become URLs under the site.

A file whose size, mtime and inode are unchanged since the last scan is not read again.
Dotfiles and dot-folders are never pages, nor is anything under `skip` (the output and
state directories when they sit inside the root).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path

from .. import w3c
from ..config import DirectorySource
from ..content import FACTS_VERSION, article_meta, exclusion
from ..errors import InvalidURL, SourceError
from ..fingerprint import FINGERPRINT_VERSION, Settings, TemplateMemory, bytes_digest
from ..ledger import KnownFile
from ..observation import TRANSIENT, Checkpoint, Gone, Item, Observation, Seen, Unreadable
from ..pages import PageRead, read_file, settings_for
from .base import Context, Scan, log, rejected, skipped_below, with_defaults
from .globs import compile_globs

_BATCH = 500
# Batches with this many files to parse are parsed by worker processes, one per core.
_PARALLEL = 64
_WORKERS = len(os.sched_getaffinity(0))


def scan(source: DirectorySource, ctx: Context) -> Scan:
    """Return a complete scan of the directory; raises SourceError when the root is missing.

    Unchanged files are not read again, unless what sitemapd reads from pages changed
    (a new version, or the source's article settings): then every page is read once,
    which moves no lastmod since the content is the same.
    """
    _check_root(source)
    name, fingerprint = f"facts:{source.name}", _facts_fingerprint(source, ctx)
    reread = ctx.ledger.cursor(name) != fingerprint
    items = _items(source, ctx, walk(source, ctx.skip), reread)
    return Scan(source.name, items, complete=True, cursors={name: fingerprint})


def _facts_fingerprint(source: DirectorySource, ctx: Context) -> str:
    """Return what decides the facts read from a page besides its bytes."""
    return (
        f"{FACTS_VERSION}:{source.articles}:{source.language}:{source.content_selector}:"
        f"{ctx.images}:{ctx.alternates}:{fingerprint_settings(source).key}"
    )


def _check_root(source: DirectorySource) -> None:
    if not source.root.is_dir():
        raise SourceError(
            f"{source.name}: root {source.root} is missing or not a directory "
            "(published output is kept until it returns)"
        )


def observe(source: DirectorySource, ctx: Context, relpaths: set[str]) -> Scan:
    """Return a partial scan of `relpaths`; raises SourceError when the root is missing."""
    _check_root(source)
    return Scan(source.name, _observe_paths(source, ctx, relpaths), complete=False)


def file_key(stat: os.stat_result) -> str:
    """Return the key that tells whether a file changed without reading it."""
    return f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ino}"


def walk(
    source: DirectorySource, skip: tuple[str, ...], under: str = ""
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Yield `(relative path, entry)` of every candidate file below `under`, sorted."""
    include, exclude = compile_globs(source.include), compile_globs(source.exclude)
    skipped = skipped_below(source.root, skip)
    stack = [(under + "/" if under else "", str(source.root / under))]
    while stack:
        prefix, folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name, reverse=True)
        except FileNotFoundError:
            if folder == str(source.root):
                raise SourceError(
                    f"{source.name}: root {source.root} vanished during the scan"
                ) from None
            continue
        except OSError as exc:
            raise SourceError(f"{source.name}: cannot list {folder} ({exc.strerror})") from exc
        files = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            relpath = prefix + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if os.path.realpath(entry.path) not in skipped:
                        stack.append((relpath + "/", entry.path))
                elif (
                    entry.is_file()
                    and include.match(relpath)
                    and not exclude.match(relpath)
                    and _may_follow(source, entry.path, entry.is_symlink())
                ):
                    files.append((relpath, entry))
            except OSError:
                continue
        yield from reversed(files)


def _may_follow(source: DirectorySource, path: str, is_link: bool) -> bool:
    """False when the file at `path` is a symlink out of the root and the source does not
    follow those: anyone who can plant a link would publish (and hash) any file."""
    if source.follow_symlinks or not is_link:
        return True
    return os.path.realpath(path).startswith(os.path.realpath(source.root) + os.sep)


def _observe_paths(source: DirectorySource, ctx: Context, relpaths: set[str]) -> Iterator[Item]:
    """Yield what the files (or folders) at `relpaths` under the root hold now.

    A path that no longer exists yields Gone; a folder is walked. Events are only hints:
    the state of the disk decides.
    """
    include, exclude = compile_globs(source.include), compile_globs(source.exclude)
    skipped = skipped_below(source.root, ctx.skip)
    files: list[Iterator[tuple[str, os.DirEntry[str] | Path]]] = []
    for relpath in sorted(relpaths):
        if any(part.startswith(".") for part in relpath.split("/")):
            continue
        path = source.root / relpath
        if any(os.path.realpath(path).startswith(s + os.sep) for s in skipped):
            continue
        if path.is_dir() and not path.is_symlink():  # as walk(): symlinked folders are not followed
            if os.path.realpath(path) not in skipped:
                files.append(walk(source, ctx.skip, relpath))
        elif path.is_dir():
            continue
        elif include.match(relpath) and not exclude.match(relpath):
            if path.is_file() and _may_follow(source, str(path), path.is_symlink()):
                files.append(iter([(relpath, path)]))
            elif not path.exists():
                try:
                    loc = ctx.policy.for_file(
                        source.url_prefix, relpath, source.strip_html, source.index_files
                    )
                except InvalidURL:
                    continue
                yield Gone(loc, source.name)
    # One batch for all: the pages of a deploy teach the site's template together.
    yield from _items(source, ctx, chain.from_iterable(files))


def _items(
    source: DirectorySource,
    ctx: Context,
    files: Iterator[tuple[str, os.DirEntry[str] | Path]],
    reread: bool = False,
) -> Iterator[Item]:
    """Yield what `files` hold now, a batch at a time: the site's template is learned
    from each batch's pages before any of them is fingerprinted."""
    reader = _Reader(source, ctx)
    try:
        yield from reader.specs()
        yield from _batches(source, ctx, files, reread, reader)
    finally:
        reader.close()


def _batches(
    source: DirectorySource,
    ctx: Context,
    files: Iterator[tuple[str, os.DirEntry[str] | Path]],
    reread: bool,
    reader: _Reader,
) -> Iterator[Item]:
    while batch := list(islice(files, _BATCH)):
        located: list[tuple[str, str, os.DirEntry[str] | Path]] = []
        for relpath, entry in batch:
            try:
                loc = ctx.policy.for_file(
                    source.url_prefix, relpath, source.strip_html, source.index_files
                )
            except InvalidURL as exc:
                yield rejected(source.name, _printable(relpath), str(exc))
                continue
            located.append((loc, relpath, entry))
        known = ctx.ledger.known_files(source.name, [loc for loc, _, _ in located])
        pages: list[_Page] = []
        for loc, relpath, entry in located:
            for item in reader.read(loc, relpath, entry, known.get(loc), reread):
                if isinstance(item, _Page):
                    pages.append(item)
                    # Parsed a few at a time: a batch's pages are not all held as bytes.
                    if len(pages) % _PARALLEL == 0:
                        reader.parse(pages[-_PARALLEL:])
                else:
                    yield item
        reader.parse(pages[len(pages) - len(pages) % _PARALLEL :])
        yield from reader.finish(pages)


@dataclass
class _Page:
    """A file read in this batch, waiting for the batch's template to be learned."""

    loc: str
    relpath: str
    stat: os.stat_result
    # The hash of the file's bytes, and the bytes until they are parsed (kept after only
    # when the old settings' measure needs them).
    raw: str
    data: bytes | None
    known: KnownFile | None
    read: PageRead | None = None


class _Reader:
    """Reads a source's files into observations with the site's template memory."""

    def __init__(self, source: DirectorySource, ctx: Context) -> None:
        self.source = source
        self.ctx = ctx
        self.settings = fingerprint_settings(source)
        self.memory_cursor = f"template:{source.name}"
        self.memory = TemplateMemory.load(ctx.ledger.cursor(self.memory_cursor))
        self.images = source.content_selector if ctx.images else None
        self.pool: ProcessPoolExecutor | None = None
        # Off on one core, and once a pool could not be started.
        self.parallel = _WORKERS > 1

    def close(self) -> None:
        """Stop the worker processes, if any were started."""
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)
            self.pool = None

    def specs(self) -> Iterator[Checkpoint]:
        """Yield the specs of this source's settings, so a later change can rebuild them."""
        for relpath in ("page.html", "file"):
            settings = settings_for(relpath, self.settings)
            yield Checkpoint(f"fingerprint:{settings.key}", settings.spec())

    def read(
        self,
        loc: str,
        relpath: str,
        entry: os.DirEntry[str] | Path,
        known: KnownFile | None,
        reread: bool,
    ) -> Iterator[Item | _Page]:
        """Yield what the file says now: a Seen, nothing (deleted), a Rejected, or a
        _Page to fingerprint once the batch is read."""
        name = self.source.name
        try:
            stat = entry.stat()
            key = file_key(stat)
            if known is not None and key == known.file_key and not reread:
                yield Seen(loc, name)
                return
            with open(entry, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            return  # deleted since the listing: absent from this scan, hence gone
        except OSError as exc:
            if exc.errno in TRANSIENT:
                yield Unreadable(name, relpath, exc.strerror or str(exc))
            else:
                yield rejected(name, _printable(relpath), f"unreadable ({exc.strerror})")
            if known is not None:
                # A read error is not a deletion: the published URL stays until it is readable.
                yield Seen(loc, name)
            return
        raw = bytes_digest(data)
        if (
            known is not None
            and not reread
            and known.bytes_hash == raw
            and known.fp_settings == settings_for(relpath, self.settings).key
        ):
            # Touched or copied with the same bytes: nothing to parse.
            yield Seen(loc, name, key)
            return
        yield _Page(loc, relpath, stat, raw, data, known)

    def parse(self, pages: list[_Page]) -> None:
        """Read what `pages` say, letting go of their bytes where nothing else needs them."""
        jobs = [(p.relpath, p.data or b"", self.settings, self.images) for p in pages]
        for page, read in zip(pages, self._read_all(jobs), strict=True):
            page.read = read
            known = page.known
            if (
                known is None
                or known.content_hash is None
                or known.bytes_hash == page.raw
                or known.fp_settings == read.settings.key
            ):
                page.data = None

    def finish(self, pages: list[_Page]) -> Iterator[Item]:
        """Yield the observations of a batch's parsed `pages`, after learning its template."""
        before = len(self.memory.known)
        self.memory.learn(
            [p.read.reading.shapes() for p in pages if p.read and p.read.reading is not None]
        )
        if len(self.memory.known) != before:
            yield Checkpoint(self.memory_cursor, self.memory.dump())
        for page in pages:
            yield self._observation(page)

    def _read_all(self, jobs: list[tuple[str, bytes, Settings, str | None]]) -> list[PageRead]:
        """Return what each file of a batch says, read on every core for large batches."""
        if self.parallel and (self.pool is not None or len(jobs) >= _PARALLEL):
            # A first scan or a site-wide deploy: parse on every core while the ledger
            # takes what is read.
            try:
                if self.pool is None:
                    context = multiprocessing.get_context("forkserver")
                    self.pool = ProcessPoolExecutor(_WORKERS, mp_context=context)
                return list(self.pool.map(_read_job, jobs, chunksize=8))
            except (OSError, BrokenProcessPool) as exc:
                # A sandbox without the sockets or processes a pool needs: one core it is.
                log.warning("%s: reading pages in one process (%s)", self.source.name, exc)
                self.close()
                self.parallel = False
        return [_read_job(job) for job in jobs]

    def _observation(self, page: _Page) -> Observation:
        read, source, ctx = page.read, self.source, self.ctx
        assert read is not None
        content_hash = read.digest(self.memory)
        raw = page.raw
        source_time = w3c.format_epoch(page.stat.st_mtime)
        common = {
            "content_hash": content_hash,
            "source_time": source_time,
            "file_key": file_key(page.stat),
            "bytes_hash": raw,
            "fp_settings": read.settings.key,
            "old_measure": self._old_measure(page, raw),
            "fallback": read.fallback,
        }
        if read.facts is None:
            return Observation(page.loc, source.name, **common)  # type: ignore[arg-type]
        facts = read.facts
        meta = with_defaults(
            article_meta(facts, page.loc, ctx.policy, source.language),
            source.articles,
            source.language,
        )
        return Observation(
            loc=page.loc,
            source=source.name,
            title=facts.title,
            exclusion=exclusion(facts, page.loc, ctx.policy),
            meta=meta,
            extra=ctx.extra(meta),
            **common,  # type: ignore[arg-type]
        )

    def _old_measure(self, page: _Page, raw: str) -> str | None:
        """Return the page's fingerprint by the settings of the stored one, when other.

        The same bytes are no change by any measure. Settings of an older sitemapd cannot
        be rebuilt: a page whose bytes changed since then counts as changed.
        """
        known = page.known
        if known is None or known.content_hash is None:
            return None
        if known.bytes_hash == raw:
            return known.content_hash
        if page.data is None:  # `parse` kept the bytes of pages fingerprinted otherwise
            return None
        old = self._old_settings(known.fp_settings)
        if old is None:
            return ""
        return read_file(page.relpath, page.data, old).digest(self.memory)

    def _old_settings(self, key: str | None) -> Settings | None:
        if key is None:
            # Fingerprinted before settings were recorded: the bytes less `ignore`.
            return Settings(mode="page", ignore=self.settings.ignore)
        spec = self.ctx.ledger.cursor(f"fingerprint:{key}")
        old = Settings.from_spec(spec) if spec is not None else None
        return old if old is not None and old.version == FINGERPRINT_VERSION else None


def _read_job(job: tuple[str, bytes, Settings, str | None]) -> PageRead:
    """Return what one file says: `read_file` as a picklable job for worker processes."""
    return read_file(*job)


def fingerprint_settings(source: DirectorySource) -> Settings:
    """Return how the HTML pages of `source` are fingerprinted."""
    return Settings(
        mode=source.fingerprint,
        selector=source.content_selector,
        ignore=tuple(p.pattern.decode() for p in source.ignore),
    )


def _printable(relpath: str) -> str:
    """Return `relpath` safe to log and store, even when it is not valid UTF-8."""
    return relpath.encode("utf-8", "backslashreplace").decode("utf-8")
