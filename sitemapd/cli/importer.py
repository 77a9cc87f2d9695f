"""`sitemapd import`: seed the ledger with lastmods from sitemaps published before.

Switching generators must not make every URL look changed today. A sitemap index is
followed to the sitemaps it names, found on disk at their URL's path below the index's
folder (or beside it); an RSS 2.0 or Atom 1.0 feed it names (sitemaps.org accepts them)
gives each item's link and date.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlsplit

from lxml import etree

from sitemapd.core import logs, w3c
from sitemapd.core.urls import URLPolicy
from sitemapd.core.words import count
from sitemapd.errors import InvalidURL, SitemapdError
from sitemapd.render.sitemapfile import Entry, entries, open_sitemap, root_tag

log = logs.Logger("sitemapd.importer")


@dataclass
class ImportTally:
    """What an import read, and what of it cannot be used, by why."""

    urls: int = 0
    skipped: int = 0
    files: int = 0
    # Skipped entries for URLs off the site, by scheme://host/.
    other_hosts: dict[str, int] = field(default_factory=dict)
    no_lastmod: int = 0
    future: int = 0

    def unused(self, root: str) -> list[str]:
        """Return a line per kind of entry the import could not use, saying why."""
        lines = []
        if self.other_hosts:
            hosts = ", ".join(sorted(self.other_hosts))
            lines.append(
                f"{count(sum(self.other_hosts.values()), 'entry', 'entries')} for other "
                f"hosts ({hosts}) not used: only URLs on {root} are published"
            )
        if self.no_lastmod:
            lines.append(
                f"{count(self.no_lastmod, 'entry', 'entries')} without <lastmod> not used: "
                "nothing to carry over; their source's own time serves"
            )
        if self.future:
            lines.append(
                f"{count(self.future, 'entry', 'entries')} with a <lastmod> in the future not used"
            )
        return lines


def read_sitemaps(
    paths: list[Path], policy: URLPolicy, tally: ImportTally, now: str
) -> Iterator[tuple[str, str | None]]:
    """Yield `(loc, lastmod)` from sitemaps and indexes at `paths`, counting in `tally`
    what is not usable as of `now`; raises SitemapdError."""
    pending, done = list(paths), set()
    while pending:
        path = pending.pop(0)
        if path.resolve() in done:
            continue
        done.add(path.resolve())
        tally.files += 1
        with open_sitemap(path) as stream:
            for entry in _entries(path, stream):
                if entry.kind == "sitemap":
                    child = _local_copy(path.parent, entry.loc)
                    if child is not None:
                        pending.append(child)
                    else:
                        log.warning(
                            "%s: no local copy of %s (looked below %s)",
                            path,
                            entry.loc,
                            path.parent,
                        )
                    continue
                try:
                    loc = policy.normalise(entry.loc)
                    lastmod = w3c.parse(entry.lastmod) if entry.lastmod else None
                except (InvalidURL, ValueError) as exc:
                    log.warning("%s: skipped %s: %s", path, entry.loc[:200], exc)
                    tally.skipped += 1
                    parts = urlsplit(entry.loc.strip())
                    host = f"{parts.scheme}://{parts.netloc}/"
                    if parts.netloc and host != policy.origin.root:
                        tally.other_hosts[host] = tally.other_hosts.get(host, 0) + 1
                    continue
                tally.urls += 1
                if lastmod is None:
                    tally.no_lastmod += 1
                elif lastmod > now:
                    tally.future += 1
                yield loc, lastmod


def _local_copy(folder: Path, url: str) -> Path | None:
    """Return the file in `folder` holding the sitemap at `url`: at the URL's path below
    `folder`, or the shorter ends of that path (the index may sit below the site root),
    down to its name beside the index; None when there is none."""
    parts = [p for p in unquote(urlsplit(url).path).split("/") if p not in ("", ".", "..")]
    for start in range(len(parts)):
        candidate = folder.joinpath(*parts[start:])
        if candidate.is_file():
            return candidate
    return None


_ATOM = "{http://www.w3.org/2005/Atom}"


def _entries(path: Path, stream: BinaryIO) -> Iterator[Entry]:
    """Yield the entries of a sitemap, sitemap index, or feed (its items as URLs);
    raises SitemapdError when malformed."""
    tag = root_tag(path)
    if tag not in (f"{_ATOM}feed", "rss"):
        yield from entries(stream, str(path))
        return
    item, link, date = (f"{_ATOM}entry", f"{_ATOM}link", f"{_ATOM}updated")
    if tag == "rss":
        item, link, date = ("item", "link", "pubDate")
    try:
        for _, element in etree.iterparse(stream, tag=item, resolve_entities=False):
            if tag == "rss":
                loc = element.findtext(link) or ""
            else:
                links = element.findall(link)
                loc = next(
                    (x.get("href", "") for x in links if x.get("rel", "alternate") == "alternate"),
                    "",
                )
            yield Entry("url", loc.strip(), _feed_date(element.findtext(date)))
            element.clear()
    except (etree.XMLSyntaxError, OSError, EOFError) as exc:
        raise SitemapdError(f"{path}: not a well-formed feed ({exc})") from exc


def _feed_date(text: str | None) -> str | None:
    """Return a feed item's date as a W3C datetime: Atom's is one, RSS's is RFC 822."""
    if not text or not text.strip():
        return None
    try:
        return parsedate_to_datetime(text.strip()).isoformat()
    except (TypeError, ValueError):
        return text.strip()
