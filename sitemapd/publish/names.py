"""The names of published files: shards, the index, news files and feed pages, and
which names in the output folder are sitemapd's."""

from __future__ import annotations

import re

from sitemapd.config import Config
from sitemapd.config.fleet import Partition, partition_name
from sitemapd.render.parts import part_number


class OutputNames:
    """The file names and public URLs of a site's sitemaps, news sitemaps and feeds."""

    def __init__(self, config: Config) -> None:
        self.index = config.sitemap.index_name
        self.output_url = config.site.output_url
        self._gzip = config.sitemap.gzip
        self._stem = config.sitemap.index_name.removesuffix(".xml")
        self._shard_file = re.compile(rf"{re.escape(self._stem)}-(\d+)\.xml(\.gz)?\Z")
        # Files whose later pages or parts are numbered from 2: news files, feeds, each
        # with the setting that names it.
        settings = ("news.file", "feed.atom", "feed.rss")
        named = zip(_paged_names(config), settings, strict=True)
        self._paged = {name: key for name, key in named if name}
        feed = config.feed
        self._feeds = [(feed.atom, "atom"), (feed.rss, "rss")] if feed is not None else []
        self._news = config.news is not None
        self.key_file = (
            config.indexnow.key + ".txt"
            if config.indexnow is not None and config.indexnow.key_file
            else None
        )

    def claimed(self) -> dict[str, str]:
        """Return the names no other site may publish into the same folder, each with
        the setting that names it: the index (its shards are named after it), the first
        news file and feed pages (the later ones are named after them)."""
        return {self.index: "sitemap.index", **self._paged}

    def shard(self, shard_id: int) -> str:
        """Return the file name of shard `shard_id`."""
        return f"{self._stem}-{shard_id}.xml" + (".gz" if self._gzip else "")

    def is_output(self, name: str) -> bool:
        """True when `name` is a file sitemapd writes into the output directory."""
        return (
            name == self.index
            or name == self.key_file
            or self.is_shard(name)
            or any(part_number(first, name) is not None for first in self._paged)
        )

    def is_news(self, name: str) -> bool:
        """True when `name` is one of the site's news sitemaps."""
        first = next(iter(self._paged)) if self._news else None
        return first is not None and part_number(first, name) is not None

    def is_later_part(self, name: str) -> bool:
        """True when `name` is a news file or feed page after the first (`-N.xml`)."""
        return any((part_number(first, name) or 1) > 1 for first in self._paged)

    def content_type(self, name: str) -> str:
        """Return the Content-Type `name` is served with (a .gz file is gzip itself, with
        no Content-Encoding: crawlers fetch the compressed sitemap as it is)."""
        if name.endswith(".gz"):
            return "application/gzip"
        if name == self.key_file:
            return "text/plain; charset=utf-8"
        for first, kind in self._feeds:
            if part_number(first, name) is not None:
                return f"application/{kind}+xml; charset=utf-8"
        return "application/xml; charset=utf-8"

    def is_shard(self, name: str) -> bool:
        """True when `name` is a shard file of this site, compressed or not."""
        return self._shard_file.match(name) is not None

    @property
    def index_url(self) -> str:
        """Return the public URL of the sitemap index."""
        return self.output_url + self.index


def partition_index_urls(config: Config) -> list[str]:
    """Return the public URLs of the site's sitemap indexes: one per partition."""
    names = OutputNames(config)
    partition = config.site.partition
    if partition is None:
        return [names.index_url]
    mine = partition_name("", partition.label)
    stem = names.index.removesuffix(mine)
    return [
        names.output_url + stem + partition_name("", Partition(n, partition.total).label)
        for n in range(1, partition.total + 1)
    ]


def _paged_names(config: Config) -> list[str]:
    feed = config.feed
    return [
        config.news.file if config.news else "",
        feed.atom if feed else "",
        feed.rss if feed else "",
    ]
