"""`sitemapd import`: seed the ledger with lastmods from sitemaps published before.

Switching generators must not make every URL look changed today. A sitemap index is
followed to the shards it names when they sit beside it on disk.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from . import w3c
from .errors import InvalidURL
from .sitemapfile import entries, open_sitemap
from .urls import URLPolicy
from .words import count

log = logging.getLogger(__name__)


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
