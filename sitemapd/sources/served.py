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
    leaf, _ = served_as(source, name)
    if leaf == "" and name in source.index_files:
        names = list(source.index_files)
    elif source.strip_html:
        names = [leaf + ".html", leaf + ".htm", leaf]
    else:
        return [relpath]
    # Only those published as the same URL (`index.htm` is `/b/index` with `strip_html`
    # when `index_files` names `index.html` alone).
    same = [n for n in names if served_as(source, n)[0] == leaf]
    return [folder + slash + n for n in sorted(same, key=lambda n: served_as(source, n)[1])]


def served_file(source: DirectorySource, relpath: str) -> str | None:
    """Return the file published as the URL of the file at `relpath` (`relpath` itself,
    or one served in its place), or None when none is a page now."""
    pages = Selection(source.include, source.exclude)
    return next((r for r in rivals(source, relpath) if servable(source, pages, r)), None)


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


def candidates(rest: str, source: DirectorySource) -> list[str]:
    """Return the relative paths whose URL could be `rest` below the source's prefix."""
    if rest == "" or rest.endswith("/"):
        return [rest + name for name in source.index_files]
    return [rest, rest + ".html", rest + ".htm"]


def still_there(source: DirectorySource, locs: list[str]) -> set[str]:
    """Return those of `locs` (URLs of `source`) a page of the source is served as now."""
    pages = Selection(source.include, source.exclude)
    found = set()
    for loc in locs:
        # File names are bytes: an escape of one that is no UTF-8 reads as the OS does.
        path = unquote(urlsplit(loc).path, errors="surrogateescape")
        if not path.startswith(source.url_prefix):
            continue
        rest = path[len(source.url_prefix) :]
        if any(servable(source, pages, relpath) for relpath in candidates(rest, source)):
            found.add(loc)
    return found
