"""Reading a directory's pages in parallel: worker processes parse and fingerprint each
batch of files while the ledger takes the previous one; a worker that dies costs only
its batch, read again in this process."""

from __future__ import annotations

import multiprocessing
import os
import traceback
from collections.abc import Iterator
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from sitemapd.config.sources import DirectorySource
from sitemapd.core import lifeline
from sitemapd.core.observation import (
    TRANSIENT,
    ArticleMeta,
    Checkpoint,
    Item,
    Observation,
    Seen,
    Unreadable,
    file_key,
    keyed_before_ctime,
)
from sitemapd.core.urls import URLPolicy
from sitemapd.errors import InvalidURL
from sitemapd.fingerprint import FINGERPRINT_VERSION, Material, Settings, TemplateMemory
from sitemapd.ledger.model import KnownFile
from sitemapd.sources.base import (
    Context,
    entry_extras,
    file_url,
    log,
    rejected,
    with_defaults,
)
from sitemapd.sources.content import article_meta, exclusion
from sitemapd.sources.pages import (
    HTML_READ,
    Job,
    PageRead,
    fingerprint_settings,
    load,
    read_file,
    settings_for,
)

# Batches with this many files to read are read by worker processes, one per core, in
# tasks of _TASK files, AHEAD batches ahead of the one being applied.
_PARALLEL = 64


_TASK = 128


AHEAD = 2


_WORKERS = len(os.sched_getaffinity(0))


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
    # The bytes of a page read for its first HTML_READ alone (`pages.is_cut`), else 0.
    cut: int


class _Fault(NamedTuple):
    """A page whose reading raised what no page should: a fault of sitemapd's, reported
    with its traceback, that costs the page and not the scan."""

    error: str
    trace: str


@dataclass
class Batch:
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


class PageReader:
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

    def start(self, batch: list[tuple[str, os.DirEntry[str] | Path]], reread: bool) -> Batch:
        """Return `batch` on its way: unchanged files are Seen, the others are being read."""
        name = self.source.name
        items: list[Item] = []
        located: list[tuple[str, str, os.DirEntry[str] | Path]] = []
        for relpath, entry in batch:
            try:
                loc = file_url(self.ctx.policy, self.source, relpath)
            except InvalidURL as exc:
                items.append(rejected(name, printable(relpath), str(exc)))
                continue
            located.append((loc, relpath, entry))
        known = self.ctx.ledger.known_files(name, [loc for loc, _, _ in located])
        jobs: list[Job] = []
        for loc, relpath, entry in located:
            old = known.get(loc)
            if old is not None and not reread:
                try:
                    key = file_key(entry.stat())
                    if key == old.file_key:
                        items.append(Seen(loc, name))
                        continue
                    if keyed_before_ctime(key) == old.file_key:
                        items.append(Seen(loc, name, key))
                        continue
                except OSError as exc:
                    items.extend(self._failed(loc, relpath, old, exc))
                    continue
            jobs.append(Job(relpath, os.fspath(entry), loc, old, reread))
        return Batch(items, jobs, self._submit(jobs))

    def finish(self, batch: Batch) -> Iterator[Item]:
        """Yield the observations of `batch`, after learning its template."""
        yield from batch.items
        pages: list[_Page] = []
        for job, read in zip(batch.jobs, self._loaded(batch), strict=True):
            if isinstance(read, OSError | _Fault):
                yield from self._failed(job.loc, job.relpath, job.known, read)
            elif read.said is None:
                yield Seen(job.loc, self.source.name, read.file_key)
            else:
                if read.cut:
                    log.warning(
                        "%s: %s (%s bytes) is read for its first %d MiB alone, as search "
                        "engines read it: an edit past them moves no lastmod",
                        self.source.name,
                        printable(job.relpath),
                        f"{read.cut:,}",
                        HTML_READ >> 20,
                    )
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
            log.error("%s: reading %s failed\n%s", name, printable(relpath), exc.trace)
            yield rejected(name, printable(relpath), f"unread ({exc.error})")
        elif exc.errno in TRANSIENT:
            yield Unreadable(name, relpath, exc.strerror or str(exc))
        else:
            yield rejected(name, printable(relpath), f"unreadable ({exc.strerror})")
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

    def _loaded(self, batch: Batch) -> list[_Read | OSError | _Fault]:
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
    return _Read(loaded.file_key, loaded.source_time, loaded.raw, loaded.data, said, loaded.cut)


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


def printable(relpath: str) -> str:
    """Return `relpath` safe to log and store, even when it is not valid UTF-8."""
    return relpath.encode("utf-8", "backslashreplace").decode("utf-8")
