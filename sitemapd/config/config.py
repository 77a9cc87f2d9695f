"""The whole configuration: `load` reads a TOML file, each section is read by its own
module, and the checks that span sections (file names, folders) run here.

Every error is a ConfigError whose message names the file and the key, for example
`sitemapd.toml: sitemap.max_urls: must be at most 50000, got 60000`.
"""

# Annotations evaluated, not text: see core/observation.py.
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from sitemapd.config.daemon import (
    CRAWLER_PATTERNS,
    DaemonConfig,
    HttpConfig,
    read_crawlers,
    read_daemon,
    read_http,
)
from sitemapd.config.fleet import Partition, PublishConfig, partition_name, read_publish
from sitemapd.config.notify import IndexNowConfig, WebSubConfig, read_indexnow, read_websub
from sitemapd.config.site import SiteConfig, SitemapConfig, read_site, read_sitemap
from sitemapd.config.sources import (
    AccessLogSource,
    ContentSource,
    DirectorySource,
    SourceConfig,
    read_source,
)
from sitemapd.config.table import Table
from sitemapd.errors import ConfigError
from sitemapd.render.parts import part_name

if TYPE_CHECKING:
    from sitemapd.config.feeds import FeedConfig, NewsConfig


class Config(NamedTuple):
    """A validated configuration file."""

    path: Path
    site: SiteConfig
    sitemap: SitemapConfig
    sources: tuple[SourceConfig, ...]
    daemon: DaemonConfig = DaemonConfig()
    http: HttpConfig = HttpConfig()
    feed: "FeedConfig | None" = None
    news: "NewsConfig | None" = None
    websub: WebSubConfig = WebSubConfig()
    indexnow: IndexNowConfig | None = None
    # (name, User-Agent pattern) of the crawlers whose fetches are recorded, in order.
    crawlers: tuple[tuple[str, re.Pattern[str]], ...] = ()
    publish: PublishConfig = PublishConfig()

    @property
    def content_sources(self) -> tuple[ContentSource, ...]:
        """Return the sources that give URLs (every one but access logs)."""
        return tuple(s for s in self.sources if not isinstance(s, AccessLogSource))

    @property
    def ledger_path(self) -> Path:
        """Return the path of the SQLite ledger inside the state directory."""
        return self.site.state_dir / "ledger.sqlite3"


def load(path: str | Path) -> Config:
    """Return the validated configuration in `path`; raises ConfigError naming the key."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except FileNotFoundError as exc:
        raise ConfigError(f"{file}: no such file") from exc
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read ({exc.strerror})") from exc
    try:
        # A UTF-8 byte order mark (Notepad writes one) is no TOML, but says nothing either.
        raw = tomllib.loads(data.removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{file}: not UTF-8, as TOML must be (line {line}: byte {data[exc.start]:#04x})"
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML ({exc})") from exc
    return parse(raw, file)


# The top level's tables, every one that `parse` reads.
_TABLES = (
    "publish",
    "site",
    "sitemap",
    "daemon",
    "http",
    "source",
    "feed",
    "news",
    "websub",
    "indexnow",
    "crawlers",
)


def parse(raw: dict[str, Any], file: Path) -> Config:
    """Return the configuration in the TOML document `raw` read from `file`."""
    base = file.resolve().parent
    top = Table(file, "", raw)
    # A misspelled table is named before the keys it holds are missed: "sitee: unknown
    # key (did you mean site?)", not "site.base_url: is required".
    top.done(_TABLES)
    publish = read_publish(top.table("publish"))
    site = read_site(top.table("site"), base, bucket=publish.s3 is not None)
    sitemap = read_sitemap(top.table("sitemap"))
    daemon = read_daemon(top.table("daemon"))
    http = read_http(top.table("http"))
    sources_raw = top.get("source", list, [], "an array of tables ([[source]])")
    sources = tuple(
        read_source(Table(file, f"source[{n}]", item), base) for n, item in enumerate(sources_raw)
    )
    if not any(not isinstance(source, AccessLogSource) for source in sources):
        raise top.error("source", "at least one [[source]] table giving URLs is required")
    feed = news = None
    if "feed" in raw or "news" in raw:
        # Loaded for sites with feeds only.
        from sitemapd.config.feeds import read_feed, read_news

        feed = read_feed(top.table("feed"), site) if "feed" in raw else None
        news = read_news(top.table("news")) if "news" in raw else None
    websub = read_websub(top.table("websub"))
    indexnow = read_indexnow(top.table("indexnow"), site) if "indexnow" in raw else None
    crawlers = read_crawlers(top.table("crawlers")) if "crawlers" in raw else CRAWLER_PATTERNS
    top.done()
    if site.partition is not None:
        sitemap, feed, news = partitioned(site.partition, sitemap, feed, news)
    names = [source.name for source in sources]
    for n, name in enumerate(names):
        if name in names[:n]:
            raise top.error(
                f"source[{n}].name",
                f"duplicate source name {name!r}, source[{names.index(name)}]'s too (a source "
                "not named is named after what it reads: give each a `name`)",
            )
    _check_file_names(top, sitemap, feed, news, indexnow)
    _check_folders(top, site, sources, _own_files(sitemap, feed, news, indexnow))
    if publish.s3 is not None and http.serve_files:
        raise top.error("http.serve_files", "the files are in the bucket: serve them from there")
    if websub.hubs and feed is None:
        raise top.error("websub.hubs", "needs a [feed] section: hubs are told about feeds")
    return Config(
        file.resolve(),
        site,
        sitemap,
        sources,
        daemon,
        http,
        feed=feed,
        news=news,
        websub=websub,
        indexnow=indexnow,
        crawlers=crawlers,
        publish=publish,
    )


def _check_file_names(
    top: Table,
    sitemap: SitemapConfig,
    feed: "FeedConfig | None",
    news: "NewsConfig | None",
    indexnow: IndexNowConfig | None,
) -> None:
    """Raise ConfigError when two outputs would be written to the same file."""
    stem = sitemap.index_name.removesuffix(".xml")
    shard = re.compile(rf"{re.escape(stem)}-\d+\.xml(\.gz)?\Z")
    taken = {sitemap.index_name: "sitemap.index"}
    named = []
    if feed is not None:
        named += [("feed.atom", feed.atom), ("feed.rss", feed.rss)]
    if news is not None:
        named.append(("news.file", news.file))
    if indexnow is not None and indexnow.key_file:
        named.append(("indexnow.key", indexnow.key + ".txt"))
    for key, name in named:
        if name in taken or shard.match(name):
            other = taken.get(name, "the sitemap shards")
            raise top.error(key, f"file name {name!r} is already used by {other}")
        taken[name] = key


def _own_files(
    sitemap: SitemapConfig,
    feed: "FeedConfig | None",
    news: "NewsConfig | None",
    indexnow: IndexNowConfig | None,
) -> list[str]:
    """Return names of the files sitemapd writes into output_dir, one of each kind."""
    stem = sitemap.index_name.removesuffix(".xml")
    names = [sitemap.index_name, f"{stem}-1.xml", f"{stem}-1.xml.gz"]
    paged = [feed.atom, feed.rss] if feed is not None else []
    paged += [news.file] if news is not None else []
    names += [name for first in paged for name in (first, part_name(first, 2))]
    if indexnow is not None and indexnow.key_file:
        names.append(indexnow.key + ".txt")
    return names


def _check_folders(
    top: Table, site: SiteConfig, sources: tuple[SourceConfig, ...], own_files: list[str]
) -> None:
    """Raise ConfigError when a content root would publish sitemapd's own files as pages,
    or serve its ledger."""
    # Imported here: the sources package imports this module.
    from sitemapd.core.globs import Selection

    for n, source in enumerate(sources):
        if not isinstance(source, DirectorySource):
            continue
        root = source.root
        if site.state_dir == root or site.state_dir.is_relative_to(root):
            raise top.error(
                "site.state_dir",
                f"must not be inside source[{n}].root ({root}): the ledger would be on the web",
            )
        if site.output_dir == root or site.output_dir.is_relative_to(root):
            folder = site.output_dir.relative_to(root).as_posix()
            pages = Selection(source.include, source.exclude)
            for name in own_files:
                relpath = name if folder == "." else f"{folder}/{name}"
                if relpath in pages:
                    raise top.error(
                        "site.output_dir",
                        f"is inside source[{n}].root ({root}) and its include patterns match "
                        f"sitemapd's own {relpath!r}: it would be listed as a page; write "
                        "the sitemaps elsewhere or exclude them in source "
                        f"{source.name!r}",
                    )


def partitioned(
    partition: Partition,
    sitemap: SitemapConfig,
    feed: "FeedConfig | None",
    news: "NewsConfig | None",
) -> tuple[SitemapConfig, "FeedConfig | None", "NewsConfig | None"]:
    """Return the sitemap, feed and news settings with the partition in every file name."""
    tag = partition.label
    sitemap = sitemap._replace(index_name=partition_name(sitemap.index_name, tag))
    if feed is not None:
        feed = feed._replace(
            atom=partition_name(feed.atom, tag),
            rss=partition_name(feed.rss, tag),
            atom_url=partition_name(feed.atom_url, tag),
            rss_url=partition_name(feed.rss_url, tag),
        )
    if news is not None:
        news = news._replace(file=partition_name(news.file, tag))
    return sitemap, feed, news
