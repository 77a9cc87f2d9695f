"""`[site]` and `[sitemap]`: where the site lives and how its sitemaps are cut."""

# Annotations evaluated, not text: see core/observation.py.
from pathlib import Path
from typing import NamedTuple

from sitemapd.config.fleet import Partition, read_partition
from sitemapd.config.table import Table
from sitemapd.core.urls import Origin
from sitemapd.errors import ConfigError

MAX_URLS = 50_000


MAX_BYTES = 52_428_800


DEFAULT_INDEX = "sitemap.xml"


class SiteConfig(NamedTuple):
    """The [site] section: where the site is, and where its files and state go."""

    base_url: str
    origin: Origin
    output_dir: Path
    # The public URL of output_dir: where crawlers fetch the sitemaps.
    output_url: str
    state_dir: Path
    robots_txt: Path | None
    # The share of a source's live URLs one scan may remove before the removal is held,
    # and how long a held removal must persist to go ahead unconfirmed (seconds).
    max_removal: float = 0.5
    removal_grace: float = 900.0
    partition: Partition | None = None
    # Replace files in output_dir under sitemapd's names that it did not write (keeping a
    # copy in the state folder) instead of refusing to start.
    take_over: bool = False
    # `Sitemap:` lines of robots.txt for this site that sitemapd did not write: "warn"
    # (status and verify name them) or "remove".
    robots_other_sitemaps: str = "warn"
    # Seconds over which removals add up for the guard (a slow `rsync --delete`); 0: each
    # scan is judged alone.
    removal_window: float = 600.0

    @property
    def not_content(self) -> tuple[str, str]:
        """Return the folders sitemapd writes, which are never pages."""
        return (str(self.output_dir), str(self.state_dir))


class SitemapConfig(NamedTuple):
    """The [sitemap] section: the index, its shards' limits and compression."""

    max_urls: int = MAX_URLS
    max_bytes: int = MAX_BYTES
    gzip: bool = False
    gzip_level: int = 6
    # The index's file name (the `index` key).
    index_name: str = DEFAULT_INDEX
    # hreflang alternates of pages that declare them, as xhtml:link entries.
    alternates: bool = True
    # image:image entries from og:image and a source's content_selector.
    images: bool = False


def read_site(table: Table, base: Path, bucket: bool) -> SiteConfig:
    """Return the [site] table; `output_dir` is optional when the target is a `bucket`."""
    base_url = table.required_text("base_url")
    try:
        origin = Origin.from_base_url(base_url)
    except ConfigError as exc:
        raise table.error("base_url", str(exc)) from exc
    state_dir = table.path("state_dir", base)
    output_dir = table.optional_path("output_dir", base)
    if output_dir is None:
        if not bucket:
            raise table.error("output_dir", "is required (unless [publish] names a bucket)")
        # A bucket target writes nothing locally: the folder is only named, never made.
        output_dir = state_dir / "output"
    output_url = table.text("output_url", origin.root)
    try:
        same_origin = Origin.from_base_url(output_url) == origin
    except ConfigError:
        same_origin = False
    if not same_origin or not output_url.endswith("/"):
        raise table.error(
            "output_url", f"must be a folder URL ending in '/' on {origin.root}, got {output_url!r}"
        )
    if state_dir == output_dir or state_dir.is_relative_to(output_dir):
        raise table.error("state_dir", "must not be inside output_dir: the ledger is not public")
    robots_txt = table.optional_path("robots_txt", base, resolve=False)
    max_removal = table.share("max_removal", 0.5)
    removal_grace = table.duration("removal_grace", 900.0, 0, 30 * 86400)
    removal_window = table.duration("removal_window", 600.0, 0, 30 * 86400)
    partition = read_partition(table)
    take_over = table.flag("take_over", False)
    other_sitemaps = table.choice("robots_other_sitemaps", "warn", ("warn", "remove"))
    table.done()
    return SiteConfig(
        base_url,
        origin,
        output_dir,
        output_url,
        state_dir,
        robots_txt,
        max_removal,
        removal_grace,
        partition,
        take_over,
        other_sitemaps,
        removal_window,
    )


def read_sitemap(table: Table) -> SitemapConfig:
    index = table.file_name("index", DEFAULT_INDEX, ".xml")
    config = SitemapConfig(
        max_urls=table.integer("max_urls", MAX_URLS, 1, MAX_URLS),
        # The floor holds the largest possible entry (2,048 characters of `&`, escaped).
        max_bytes=table.integer("max_bytes", MAX_BYTES, 16384, MAX_BYTES),
        gzip=table.flag("gzip", False),
        gzip_level=table.integer("gzip_level", 6, 1, 9),
        index_name=index,
        alternates=table.flag("alternates", True),
        images=table.flag("images", False),
    )
    table.done()
    return config
