"""Directory source: rendered files under a root become URLs under the site.

A file whose size, mtime and inode are unchanged since the last scan is not read again.
Dotfiles and dot-folders are never pages, nor is anything under `skip` (the output and
state directories when they sit inside the root).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

from .. import w3c
from ..config import DirectorySource
from ..content import FACTS_VERSION, article_meta, content_hash, exclusion, read_page
from ..errors import InvalidURL, SourceError
from ..observation import TRANSIENT, Gone, Item, Observation, Seen, Unreadable
from .base import Context, Scan, rejected, skipped_below, with_defaults
from .globs import compile_globs

_BATCH = 500
_HTML_SUFFIXES = (".html", ".htm", ".xhtml")


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
        f"{ctx.images}:{ctx.alternates}"
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
                elif entry.is_file() and include.match(relpath) and not exclude.match(relpath):
                    files.append((relpath, entry))
            except OSError:
                continue
        yield from reversed(files)


def _observe_paths(source: DirectorySource, ctx: Context, relpaths: set[str]) -> Iterator[Item]:
    """Yield what the files (or folders) at `relpaths` under the root hold now.

    A path that no longer exists yields Gone; a folder is walked. Events are only hints:
    the state of the disk decides.
    """
    include, exclude = compile_globs(source.include), compile_globs(source.exclude)
    skipped = skipped_below(source.root, ctx.skip)
    for relpath in sorted(relpaths):
        if any(part.startswith(".") for part in relpath.split("/")):
            continue
        path = source.root / relpath
        if any(os.path.realpath(path).startswith(s + os.sep) for s in skipped):
            continue
        if path.is_dir() and not path.is_symlink():  # as walk(): symlinked folders are not followed
            if os.path.realpath(path) not in skipped:
                yield from _items(source, ctx, walk(source, ctx.skip, relpath))
        elif path.is_dir():
            continue
        elif include.match(relpath) and not exclude.match(relpath):
            if path.is_file():
                yield from _items(source, ctx, iter([(relpath, path)]))
            elif not path.exists():
                try:
                    loc = ctx.policy.for_file(
                        source.url_prefix, relpath, source.strip_html, source.index_files
                    )
                except InvalidURL:
                    continue
                yield Gone(loc, source.name)


def _items(
    source: DirectorySource,
    ctx: Context,
    files: Iterator[tuple[str, os.DirEntry[str] | Path]],
    reread: bool = False,
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
        for loc, relpath, entry in located:
            key = known.get(loc)
            yield from _observe(source, ctx, loc, relpath, entry, key, reread and key is not None)


def _observe(
    source: DirectorySource,
    ctx: Context,
    loc: str,
    relpath: str,
    entry: os.DirEntry[str] | Path,
    known_key: str | None,
    reread: bool = False,
) -> Iterator[Item]:
    try:
        stat = entry.stat()
        key = file_key(stat)
        if key == known_key and not reread:
            yield Seen(loc, source.name)
            return
        with open(entry, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return  # deleted since the listing: absent from this scan, hence gone
    except OSError as exc:
        if exc.errno in TRANSIENT:
            yield Unreadable(source.name, relpath, exc.strerror or str(exc))
        else:
            yield rejected(source.name, _printable(relpath), f"unreadable ({exc.strerror})")
        if known_key is not None:
            # A read error is not a deletion: the published URL stays until it is readable.
            yield Seen(loc, source.name)
        return
    if not relpath.lower().endswith(_HTML_SUFFIXES):
        yield Observation(
            loc, source.name, content_hash(data, source.ignore), w3c.format_epoch(stat.st_mtime)
        )
        return
    # The body is parsed only when images inside it are wanted.
    facts = read_page(data, source.content_selector if ctx.images else None)
    meta = with_defaults(
        article_meta(facts, loc, ctx.policy, source.language), source.articles, source.language
    )
    yield Observation(
        loc=loc,
        source=source.name,
        content_hash=content_hash(data, source.ignore),
        source_time=w3c.format_epoch(stat.st_mtime),
        title=facts.title,
        exclusion=exclusion(facts, loc, ctx.policy),
        file_key=key,
        meta=meta,
        extra=ctx.extra(meta),
    )


def _printable(relpath: str) -> str:
    """Return `relpath` safe to log and store, even when it is not valid UTF-8."""
    return relpath.encode("utf-8", "backslashreplace").decode("utf-8")
