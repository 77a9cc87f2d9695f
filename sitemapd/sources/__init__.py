"""Sources observe where content lives and yield items for the ledger; they never write."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitemapd.sources.base import Context, Scan

if TYPE_CHECKING:
    from sitemapd.changelog import Reader
    from sitemapd.config.sources import ContentSource, DirectorySource

__all__ = ["Context", "Scan", "observe", "scan"]


def scan(source: ContentSource, ctx: Context, reader: Reader | None = None) -> Scan:
    """Return a one-shot scan of `source`: in full, or after its cursor for a change log
    (read through `reader`)."""
    # Each kind loads on first use: a `build` of URL lists starts without the HTML parsers
    # the directory source needs. The config's kinds too: the list's parse worker, a
    # process of its own, loads this package and reads no config.
    from sitemapd.config.sources import DirectorySource, UrlListSource

    if isinstance(source, DirectorySource):
        from sitemapd.sources import directory

        return directory.scan(source, ctx)
    if isinstance(source, UrlListSource):
        from sitemapd.sources import urllist

        return urllist.scan(source, ctx.policy, ctx.ledger, ctx.now)
    assert reader is not None
    from sitemapd.sources import changelog

    return changelog.scan(source, ctx, reader)


def observe(source: DirectorySource, ctx: Context, relpaths: set[str]) -> Scan:
    """Return a scan of what changed at `relpaths` under a directory source."""
    from sitemapd.sources import directory

    return directory.observe(source, ctx, relpaths)
