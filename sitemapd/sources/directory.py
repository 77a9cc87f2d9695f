"""Directory source: rendered files under a root become URLs under the site.

A file whose size, mtime and inode are unchanged since the last scan is not read again.
Dotfiles and dot-folders are never pages, nor is anything under `skip` (the output and
state directories when they sit inside the root).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import traceback
from collections import deque
from collections.abc import Iterator
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import chain, islice
from pathlib import Path
from typing import NamedTuple

from sitemapd.config.sources import DirectorySource
from sitemapd.core import lifeline
from sitemapd.core.globs import compile_globs
from sitemapd.core.observation import (
    TRANSIENT,
    ArticleMeta,
    Checkpoint,
    Gone,
    Item,
    Observation,
    Seen,
    Unreadable,
    file_key,
)
from sitemapd.core.urls import URLPolicy
from sitemapd.errors import InvalidURL, SourceError
from sitemapd.fingerprint import FINGERPRINT_VERSION, Material, Settings, TemplateMemory
from sitemapd.ledger import KnownFile
from sitemapd.sources.base import (
    Context,
    Scan,
    entry_extras,
    log,
    rejected,
    skipped_below,
    with_defaults,
)
from sitemapd.sources.content import FACTS_VERSION, article_meta, exclusion
from sitemapd.sources.pages import Job, PageRead, load, read_file, settings_for

_BATCH = 500
# Batches with this many files to read are read by worker processes, one per core, in
# tasks of _TASK files, _AHEAD batches ahead of the one being applied.
_PARALLEL = 64
_TASK = 128
_AHEAD = 2
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


def walk(
    source: DirectorySource, skip: tuple[str, ...], under: str = ""
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Yield `(relative path, entry)` of every candidate file below `under`, sorted."""
    include, exclude = compile_globs(source.include), compile_globs(source.exclude)
    skipped = skipped_below(source.root, skip)
    start = str(source.root / under)
    # Each folder with its real path: a folder that is no symlink is its parent's real
    # path and its name, with no system call for each of its path's components.
    stack = [(under + "/" if under else "", start, os.path.realpath(start))]
    while stack:
        prefix, folder, real = stack.pop()
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
                    inner = f"{real}/{entry.name}" if real != "/" else f"/{entry.name}"
                    if inner not in skipped:
                        stack.append((relpath + "/", entry.path, inner))
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
    # A deploy's events name each file and the folders holding them: a folder's real
    # path is looked up once, and a file that a walked folder yields is read once.
    real_folder = functools.lru_cache(maxsize=1024)(os.path.realpath)
    walked: set[str] = set()
    files: list[Iterator[tuple[str, os.DirEntry[str] | Path]]] = []
    for relpath in sorted(relpaths):  # a folder before what it holds
        parts = relpath.split("/")
        if any(part.startswith(".") for part in parts):
            continue
        path = source.root / relpath
        if any("/".join(parts[:n]) in walked for n in range(1, len(parts))) and os.path.lexists(
            path
        ):
            continue
        link = path.is_symlink()
        if link:
            real = os.path.realpath(path)
        else:
            real = os.path.join(real_folder(str(path.parent)), path.name)
        if any(real.startswith(s + os.sep) for s in skipped):
            continue
        if path.is_dir() and not link:  # as walk(): symlinked folders are not followed
            if real not in skipped:
                files.append(walk(source, ctx.skip, relpath))
                walked.add(relpath)
        elif path.is_dir():
            continue
        elif include.match(relpath) and not exclude.match(relpath):
            if path.is_file() and _may_follow(source, str(path), link):
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
        # Batches go to the worker processes ahead of the one being finished: they read
        # and parse the next pages while this process applies those they read.
        ahead: deque[_Batch] = deque()
        while batch := list(islice(files, _BATCH)):
            ahead.append(reader.start(batch, reread))
            if len(ahead) > _AHEAD:
                yield from reader.finish(ahead.popleft())
        while ahead:
            yield from reader.finish(ahead.popleft())
    finally:
        reader.close()


@dataclass(frozen=True)
class _How:
    """How a source's files are read into what their observations say: sent to the worker
    processes with each task."""

    settings: Settings
    # The content selector when image:image entries are wanted, else None.
    images_selector: str | None
    policy: URLPolicy
    articles: str
    language: str | None
    alternates: bool
    images: bool


class _Said(NamedTuple):
    """What a page says, as its observation records it, but the part of its fingerprint
    the template learned from its batch decides."""

    fp_settings: str
    # The material of a content fingerprint, or the fingerprint of the bytes.
    fingerprint: Material | str
    fallback: bool
    title: str | None
    exclusion: str | None
    meta: ArticleMeta | None
    extra: str


class _Read(NamedTuple):
    """A file as read, in the compact form worker processes hand back."""

    file_key: str
    source_time: str
    # The hash of the file's bytes.
    raw: str
    # The bytes, kept only when the fingerprint by the stored settings needs them.
    data: bytes | None
    # None when the bytes are those the ledger has: nothing was parsed.
    said: _Said | None


class _Fault(NamedTuple):
    """A page whose reading raised what no page should: a fault of sitemapd's, reported
    with its traceback, that costs the page and not the scan."""

    error: str
    trace: str


@dataclass
class _Batch:
    """Files on their way: what needed no read, and the reads of the others."""

    # Rejected paths and unchanged files, in order.
    items: list[Item]
    # What the ledger knows of each file read, in the order of `jobs`.
    jobs: list[Job]
    # The reads handed to the worker processes, or None: read in this process at finish.
    reads: list[Future[list[_Read | OSError | _Fault]]] | None


class _Page(NamedTuple):
    """A file read in this batch, waiting for the batch's template to be learned."""

    job: Job
    read: _Read
    said: _Said


class _Reader:
    """Reads a source's files into observations with the site's template memory."""

    def __init__(self, source: DirectorySource, ctx: Context) -> None:
        self.source = source
        self.ctx = ctx
        self.settings = fingerprint_settings(source)
        self.memory_cursor = f"template:{source.name}"
        self.memory = TemplateMemory.load(ctx.ledger.cursor(self.memory_cursor))
        self.how = _How(
            self.settings,
            source.content_selector if ctx.images else None,
            ctx.policy,
            source.articles,
            source.language,
            ctx.alternates,
            ctx.images,
        )
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

    def start(self, batch: list[tuple[str, os.DirEntry[str] | Path]], reread: bool) -> _Batch:
        """Return `batch` on its way: unchanged files are Seen, the others are being read."""
        name = self.source.name
        items: list[Item] = []
        located: list[tuple[str, str, os.DirEntry[str] | Path]] = []
        for relpath, entry in batch:
            try:
                loc = self.ctx.policy.for_file(
                    self.source.url_prefix, relpath, self.source.strip_html, self.source.index_files
                )
            except InvalidURL as exc:
                items.append(rejected(name, _printable(relpath), str(exc)))
                continue
            located.append((loc, relpath, entry))
        known = self.ctx.ledger.known_files(name, [loc for loc, _, _ in located])
        jobs: list[Job] = []
        for loc, relpath, entry in located:
            old = known.get(loc)
            if old is not None and not reread:
                try:
                    if file_key(entry.stat()) == old.file_key:
                        items.append(Seen(loc, name))
                        continue
                except OSError as exc:
                    items.extend(self._failed(loc, relpath, old, exc))
                    continue
            jobs.append(Job(relpath, os.fspath(entry), loc, old, reread))
        return _Batch(items, jobs, self._submit(jobs))

    def finish(self, batch: _Batch) -> Iterator[Item]:
        """Yield the observations of `batch`, after learning its template."""
        yield from batch.items
        pages: list[_Page] = []
        for job, read in zip(batch.jobs, self._loaded(batch), strict=True):
            if isinstance(read, OSError | _Fault):
                yield from self._failed(job.loc, job.relpath, job.known, read)
            elif read.said is None:
                yield Seen(job.loc, self.source.name, read.file_key)
            else:
                pages.append(_Page(job, read, read.said))
        before = len(self.memory.known)
        self.memory.learn(
            [p.said.fingerprint.shapes for p in pages if not isinstance(p.said.fingerprint, str)]
        )
        if len(self.memory.known) != before:
            yield Checkpoint(self.memory_cursor, self.memory.dump())
        for page in pages:
            yield self._observation(page)

    def _failed(
        self, loc: str, relpath: str, known: KnownFile | None, exc: OSError | _Fault
    ) -> Iterator[Item]:
        """Yield what a file whose read raised `exc` (or met a fault of ours) is now."""
        if isinstance(exc, FileNotFoundError):
            return  # deleted since the listing: absent from this scan, hence gone
        name = self.source.name
        if isinstance(exc, _Fault):
            log.error("%s: reading %s failed\n%s", name, _printable(relpath), exc.trace)
            yield rejected(name, _printable(relpath), f"unread ({exc.error})")
        elif exc.errno in TRANSIENT:
            yield Unreadable(name, relpath, exc.strerror or str(exc))
        else:
            yield rejected(name, _printable(relpath), f"unreadable ({exc.strerror})")
        if known is not None:
            # A read error is not a deletion: the published URL stays until it is readable.
            yield Seen(loc, name)

    def _submit(self, jobs: list[Job]) -> list[Future[list[_Read | OSError | _Fault]]] | None:
        """Hand `jobs` to the worker processes, one per core, for large batches (a first
        scan, a site-wide deploy); return None when they are read here."""
        if not (self.parallel and (self.pool is not None or len(jobs) >= _PARALLEL)):
            return None
        try:
            if self.pool is None:
                context = multiprocessing.get_context("forkserver")
                # Imported once, by the server the workers fork from, not by each worker.
                context.set_forkserver_preload([__name__])
                # Workers die with the daemon, even a SIGKILLed one (see lifeline).
                self.pool = ProcessPoolExecutor(
                    _WORKERS,
                    mp_context=context,
                    initializer=lifeline.die_with,
                    initargs=(os.getpid(),),
                )
            return [
                self.pool.submit(_read_all, jobs[n : n + _TASK], self.how)
                for n in range(0, len(jobs), _TASK)
            ]
        except (OSError, BrokenProcessPool) as exc:
            self._one_process(exc)
            return None

    def _loaded(self, batch: _Batch) -> list[_Read | OSError | _Fault]:
        """Return the reads of `batch`'s jobs, in order."""
        if batch.reads is not None:
            try:
                return [loaded for future in batch.reads for loaded in future.result()]
            except (OSError, BrokenProcessPool, CancelledError) as exc:
                self._one_process(exc)
        return _read_all(batch.jobs, self.how)

    def _one_process(self, exc: BaseException) -> None:
        # A sandbox without the sockets or processes a pool needs: one core it is.
        log.warning("%s: reading pages in one process (%s)", self.source.name, exc)
        self.close()
        self.parallel = False

    def _observation(self, page: _Page) -> Observation:
        read, said = page.read, page.said
        fingerprint = said.fingerprint
        return Observation(
            loc=page.job.loc,
            source=self.source.name,
            content_hash=fingerprint
            if isinstance(fingerprint, str)
            else fingerprint.digest(self.memory.known),
            source_time=read.source_time,
            title=said.title,
            exclusion=said.exclusion,
            file_key=read.file_key,
            meta=said.meta,
            extra=said.extra,
            bytes_hash=read.raw,
            fp_settings=said.fp_settings,
            old_measure=self._old_measure(page),
            fallback=said.fallback,
        )

    def _old_measure(self, page: _Page) -> str | None:
        """Return the page's fingerprint by the settings of the stored one, when other.

        The same bytes are no change by any measure. Settings of an older sitemapd cannot
        be rebuilt: a page whose bytes changed since then counts as changed.
        """
        known, read = page.job.known, page.read
        if known is None or known.content_hash is None:
            return None
        if known.bytes_hash == read.raw:
            return known.content_hash
        if read.data is None:  # `load` kept the bytes of pages fingerprinted otherwise
            return None
        old = self._old_settings(known.fp_settings)
        if old is None:
            return ""
        return read_file(page.job.relpath, read.data, old).digest(self.memory)

    def _old_settings(self, key: str | None) -> Settings | None:
        if key is None:
            # Fingerprinted before settings were recorded: the bytes less `ignore`.
            return Settings(mode="page", ignore=self.settings.ignore)
        spec = self.ctx.ledger.cursor(f"fingerprint:{key}")
        old = Settings.from_spec(spec) if spec is not None else None
        return old if old is not None and old.version == FINGERPRINT_VERSION else None


def _read_all(jobs: list[Job], how: _How) -> list[_Read | OSError | _Fault]:
    """Return what the files of `jobs` hold: a task for the worker processes."""
    return [_read(job, how) for job in jobs]


def _read(job: Job, how: _How) -> _Read | OSError | _Fault:
    """Return what the file of `job` holds now, or the error reading it raised."""
    try:
        loaded = load(job, how.settings, how.images_selector)
        if isinstance(loaded, OSError):
            return loaded
        said = None if loaded.read is None else _said(loaded.read, job.loc, how)
    except Exception as exc:  # one page's fault must not end the scan
        return _Fault(f"{type(exc).__name__}: {exc}", traceback.format_exc())
    return _Read(loaded.file_key, loaded.source_time, loaded.raw, loaded.data, said)


def _said(read: PageRead, loc: str, how: _How) -> _Said:
    """Return what the page at `loc` read as `read` says: its facts (HTML only) made into
    what the ledger records, here rather than in the process applying the batch."""
    facts, key = read.facts, read.settings.key
    if facts is None:
        return _Said(key, read.fingerprint(), read.fallback, None, None, None, "")
    meta = with_defaults(
        article_meta(facts, loc, how.policy, how.language), how.articles, how.language
    )
    return _Said(
        key,
        read.fingerprint(),
        read.fallback,
        facts.title,
        exclusion(facts, loc, how.policy),
        meta,
        entry_extras(meta, how.alternates, how.images),
    )


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
