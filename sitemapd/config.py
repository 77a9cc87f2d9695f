"""Configuration: TOML read with tomllib into frozen dataclasses, validated in one place.

Every error is a ConfigError whose message names the file and the key, for example
`sitemapd.toml: sitemap.max_urls: must be at most 50000, got 60000`.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import re
import socket
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from .changelog.spec import SERVER_ID, ChangelogSpec
from .errors import ConfigError
from .listen import parse_listen
from .parts import part_name
from .urls import Origin

MAX_URLS = 50_000
MAX_BYTES = 52_428_800
DEFAULT_INDEX = "sitemap.xml"
HOUR = 3600.0
# Google News takes articles from the last two days only.
MAX_NEWS_AGE = 48 * HOUR
# Pages generators write at the root for the web server's errors, mostly without noindex
# (not deeper: /news/404.html may well be the 404th article).
ERROR_PAGES = ("404.html", "50x.html")
DEFAULT_CRAWLERS = (("googlebot", "Googlebot"), ("bingbot", "bingbot"))

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Partition:
    """This daemon's share of a partitioned site: partition `number` (from 1) of `count`."""

    number: int
    count: int

    @property
    def label(self) -> str:
        """Return the tag partitioned file names carry, like `p2of4`."""
        return f"p{self.number}of{self.count}"


@dataclass(frozen=True, slots=True)
class S3Target:
    """An S3-compatible bucket (and key prefix) the sitemaps are published to."""

    bucket: str
    # "" or a key prefix ending in "/".
    prefix: str
    endpoint_url: str | None = None
    region: str | None = None
    cache_control: str | None = None
    # Seconds a publisher's lease lasts unrenewed.
    lease_ttl: float = 30.0
    # Key of robots.txt in the bucket (at its root: where a CDN serving the bucket as the
    # site finds it); None leaves robots.txt alone.
    robots_key: str | None = "robots.txt"

    @property
    def url(self) -> str:
        """Return the target as written in the configuration: `s3://bucket/prefix/`."""
        return f"s3://{self.bucket}/{self.prefix}"


@dataclass(frozen=True, slots=True)
class PublishConfig:
    """Where output goes: the local output_dir (s3 None) or an S3-compatible bucket."""

    s3: S3Target | None = None


@dataclass(frozen=True, slots=True)
class SiteConfig:
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


@dataclass(frozen=True, slots=True)
class SitemapConfig:
    max_urls: int = MAX_URLS
    max_bytes: int = MAX_BYTES
    gzip: bool = False
    gzip_level: int = 6
    index: str = DEFAULT_INDEX
    # hreflang alternates of pages that declare them, as xhtml:link entries.
    alternates: bool = True
    # image:image entries from og:image and a source's content_selector.
    images: bool = False


@dataclass(frozen=True, slots=True)
class FeedConfig:
    """RSS 2.0 and Atom 1.0 feeds of recent updates, on when `[feed]` exists."""

    title: str
    atom: str
    rss: str
    # Public URLs of the two feeds (rel="self", WebSub topics).
    atom_url: str
    rss_url: str
    subtitle: str | None = None
    # Updates since the oldest crawler fetch of a feed are kept, but never fewer than
    # those of the last `min_window` seconds.
    min_window: float = 48 * HOUR
    max_entries: int = 1000
    # Ceiling on RFC 5005 pages of updates some crawler has not fetched yet.
    max_pages: int = 50


@dataclass(frozen=True, slots=True)
class NewsConfig:
    """The Google News sitemap, on when `[news]` exists."""

    publication_name: str
    language: str
    file: str = "news-sitemap.xml"
    max_age: float = MAX_NEWS_AGE


@dataclass(frozen=True, slots=True)
class WebSubConfig:
    hubs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class IndexNowConfig:
    key: str
    endpoint: str
    key_location: str
    # Write `<key>.txt` into output_dir (the default key_location points there).
    key_file: bool = True


BACKENDS = ("auto", "inotify", "polling")


@dataclass(frozen=True, slots=True)
class DaemonConfig:
    """How `sitemapd run` batches events and how often it reconciles with the disk."""

    debounce: float = 0.5
    max_delay: float = 5.0
    reconcile_interval: float = 900.0
    # A batch running longer than this makes the daemon unhealthy.
    stuck_after: float = 600.0
    # Change-log rows waiting longer than this make the daemon unhealthy: a drain of a
    # large backlog takes seconds, a transaction left open holds every later row back.
    max_lag: float = 60.0


@dataclass(frozen=True, slots=True)
class HttpConfig:
    """The sidecar endpoint; off while `listen` is empty."""

    listen: str = ""
    serve_files: bool = False
    # `/status` and `/status.json`: on by default only where the listener is loopback.
    status_page: bool = False


@dataclass(frozen=True, slots=True)
class DirectorySource:
    """Rendered pages under `root` become URLs under `url_prefix`."""

    name: str
    root: Path
    url_prefix: str = "/"
    include: tuple[str, ...] = ("**/*.html", "**/*.htm")
    exclude: tuple[str, ...] = ()
    strip_html: bool = False
    index_files: tuple[str, ...] = ("index.html", "index.htm")
    ignore: tuple[re.Pattern[bytes], ...] = ()
    # How `run` watches the root: inotify, or polling for NFS and other remote mounts.
    backend: str = "auto"
    poll_interval: float = 2.0
    # Language of pages that do not say (<html lang>), for the news sitemap and hreflang.
    language: str | None = None
    # Which pages are news articles: "auto" (those that say so: JSON-LD *Article or
    # og:type article; article:published_time only dates them), "all", or "none".
    articles: str = "auto"
    # The article container (a CSS selector): what the fingerprint reads, and where the
    # images of image:image entries are. None: found on each page.
    content_selector: str | None = None
    # "content": lastmod follows the page's significant content; "page": its bytes.
    fingerprint: str = "content"
    # Whether a symlinked file whose target lies outside the root is a page (links
    # within the root always are; symlinked folders never are followed).
    follow_symlinks: bool = False


@dataclass(frozen=True, slots=True)
class UrlListSource:
    """A sitemaps.org text file: one URL a line, optionally a tab and a W3C datetime."""

    name: str
    path: Path


@dataclass(frozen=True, slots=True)
class ChangelogSource:
    """A database change table (or query) read after a cursor kept in the ledger."""

    name: str
    spec: ChangelogSpec
    # Seconds between polls; with PostgreSQL LISTEN/NOTIFY wakes it at once.
    poll_interval: float = 2.0
    # Rows per read; one read is one ledger transaction with its cursor.
    batch_size: int = 10_000
    # Optional SELECT of every live URL (first column), run every reconcile to catch
    # deletions the change log missed.
    reconcile_query: str | None = None
    language: str | None = None
    articles: str = "auto"


@dataclass(frozen=True, slots=True)
class AccessLogSource:
    """A web server access log: when crawlers fetched the feeds, what they got for URLs."""

    name: str
    path: Path
    poll_interval: float = 5.0


SourceConfig = DirectorySource | UrlListSource | ChangelogSource | AccessLogSource
ContentSource = DirectorySource | UrlListSource | ChangelogSource


@dataclass(frozen=True, slots=True)
class Config:
    path: Path
    site: SiteConfig
    sitemap: SitemapConfig
    sources: tuple[SourceConfig, ...]
    daemon: DaemonConfig = DaemonConfig()
    http: HttpConfig = HttpConfig()
    feed: FeedConfig | None = None
    news: NewsConfig | None = None
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


class _Table:
    """One TOML table being read: typed getters that name `file: key` in every error."""

    def __init__(self, file: Path, where: str, data: Any) -> None:
        self.file = file
        self.where = where
        if not isinstance(data, dict):
            raise self.error("", f"must be a table, got {_kind(data)}")
        self.data: dict[str, Any] = data
        self.used: set[str] = set()

    def error(self, key: str, message: str) -> ConfigError:
        dotted = f"{self.where}.{key}" if self.where and key else self.where or key
        return ConfigError(f"{self.file}: {dotted}: {message}")

    def get(self, key: str, kind: type[T], default: T, kind_name: str) -> T:
        """Return the value of `key` (or `default`); raises ConfigError on a wrong type."""
        self.used.add(key)
        if key not in self.data:
            return default
        value = self.data[key]
        # bool is an int subclass; TOML keeps them apart, so must we.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(key, f"must be {kind_name}, got {_kind(value)}")
        return value

    def required_text(self, key: str) -> str:
        value = self.get(key, str, "", "a string")
        if not value:
            raise self.error(key, "is required")
        return value

    def text(self, key: str, default: str) -> str:
        return self.get(key, str, default, "a string")

    def flag(self, key: str, default: bool) -> bool:
        return self.get(key, bool, default, "true or false")

    def integer(self, key: str, default: int, low: int, high: int) -> int:
        value = self.get(key, int, default, "an integer")
        if value < low:
            raise self.error(key, f"must be at least {low}, got {value}")
        if value > high:
            raise self.error(key, f"must be at most {high}, got {value}")
        return value

    def number(self, key: str, default: float, low: float, high: float) -> float:
        value = self.get(key, (int, float), default, "a number")  # type: ignore[arg-type]
        if isinstance(value, bool) or not low <= value <= high:
            raise self.error(key, f"must be a number from {low:g} to {high:g}, got {value!r}")
        return float(value)

    def duration(self, key: str, default: float, low: float, high: float) -> float:
        """Return seconds from a number or a string like "90s", "30m", "48h", "2d"."""
        self.used.add(key)
        value = self.data.get(key, default)
        if isinstance(value, str):
            match = _DURATION.fullmatch(value.strip())
            if match is None:
                raise self.error(key, f"must be seconds or a duration like '48h', got {value!r}")
            value = float(match[1]) * _UNITS[match[2] or "s"]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(key, f"must be seconds or a duration like '48h', got {_kind(value)}")
        if not low <= value <= high:
            raise self.error(key, f"must be from {_span(low)} to {_span(high)}, got {_span(value)}")
        return float(value)

    def share(self, key: str, default: float) -> float:
        """Return a fraction from 0 to 1, given as a number or a percentage like "50%"."""
        self.used.add(key)
        value = self.data.get(key, default)
        if isinstance(value, str) and _PERCENT.fullmatch(value.strip()):
            value = float(value.strip()[:-1]) / 100
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise self.error(key, f"must be a fraction from 0 to 1 or a percentage, got {value!r}")
        return float(value)

    def web_url(self, key: str, default: str) -> str:
        """Return an absolute http(s) URL."""
        value = self.text(key, default)
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise self.error(key, f"must be an absolute http(s) URL, got {value!r}")
        return value

    def file_name(self, key: str, default: str, suffix: str = "") -> str:
        """Return a plain file name (no folder, space or control character) ending in
        `suffix`: it is spelled into URLs and served by name."""
        value = self.text(key, default)
        if not _FILE_NAME.fullmatch(value) or not value.endswith(suffix):
            raise self.error(
                key,
                f"must be a file name of letters, digits, '.', '_' and '-' ending in "
                f"{suffix or 'anything'}, got {value!r}",
            )
        return value

    def choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.text(key, default)
        if value not in choices:
            raise self.error(key, f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def texts(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        value = self.get(key, list, list(default), "a list of strings")
        if not all(isinstance(item, str) for item in value):
            raise self.error(key, "must be a list of strings")
        return tuple(value)

    def table(self, key: str) -> _Table:
        """Return the sub-table `key`, empty when absent."""
        where = f"{self.where}.{key}" if self.where else key
        return _Table(self.file, where, self.get(key, dict, {}, "a table"))

    def optional_path(self, key: str, base: Path) -> Path | None:
        value = self.get(key, str, "", "a path string")
        if not value:
            return None
        return (base / Path(value).expanduser()).resolve()

    def path(self, key: str, base: Path) -> Path:
        value = self.optional_path(key, base)
        if value is None:
            raise self.error(key, "is required")
        return value

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            raise self.error(unknown[0], "unknown key")


_PERCENT = re.compile(r"\d+(\.\d+)?%")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)")
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_UNITS = {"s": 1.0, "m": 60.0, "h": HOUR, "d": 24 * HOUR}


def _span(seconds: float) -> str:
    if seconds >= HOUR and seconds % HOUR == 0:
        return f"{seconds / HOUR:g}h"
    return f"{seconds:g}s"


def _kind(value: object) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names.update({list: "an array", dict: "a table"})
    return names.get(type(value), type(value).__name__)


def load(path: str | Path) -> Config:
    """Return the validated configuration in `path`; raises ConfigError naming the key."""
    file = Path(path)
    try:
        with file.open("rb") as handle:
            raw = tomllib.load(handle)
    except FileNotFoundError as exc:
        raise ConfigError(f"{file}: no such file") from exc
    except OSError as exc:
        raise ConfigError(f"{file}: cannot read ({exc.strerror})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file}: not valid TOML ({exc})") from exc
    return parse(raw, file)


def parse(raw: dict[str, Any], file: Path) -> Config:
    """Return the configuration in the TOML document `raw` read from `file`."""
    base = file.resolve().parent
    top = _Table(file, "", raw)
    publish = _publish(top.table("publish"))
    site = _site(top.table("site"), base, bucket=publish.s3 is not None)
    sitemap = _sitemap(top.table("sitemap"))
    daemon = _daemon(top.table("daemon"))
    http = _http(top.table("http"))
    sources_raw = top.get("source", list, [], "an array of tables ([[source]])")
    sources = tuple(
        _source(_Table(file, f"source[{n}]", item), base) for n, item in enumerate(sources_raw)
    )
    if not any(not isinstance(source, AccessLogSource) for source in sources):
        raise top.error("source", "at least one [[source]] table giving URLs is required")
    feed = _feed(top.table("feed"), site) if "feed" in raw else None
    news = _news(top.table("news")) if "news" in raw else None
    websub = _websub(top.table("websub"))
    indexnow = _indexnow(top.table("indexnow"), site) if "indexnow" in raw else None
    crawlers = _crawlers(top.table("crawlers")) if "crawlers" in raw else _DEFAULT_CRAWLERS
    top.done()
    if site.partition is not None:
        sitemap, feed, news = _partitioned(site.partition, sitemap, feed, news)
    names = [source.name for source in sources]
    for n, name in enumerate(names):
        if name in names[:n]:
            raise top.error(f"source[{n}].name", f"duplicate source name {name!r}")
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
    top: _Table,
    sitemap: SitemapConfig,
    feed: FeedConfig | None,
    news: NewsConfig | None,
    indexnow: IndexNowConfig | None,
) -> None:
    """Raise ConfigError when two outputs would be written to the same file."""
    stem = sitemap.index.removesuffix(".xml")
    shard = re.compile(rf"{re.escape(stem)}-\d+\.xml(\.gz)?\Z")
    taken = {sitemap.index: "sitemap.index"}
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
    feed: FeedConfig | None,
    news: NewsConfig | None,
    indexnow: IndexNowConfig | None,
) -> list[str]:
    """Return names of the files sitemapd writes into output_dir, one of each kind."""
    stem = sitemap.index.removesuffix(".xml")
    names = [sitemap.index, f"{stem}-1.xml", f"{stem}-1.xml.gz"]
    paged = [feed.atom, feed.rss] if feed is not None else []
    paged += [news.file] if news is not None else []
    names += [name for first in paged for name in (first, part_name(first, 2))]
    if indexnow is not None and indexnow.key_file:
        names.append(indexnow.key + ".txt")
    return names


def _check_folders(
    top: _Table, site: SiteConfig, sources: tuple[SourceConfig, ...], own_files: list[str]
) -> None:
    """Raise ConfigError when a content root would publish sitemapd's own files as pages,
    or serve its ledger."""
    # Imported here: the sources package imports this module.
    from .sources.globs import compile_globs

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
            include, exclude = compile_globs(source.include), compile_globs(source.exclude)
            for name in own_files:
                relpath = name if folder == "." else f"{folder}/{name}"
                if include.match(relpath) and not exclude.match(relpath):
                    raise top.error(
                        "site.output_dir",
                        f"is inside source[{n}].root ({root}) and its include patterns match "
                        f"sitemapd's own {relpath!r}: it would be listed as a page; write "
                        "the sitemaps elsewhere or exclude them in source "
                        f"{source.name!r}",
                    )


def _feed(table: _Table, site: SiteConfig) -> FeedConfig:
    title = table.required_text("title")
    atom = table.file_name("atom", "atom.xml", ".xml")
    rss = table.file_name("rss", "rss.xml", ".xml")
    if atom == rss:
        raise table.error("rss", f"must differ from feed.atom ({atom!r})")
    subtitle = table.text("subtitle", "") or None
    config = FeedConfig(
        title=title,
        atom=atom,
        rss=rss,
        atom_url=table.web_url("atom_url", site.output_url + atom),
        rss_url=table.web_url("rss_url", site.output_url + rss),
        subtitle=subtitle,
        min_window=table.duration("min_window", 48 * HOUR, 60, 365 * 24 * HOUR),
        max_entries=table.integer("max_entries", 1000, 1, 50_000),
        max_pages=table.integer("max_pages", 50, 1, 10_000),
    )
    table.done()
    return config


def _news(table: _Table) -> NewsConfig:
    language = table.required_text("language")
    if not _LANGUAGE.fullmatch(language.lower()):
        raise table.error(
            "language", f"must be an ISO 639 code like 'en' or 'zh-cn', got {language!r}"
        )
    config = NewsConfig(
        publication_name=table.required_text("publication_name"),
        language=language,
        file=table.file_name("file", "news-sitemap.xml", ".xml"),
        max_age=table.duration("max_age", MAX_NEWS_AGE, 60, MAX_NEWS_AGE),
    )
    table.done()
    return config


def _websub(table: _Table) -> WebSubConfig:
    hubs = table.texts("hubs", ())
    for n, hub in enumerate(hubs):
        parts = urlsplit(hub)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise table.error(f"hubs[{n}]", f"must be an absolute http(s) URL, got {hub!r}")
    table.done()
    return WebSubConfig(hubs=hubs)


def _indexnow(table: _Table, site: SiteConfig) -> IndexNowConfig:
    key = table.required_text("key")
    if not _INDEXNOW_KEY.fullmatch(key):
        raise table.error("key", "must be 8 to 128 characters of a-z, A-Z, 0-9 and '-'")
    # Engines accept only URLs under the key file's folder: a key among the sitemaps in
    # a sub-folder would cover none of the pages.
    if "key_location" not in table.data and site.output_url != site.origin.root:
        raise table.error(
            "key_location",
            f"is required when output_url is not the site root: IndexNow accepts only URLs "
            f"under the key file's folder, so serve {key}.txt at {site.origin.root} "
            "(and set key_file = false unless output_dir is served there)",
        )
    config = IndexNowConfig(
        key=key,
        endpoint=table.web_url("endpoint", "https://api.indexnow.org/indexnow"),
        key_location=table.web_url("key_location", f"{site.output_url}{key}.txt"),
        key_file=table.flag("key_file", True),
    )
    table.done()
    return config


def _crawlers(table: _Table) -> tuple[tuple[str, re.Pattern[str]], ...]:
    crawlers = []
    for name in table.data:
        pattern = table.text(name, "")
        try:
            crawlers.append((name, re.compile(pattern)))
        except re.error as exc:
            raise table.error(name, f"not a valid regular expression ({exc})") from exc
        if not pattern:
            raise table.error(name, "must be a non-empty User-Agent pattern")
    table.done()
    return tuple(crawlers)


_DEFAULT_CRAWLERS = tuple((name, re.compile(pattern)) for name, pattern in DEFAULT_CRAWLERS)
_INDEXNOW_KEY = re.compile(r"[A-Za-z0-9-]{8,128}")
_LANGUAGE = re.compile(r"[a-z]{2,3}|zh-cn|zh-tw")


def _http(table: _Table) -> HttpConfig:
    listen = table.text("listen", "")
    if listen:
        try:
            parse_listen(listen)
        except ValueError as exc:
            raise table.error("listen", str(exc)) from exc
    config = HttpConfig(
        listen=listen,
        serve_files=table.flag("serve_files", False),
        status_page=table.flag("status_page", bool(listen) and _loopback(listen)),
    )
    if config.serve_files and not listen:
        raise table.error("serve_files", "needs http.listen")
    if config.status_page and not listen:
        raise table.error("status_page", "needs http.listen")
    table.done()
    return config


def _loopback(listen: str) -> bool:
    """True when the listen address `listen` (already valid) only takes local clients."""
    host = parse_listen(listen)[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def _daemon(table: _Table) -> DaemonConfig:
    defaults = DaemonConfig()
    debounce = table.number("debounce", defaults.debounce, 0.01, 60)
    config = DaemonConfig(
        debounce=debounce,
        max_delay=table.number("max_delay", max(defaults.max_delay, debounce), debounce, 3600),
        reconcile_interval=table.number(
            "reconcile_interval", defaults.reconcile_interval, 1, 7 * 86400
        ),
        stuck_after=table.number("stuck_after", defaults.stuck_after, 1, 86400),
        max_lag=table.number("max_lag", defaults.max_lag, 1, 86400),
    )
    table.done()
    return config


def _site(table: _Table, base: Path, bucket: bool) -> SiteConfig:
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
    robots_txt = table.optional_path("robots_txt", base)
    max_removal = table.share("max_removal", 0.5)
    removal_grace = table.duration("removal_grace", 900.0, 0, 30 * 86400)
    removal_window = table.duration("removal_window", 600.0, 0, 30 * 86400)
    partition = _partition(table)
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


_PARTITION = re.compile(r"([1-9]\d*|auto)/([1-9]\d*)")
# A StatefulSet's pods are named <set>-<ordinal>, from 0.
_ORDINAL = re.compile(r"-(\d+)\Z")
# Search Console takes up to 500 sitemap indexes per site.
MAX_PARTITIONS = 500


def _ordinal(table: _Table) -> int:
    """Return the ordinal that ends this host's name (`sitemaps-2`: 2), as a StatefulSet
    names its pods; raises ConfigError naming `site.partition` when there is none."""
    host = socket.gethostname()
    match = _ORDINAL.search(host)
    if match is None:
        raise table.error(
            "partition",
            f"'auto/K' takes the partition from a host name ending in -<ordinal> "
            f"(a StatefulSet pod's, like 'sitemaps-2'); this host is {host!r}",
        )
    return int(match[1])


def _partition(table: _Table) -> Partition | None:
    value = table.text("partition", "")
    if not value:
        return None
    match = _PARTITION.fullmatch(value.strip())
    if match is None:
        raise table.error("partition", f"must be 'i/K' like '2/4', or 'auto/K', got {value!r}")
    count = int(match[2])
    number = _ordinal(table) + 1 if match[1] == "auto" else int(match[1])
    if number > count or count > MAX_PARTITIONS:
        raise table.error(
            "partition",
            f"must name partition i of K with 1 <= i <= K <= {MAX_PARTITIONS}, got {value!r}",
        )
    return Partition(number, count)


def _partitioned(
    partition: Partition,
    sitemap: SitemapConfig,
    feed: FeedConfig | None,
    news: NewsConfig | None,
) -> tuple[SitemapConfig, FeedConfig | None, NewsConfig | None]:
    """Return the sitemap, feed and news settings with the partition in every file name."""
    tag = partition.label
    sitemap = replace(sitemap, index=partition_name(sitemap.index, tag))
    if feed is not None:
        feed = replace(
            feed,
            atom=partition_name(feed.atom, tag),
            rss=partition_name(feed.rss, tag),
            atom_url=partition_name(feed.atom_url, tag),
            rss_url=partition_name(feed.rss_url, tag),
        )
    if news is not None:
        news = replace(news, file=partition_name(news.file, tag))
    return sitemap, feed, news


def partition_name(name: str, tag: str) -> str:
    """Return `name` (a file name or URL ending in .xml) with `-<tag>` before `.xml`."""
    return f"{name.removesuffix('.xml')}-{tag}.xml"


def _publish(table: _Table) -> PublishConfig:
    target = table.text("target", "")
    s3 = _s3_target(table, target) if target else None
    table.done()
    return PublishConfig(s3)


# Bucket names: 3 to 63 lower-case letters, digits, dots and hyphens.
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")


def _installed(module: str) -> bool:
    """True when `module` can be imported (found, and not blocked in sys.modules)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:
        return False


def _s3_target(table: _Table, target: str) -> S3Target:
    parts = urlsplit(target)
    if parts.scheme != "s3" or parts.query or parts.fragment:
        raise table.error("target", f"must be an s3://bucket/prefix/ URL, got {target!r}")
    if not _BUCKET.fullmatch(parts.netloc):
        raise table.error("target", f"bucket name {parts.netloc!r} is not a valid S3 bucket name")
    prefix = parts.path.lstrip("/")
    if prefix and not prefix.endswith("/"):
        raise table.error("target", f"the key prefix must end in '/', got {target!r}")
    if {".", ".."} & set(prefix.split("/")[:-1]) or "//" in prefix:
        raise table.error("target", f"the key prefix has an empty, '.' or '..' part: {target!r}")
    if not _installed("boto3"):
        raise table.error("target", "publishing to S3 needs boto3: pip install 'sitemapd[s3]'")
    endpoint = table.text("endpoint_url", "")
    if endpoint:
        endpoint = table.web_url("endpoint_url", endpoint)
    robots_key = table.text("robots_key", "robots.txt")
    return S3Target(
        bucket=parts.netloc,
        prefix=prefix,
        endpoint_url=endpoint or None,
        region=table.text("region", "") or None,
        cache_control=table.text("cache_control", "") or None,
        lease_ttl=table.duration("lease_ttl", 30.0, 1.0, 3600.0),
        robots_key=robots_key or None,
    )


def _sitemap(table: _Table) -> SitemapConfig:
    index = table.file_name("index", DEFAULT_INDEX, ".xml")
    config = SitemapConfig(
        max_urls=table.integer("max_urls", MAX_URLS, 1, MAX_URLS),
        # The floor holds the largest possible entry (2,048 characters of `&`, escaped).
        max_bytes=table.integer("max_bytes", MAX_BYTES, 16384, MAX_BYTES),
        gzip=table.flag("gzip", False),
        gzip_level=table.integer("gzip_level", 6, 1, 9),
        index=index,
        alternates=table.flag("alternates", True),
        images=table.flag("images", False),
    )
    table.done()
    return config


_SOURCE_READERS: dict[str, Callable[[_Table, Path], SourceConfig]] = {}


def _source(table: _Table, base: Path) -> SourceConfig:
    kind = table.required_text("type")
    reader = _SOURCE_READERS.get(kind)
    if reader is None:
        known = ", ".join(sorted(_SOURCE_READERS))
        raise table.error("type", f"unknown source type {kind!r} (known: {known})")
    source = reader(table, base)
    table.done()
    return source


def _directory(table: _Table, base: Path) -> SourceConfig:
    root = table.path("root", base)
    prefix = table.text("url_prefix", "/")
    if not (prefix.startswith("/") and prefix.endswith("/")):
        raise table.error("url_prefix", f"must start and end with '/', got {prefix!r}")
    if {".", ".."} & set(unquote(prefix).split("/")):
        raise table.error("url_prefix", f"must not hold '.' or '..' segments, got {prefix!r}")
    patterns = []
    for n, pattern in enumerate(table.texts("ignore", ())):
        try:
            patterns.append(re.compile(pattern.encode()))
        except re.error as exc:
            raise table.error(f"ignore[{n}]", f"not a valid regular expression ({exc})") from exc
        if _nested_repeat(pattern):
            # Every page is searched with it: a page can make such a pattern run for hours.
            raise table.error(
                f"ignore[{n}]",
                f"repeats a group that itself repeats ({pattern!r}): its search can take "
                "exponential time; write it without the nested repetition",
            )
    defaults = DirectorySource(name="", root=root)
    include = table.texts("include", defaults.include)
    if not include:
        raise table.error("include", "must name at least one glob")
    for key in ("include", "exclude"):
        for n, glob in enumerate(table.texts(key, ())):
            if glob.startswith(("/", "~")) or ".." in glob.split("/"):
                raise table.error(
                    f"{key}[{n}]",
                    f"must be a glob relative to root ({root}), got {glob!r}: no file "
                    "outside root is read",
                )
    return DirectorySource(
        name=table.text("name", f"directory:{root}"),
        root=root,
        url_prefix=prefix,
        include=include,
        # Error pages are excluded unless the source says otherwise (`error_pages = []`).
        exclude=table.texts("exclude", ()) + table.texts("error_pages", ERROR_PAGES),
        strip_html=table.flag("strip_html", False),
        index_files=table.texts("index_files", defaults.index_files),
        ignore=tuple(patterns),
        backend=table.choice("backend", "auto", BACKENDS),
        poll_interval=table.number("poll_interval", 2.0, 0.1, 3600),
        language=_source_language(table),
        articles=table.choice("articles", "auto", ARTICLES),
        content_selector=_selector(table),
        fingerprint=table.choice("fingerprint", "content", FINGERPRINT_MODES),
        follow_symlinks=table.flag("follow_symlinks", False),
    )


ARTICLES = ("auto", "all", "none")
FINGERPRINT_MODES = ("content", "page")


def _nested_repeat(pattern: str) -> bool:
    """True when the regular expression `pattern` repeats, without bound, something that
    itself repeats a varying number of times (`(a+)+`, `(.*)*`, `(a{1,3})+`): the
    classic catastrophic backtrack."""
    from re import _constants, _parser  # type: ignore[attr-defined]

    repeats = (_constants.MAX_REPEAT, _constants.MIN_REPEAT)

    def walk(items: Any, inside: bool) -> bool:
        for op, av in items:
            if op in repeats:
                low, high, body = av
                if inside and high > max(low, 1):
                    return True
                if walk(body, inside or high == _constants.MAXREPEAT):
                    return True
                continue
            for part in av if isinstance(av, tuple | list) else (av,):
                branches = part if isinstance(part, list) else [part]
                if any(isinstance(b, _parser.SubPattern) and walk(b, inside) for b in branches):
                    return True
        return False

    return walk(_parser.parse(pattern), False)


def _source_language(table: _Table) -> str | None:
    language = table.text("language", "")
    if language and not re.fullmatch(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*", language):
        raise table.error(
            "language", f"must be a language tag like 'en' or 'pt-BR', got {language!r}"
        )
    return language or None


def _selector(table: _Table) -> str | None:
    selector = table.text("content_selector", "")
    if selector:
        # lxml and cssselect load here only: a site of URL lists starts without them.
        from .fingerprint import compile_selector

        try:
            compile_selector(selector)
        except ValueError as exc:
            raise table.error("content_selector", str(exc)) from exc
    return selector or None


def _urllist(table: _Table, base: Path) -> SourceConfig:
    path = table.path("path", base)
    return UrlListSource(name=table.text("name", f"urllist:{path}"), path=path)


def _changelog(table: _Table, base: Path) -> SourceConfig:
    dsn = table.required_text("dsn")
    if dsn.startswith("sqlite:///") and not dsn.startswith("sqlite:////"):
        # A relative SQLite path resolves against the config file, like every other path.
        dsn = "sqlite:///" + str((base / dsn.removeprefix("sqlite:///")).resolve())
    if table.choice("preset", "", ("", "wordpress")):
        return _wordpress(table, dsn)
    mode = table.choice("mode", "table", CHANGELOG_MODES)
    stream = mode != "table"
    query = None if stream else table.text("query", "") or None
    name_table = table.text("table", "" if query or stream else "sitemap_changes") or None
    if query and name_table:
        raise table.error("query", "give either table or query, not both")
    if stream and not name_table:
        raise table.error("table", f"mode {mode!r} needs the table to follow")
    if name_table and not re.fullmatch(
        r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?", name_table
    ):
        raise table.error("table", f"must be a plain (schema.)table name, got {name_table!r}")
    if not stream:
        _refuse_content_table(table, query or name_table or "")
    columns = table.table("columns")
    column = _stream_column(table, columns) if stream else columns.text
    url_template = column("url_template", "") or None
    deleted = None if stream else columns.text("deleted", "") or None
    meta = tuple(
        (field, name)
        for field in ("title", "published", "language", "news_title")
        if (name := column(field, ""))
    )
    live = _live(table.table("live")) if stream else ()
    fingerprint = table.texts("fingerprint_columns", ()) if stream else ()
    binlog, logical = mode == "binlog", mode == "logical"
    server_id = table.integer("server_id", SERVER_ID, 1, 2**32 - 1) if binlog else SERVER_ID
    slot = _pg_name(table, "slot", "sitemapd") if logical else "sitemapd"
    publication = _pg_name(table, "publication", slot) if logical else ""
    spec = ChangelogSpec(
        dsn=dsn,
        table=name_table,
        query=query,
        id_column=column("id", "" if stream else "id"),
        url_column=None if url_template else column("url", "url"),
        url_template=url_template,
        op_column=None if deleted or stream else columns.text("op", "op"),
        deleted_column=deleted,
        changed_at_column=column("changed_at", "" if stream else "changed_at"),
        hash_column=None if stream else columns.text("content_hash", "") or None,
        xid_column="" if stream else columns.text("txid", "txid"),
        meta_columns=meta,
        channel="" if stream else table.text("channel", "sitemapd"),
        overlap=0 if stream else table.integer("overlap", 1000, 0, 10_000_000),
        mode=mode,
        live=live,
        fingerprint_columns=fingerprint,
        server_id=server_id,
        slot=slot,
        publication=publication,
    )
    columns.done()
    return ChangelogSource(
        name=table.text("name", f"changelog:{_safe_dsn(dsn)}"),
        spec=spec,
        poll_interval=table.number("poll_interval", 2.0, 0.05, 3600),
        batch_size=table.integer("batch_size", 10_000, 1, 1_000_000),
        reconcile_query=table.text("reconcile_query", "") or None,
        language=_source_language(table),
        articles=table.choice("articles", "auto", ARTICLES),
    )


CHANGELOG_MODES = ("table", "binlog", "logical")


def _wordpress(table: _Table, dsn: str) -> ChangelogSource:
    """Return the source of `preset = "wordpress"`: a WordPress site from its tables."""
    mode = table.choice("mode", "binlog", ("binlog", "poll"))
    prefix = table.text("table_prefix", "wp_")
    if not re.fullmatch(r"[A-Za-z0-9_]+", prefix):
        raise table.error("table_prefix", f"must be letters, digits and _, got {prefix!r}")
    spec = ChangelogSpec(
        dsn=dsn,
        mode=mode,
        preset="wordpress",
        table_prefix=prefix,
        server_id=table.integer("server_id", SERVER_ID, 1, 2**32 - 1),
        resync=table.number("resync_interval", 900.0, 1, 7 * 86400),
    )
    return ChangelogSource(
        name=table.text("name", f"wordpress:{_safe_dsn(dsn)}"),
        spec=spec,
        poll_interval=table.number("poll_interval", 2.0, 0.05, 3600),
        batch_size=table.integer("batch_size", 10_000, 1, 1_000_000),
        language=_source_language(table),
        articles=table.choice("articles", "auto", ARTICLES),
    )


# WordPress's posts table (any prefix) read as a change table: rows updated in place.
_WP_POSTS = re.compile(r"\b\w*posts\b", re.IGNORECASE)
_WP_COLUMNS = re.compile(r"\bpost_(status|name|modified|modified_gmt|date|type)\b", re.IGNORECASE)


def _refuse_content_table(table: _Table, source: str) -> None:
    """Refuse a table-mode source over WordPress's posts table: its cursor only moves
    forward over ids, and an edited post keeps its id, so no edit would ever be read."""
    mapped = " ".join(str(value) for value in table.data.get("columns", {}).values())
    if not (_WP_POSTS.search(source) and _WP_COLUMNS.search(f"{source} {mapped}")):
        return
    key = "query" if "query" in table.data else "table"
    raise table.error(
        key,
        "reads WordPress's posts table as a change log: its id cursor never reads a post "
        "again, so every edit, unpublish and deletion is missed. Follow the site with "
        'preset = "wordpress", the table itself with mode = "binlog", or fill a change table '
        "by trigger (sitemapd changelog-sql --mysql)",
    )


def _stream_column(table: _Table, columns: _Table) -> Callable[[str, str], str]:
    """Return a getter of a stream mode's column names: in `columns` or, as the issue's
    short form has them, beside `type` (not both)."""

    def column(key: str, default: str) -> str:
        if key in table.data and key in columns.data:
            raise table.error(key, f"given here and as columns.{key}: keep one")
        return table.text(key, "") or columns.text(key, default)

    return column


def _pg_name(table: _Table, key: str, default: str) -> str:
    """Return a replication slot or publication name (lower case letters, digits, _)."""
    name = table.text(key, default)
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
        raise table.error(key, f"must be lower case letters, digits and _, got {name!r}")
    return name


def _live(live: _Table) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Return the `live` conditions: each column with the values that make a row a page."""
    conditions = []
    for name, value in live.data.items():
        accepted = value if isinstance(value, list) else [value]
        if not accepted or not all(isinstance(one, str | int) for one in accepted):
            raise live.error(name, "must be a value (text or integer) or a list of them")
        live.used.add(name)
        conditions.append(
            (name, tuple(str(int(one)) if isinstance(one, bool) else str(one) for one in accepted))
        )
    return tuple(conditions)


def _safe_dsn(dsn: str) -> str:
    """Return `dsn` without its password, for names and messages."""
    return re.sub(r"(//[^:/@]*):[^@/]*@", r"\1@", dsn)


def _accesslog(table: _Table, base: Path) -> SourceConfig:
    path = table.path("path", base)
    return AccessLogSource(
        name=table.text("name", f"accesslog:{path}"),
        path=path,
        poll_interval=table.number("poll_interval", 5.0, 0.1, 3600),
    )


_SOURCE_READERS.update(
    directory=_directory, urllist=_urllist, changelog=_changelog, accesslog=_accesslog
)
