"""`sitemapd import`: seed the ledger with lastmods from sitemaps published before.

Switching generators must not make every URL look changed today. A sitemap index is
followed to the shards it names when they sit beside it on disk.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from . import w3c
from .errors import InvalidURL
from .sitemapfile import entries, open_sitemap
from .urls import URLPolicy

log = logging.getLogger(__name__)


@dataclass
class ImportTally:
    urls: int = 0
    skipped: int = 0
    files: int = 0


def read_sitemaps(
    paths: list[Path], policy: URLPolicy, tally: ImportTally
) -> Iterator[tuple[str, str | None]]:
    """Yield `(loc, lastmod)` from sitemaps and indexes at `paths`; raises SitemapdError."""
    pending, done = list(paths), set()
    while pending:
        path = pending.pop(0)
        if path.resolve() in done:
            continue
        done.add(path.resolve())
        tally.files += 1
        with open_sitemap(path) as stream:
            for entry in entries(stream, str(path)):
                if entry.kind == "sitemap":
                    child = path.parent / Path(unquote(urlsplit(entry.loc).path)).name
                    if child.is_file():
                        pending.append(child)
                    else:
                        log.warning(
                            "%s: no local copy of %s (looked for %s)", path, entry.loc, child
                        )
                    continue
                try:
                    loc = policy.normalise(entry.loc)
                    lastmod = w3c.parse(entry.lastmod) if entry.lastmod else None
                except (InvalidURL, ValueError) as exc:
                    log.warning("%s: skipped %s: %s", path, entry.loc[:200], exc)
                    tally.skipped += 1
                    continue
                tally.urls += 1
                yield loc, lastmod
