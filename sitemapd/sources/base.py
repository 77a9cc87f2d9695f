"""What every source shares: the shape of a scan and how a bad item is reported."""

# Annotations evaluated, not text: see core/observation.py.
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sitemapd.core import logs
from sitemapd.core.observation import ArticleMeta, Item, Rejected
from sitemapd.core.urls import URLPolicy
from sitemapd.render.extensions import url_extras

if TYPE_CHECKING:
    from sitemapd.config.sources import DirectorySource
    from sitemapd.ledger.ledger import Ledger

log = logs.Logger("sitemapd.sources")


def file_url(policy: URLPolicy, source: "DirectorySource", relpath: str) -> str:
    """Return the URL the file at `relpath` under `source`'s root is published as;
    raises InvalidURL when it can have none."""
    return policy.for_file(source.url_prefix, relpath, source.strip_html, source.index_files)


def skipped_below(folder: Path, skip: tuple[str, ...]) -> set[str]:
    """Return the real paths of the `skip` folders that can hold content of `folder`.

    A skipped folder that holds `folder` itself (sitemaps written into the web root)
    skips nothing: there only sitemapd's own files are left out, as dotfiles or by name.
    """
    inside = os.path.realpath(folder) + os.sep
    return {
        real
        for real in (os.path.realpath(path) for path in skip)
        if not inside.startswith(real + os.sep)
    }


def rejected(source: str, item: str, reason: str) -> Rejected:
    """Log why `item` cannot become a sitemap URL and return it as a Rejected item."""
    return reported(Rejected(source, item, reason))


def reported(item: Rejected) -> Rejected:
    """Log why `item` cannot become a sitemap URL and return it."""
    log.warning("%s: skipped %s: %s", item.source, item.item, item.reason)
    return item


class Scan:
    """Items from one source; `complete` when they describe everything it holds."""

    # A plain class: a dataclass costs every build's start-up its generated methods.
    __slots__ = ("complete", "cursors", "items", "more", "name", "present")

    def __init__(
        self,
        name: str,
        items: Iterator[Item],
        complete: bool,
        cursors: dict[str, str] | None = None,
        present: Callable[[list[str]], set[str]] | None = None,
    ) -> None:
        self.name = name
        self.items = items
        self.complete = complete
        self.cursors = cursors or {}
        # Of a full scan's URLs not among its items, those a page is there for now (moved
        # away and back while the scan ran): not gone.
        self.present = present
        # Set once the items are read when the source holds more than one scan takes.
        self.more = False


class Context:
    """What every scan needs besides its source's own settings."""

    __slots__ = ("alternates", "images", "ledger", "now", "policy", "skip")

    policy: URLPolicy
    ledger: "Ledger"
    # The time of the run, canonical W3C.
    now: str
    # Folders that are never content (sitemapd's own output and state).
    skip: tuple[str, ...]
    # Which extra elements sitemap entries carry.
    alternates: bool
    images: bool

    def __init__(
        self,
        policy: URLPolicy,
        ledger: "Ledger",
        now: str,
        skip: tuple[str, ...] = (),
        alternates: bool = True,
        images: bool = False,
    ) -> None:
        self.policy = policy
        self.ledger = ledger
        self.now = now
        self.skip = skip
        self.alternates = alternates
        self.images = images


def entry_extras(meta: ArticleMeta | None, alternates: bool, images: bool) -> str:
    """Return the xhtml:link (with `alternates`) and image:image (with `images`) elements
    of an entry with `meta`."""
    if meta is None or not (meta.alternates or meta.images):
        return ""
    return url_extras(meta.alternates if alternates else (), meta.images if images else ())


def with_defaults(meta: ArticleMeta, articles: str, language: str | None) -> ArticleMeta:
    """Return `meta` with a source's defaults: its language, and which pages are articles."""
    article = {"all": True, "none": False}.get(articles, meta.article)
    if article == meta.article and (meta.language or not language):
        return meta  # the common case, without a copy
    return meta._replace(article=article, language=meta.language or language)
