"""Which file a URL is served from: of a folder's files that are one URL (`index.html`
and `index.htm`; `a.html` and `a.htm` with `strip_html`), the one a web server serves,
the first of `index_files`, `.html` before `.htm`."""

# Annotations evaluated, not text: see core/observation.py.
import os
from urllib.parse import unquote, urlsplit

from sitemapd.config.sources import DirectorySource
from sitemapd.core.globs import Selection


def served_as(source: DirectorySource, name: str) -> tuple[str, int]:
    """Return the last segment of the URL a file `name` is published as ("" for a
    folder's index) and its rank among the files published as that URL: the lowest is
    served (the first of `index_files`, then `.html` before `.htm` before no suffix)."""
    if name in source.index_files:
        return "", source.index_files.index(name)
    if source.strip_html:
        for rank, suffix in enumerate((".html", ".htm")):
            if name.endswith(suffix):
                return name[: -len(suffix)], rank
        return name, 2
    return name, 0


def rivals(source: DirectorySource, relpath: str) -> list[str]:
    """Return the paths of the files of `relpath`'s folder that would be published as its
    URL, `relpath` among them, the served one first."""
    folder, slash, name = relpath.rpartition("/")
    return candidates(source, folder + slash + served_as(source, name)[0])


def served_file(source: DirectorySource, relpath: str) -> str | None:
    """Return the file published as the URL of the file at `relpath` (`relpath` itself,
    or one served in its place), or None when none is a page now."""
    folder, slash, name = relpath.rpartition("/")
    pages = Selection(source.include, source.exclude)
    return served_at(source, pages, folder + slash + served_as(source, name)[0])


def served_at(source: DirectorySource, pages: Selection, rest: str) -> str | None:
    """Return the file served as `rest` below the source's prefix, among its `pages`, or
    None when none is a page now."""
    return next((r for r in candidates(source, rest) if servable(source, pages, r)), None)


def servable(source: DirectorySource, pages: Selection, relpath: str) -> bool:
    """True when the file at `relpath` is a page of `source` now: among its `pages`, a
    file, and no link out of the root it may not follow."""
    path = source.root / relpath
    return relpath in pages and path.is_file() and may_follow(source, str(path), path.is_symlink())


def may_follow(source: DirectorySource, path: str, is_link: bool) -> bool:
    """False when the file at `path` is a symlink out of the root and the source does not
    follow those: anyone who can plant a link would publish (and hash) any file."""
    if source.follow_symlinks or not is_link:
        return True
    return os.path.realpath(path).startswith(os.path.realpath(source.root) + os.sep)


def candidates(source: DirectorySource, rest: str) -> list[str]:
    """Return the relative paths of the files published as `rest` below the source's
    prefix (`a/` of `a/index.html`, `a` of `a.html` with `strip_html`), the served first."""
    folder, slash, leaf = rest.rpartition("/")
    names = source.index_files if leaf == "" else (leaf + ".html", leaf + ".htm", leaf)
    same = sorted(
        (n for n in names if served_as(source, n)[0] == leaf),
        key=lambda n: served_as(source, n)[1],
    )
    return [folder + slash + n for n in same]


def still_there(source: DirectorySource, locs: list[str]) -> set[str]:
    """Return those of `locs` (URLs of `source`) a page of the source is served as now."""
    pages = Selection(source.include, source.exclude)
    found = set()
    for loc in locs:
        # File names are bytes: an escape of one that is no UTF-8 reads as the OS does.
        path = unquote(urlsplit(loc).path, errors="surrogateescape")
        rest = path[len(source.url_prefix) :]
        if path.startswith(source.url_prefix) and served_at(source, pages, rest) is not None:
            found.add(loc)
    return found
