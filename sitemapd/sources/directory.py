"""Directory source: rendered files under a root become URLs under the site.

A file whose size, mtime and inode are unchanged since the last scan is not read again.
Dotfiles and dot-folders are never pages, nor is anything under `skip` (the output and
state directories when they sit inside the root). Of the files of a folder that are one
URL (`index.html` and `index.htm`; `a.html` and `a.htm` with `strip_html`), the one a
web server serves is the page, always the same: the first of `index_files`, `.html`
before `.htm`.
"""

from __future__ import annotations

import functools
import os
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from pathlib import Path

from sitemapd.config.sources import DirectorySource
from sitemapd.core.globs import Selection
from sitemapd.core.observation import (
    Gone,
    Item,
)
from sitemapd.errors import InvalidURL, SourceError
from sitemapd.sources.base import (
    Context,
    Scan,
    file_url,
    log,
    skipped_below,
)
from sitemapd.sources.content import FACTS_VERSION
from sitemapd.sources.pagereader import AHEAD, Batch, PageReader
from sitemapd.sources.pages import fingerprint_settings
from sitemapd.sources.served import may_follow, rivals, servable, served_as, still_there

_BATCH = 500


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
    return Scan(
        source.name,
        items,
        complete=True,
        cursors={name: fingerprint},
        present=functools.partial(still_there, source),
    )


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
    pages = Selection(source.include, source.exclude)
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
        files: list[tuple[str, os.DirEntry[str]]] = []
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
                    and relpath in pages
                    and may_follow(source, entry.path, entry.is_symlink())
                ):
                    files.append((relpath, entry))
            except OSError:
                continue
        yield from _served(source, reversed(files))


def _served(
    source: DirectorySource, files: Iterable[tuple[str, os.DirEntry[str]]]
) -> list[tuple[str, os.DirEntry[str]]]:
    """Return `files` (of one folder, in order) but those another of them is served in
    place of (`served_as`), each such one logged."""
    listed = [(relpath, entry, *served_as(source, entry.name)) for relpath, entry in files]
    best: dict[str, tuple[int, str]] = {}
    for relpath, _, leaf, rank in listed:
        if leaf not in best or rank < best[leaf][0]:
            best[leaf] = rank, relpath
    kept = []
    for relpath, entry, leaf, _ in listed:
        served = best[leaf][1]
        if served == relpath:
            kept.append((relpath, entry))
        else:
            _log_shadowed(source, relpath, served)
    return kept


def _log_shadowed(source: DirectorySource, relpath: str, served: str) -> None:
    log.warning(
        "%s: %s is not published: %s is served as the same URL", source.name, relpath, served
    )


def _observe_paths(source: DirectorySource, ctx: Context, relpaths: set[str]) -> Iterator[Item]:
    """Yield what the files (or folders) at `relpaths` under the root hold now.

    A path that no longer exists yields Gone; a folder is walked. Events are only hints:
    the state of the disk decides.
    """
    pages = Selection(source.include, source.exclude)
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
        elif relpath in pages:
            # The file served as its URL now: this one, another that takes its place
            # once it is no page (gone, a folder, a link leading nowhere or out of the
            # root), or none.
            now = [r for r in rivals(source, relpath) if servable(source, pages, r)]
            served = now[0] if now else None
            if served is not None and (served == relpath or relpath not in now):
                files.append(iter([(served, source.root / served)]))
            elif served is not None:
                _log_shadowed(source, relpath, served)
            elif not path.exists():
                try:
                    loc = file_url(ctx.policy, source, relpath)
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
    reader = PageReader(source, ctx)
    try:
        yield from reader.specs()
        # Batches go to the worker processes ahead of the one being finished: they read
        # and parse the next pages while this process applies those they read.
        ahead: deque[Batch] = deque()
        while batch := list(islice(files, _BATCH)):
            ahead.append(reader.start(batch, reread))
            if len(ahead) > AHEAD:
                yield from reader.finish(ahead.popleft())
        while ahead:
            yield from reader.finish(ahead.popleft())
    finally:
        reader.close()
