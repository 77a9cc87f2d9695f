"""Configuration: TOML read with tomllib into frozen dataclasses, validated in one place.

Every error is a ConfigError whose message names the file and the key, for example
`sitemapd.toml: sitemap.max_urls: must be at most 50000, got 60000`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .errors import ConfigError
from .listen import parse_listen
from .urls import Origin

MAX_URLS = 50_000
MAX_BYTES = 52_428_800
DEFAULT_INDEX = "sitemap.xml"

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SiteConfig:
    base_url: str
    origin: Origin
    output_dir: Path
    # The public URL of output_dir: where crawlers fetch the sitemaps.
    output_url: str
    state_dir: Path
    robots_txt: Path | None

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


BACKENDS = ("auto", "inotify", "polling")


@dataclass(frozen=True, slots=True)
class DaemonConfig:
    """How `sitemapd run` batches events and how often it reconciles with the disk."""

    debounce: float = 0.5
    max_delay: float = 5.0
    reconcile_interval: float = 900.0
    # A batch running longer than this makes the daemon unhealthy.
    stuck_after: float = 600.0


@dataclass(frozen=True, slots=True)
class HttpConfig:
    """The sidecar endpoint; off while `listen` is empty."""

    listen: str = ""
    serve_files: bool = False


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


@dataclass(frozen=True, slots=True)
class UrlListSource:
    """A sitemaps.org text file: one URL a line, optionally a tab and a W3C datetime."""

    name: str
    path: Path


SourceConfig = DirectorySource | UrlListSource


@dataclass(frozen=True, slots=True)
class Config:
    path: Path
    site: SiteConfig
    sitemap: SitemapConfig
    sources: tuple[SourceConfig, ...]
    daemon: DaemonConfig = DaemonConfig()
    http: HttpConfig = HttpConfig()

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
    site = _site(top.table("site"), base)
    sitemap = _sitemap(top.table("sitemap"))
    daemon = _daemon(top.table("daemon"))
    http = _http(top.table("http"))
    sources_raw = top.get("source", list, [], "an array of tables ([[source]])")
    if not sources_raw:
        raise top.error("source", "at least one [[source]] table is required")
    sources = tuple(
        _source(_Table(file, f"source[{n}]", item), base) for n, item in enumerate(sources_raw)
    )
    top.done()
    names = [source.name for source in sources]
    for n, name in enumerate(names):
        if name in names[:n]:
            raise top.error(f"source[{n}].name", f"duplicate source name {name!r}")
    return Config(file.resolve(), site, sitemap, sources, daemon, http)


def _http(table: _Table) -> HttpConfig:
    listen = table.text("listen", "")
    if listen:
        try:
            parse_listen(listen)
        except ValueError as exc:
            raise table.error("listen", str(exc)) from exc
    config = HttpConfig(listen=listen, serve_files=table.flag("serve_files", False))
    if config.serve_files and not listen:
        raise table.error("serve_files", "needs http.listen")
    table.done()
    return config


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
    )
    table.done()
    return config


def _site(table: _Table, base: Path) -> SiteConfig:
    base_url = table.required_text("base_url")
    try:
        origin = Origin.from_base_url(base_url)
    except ConfigError as exc:
        raise table.error("base_url", str(exc)) from exc
    output_dir = table.path("output_dir", base)
    output_url = table.text("output_url", origin.root)
    try:
        same_origin = Origin.from_base_url(output_url) == origin
    except ConfigError:
        same_origin = False
    if not same_origin or not output_url.endswith("/"):
        raise table.error(
            "output_url", f"must be a folder URL ending in '/' on {origin.root}, got {output_url!r}"
        )
    state_dir = table.path("state_dir", base)
    if state_dir == output_dir or state_dir.is_relative_to(output_dir):
        raise table.error("state_dir", "must not be inside output_dir: the ledger is not public")
    robots_txt = table.optional_path("robots_txt", base)
    table.done()
    return SiteConfig(base_url, origin, output_dir, output_url, state_dir, robots_txt)


def _sitemap(table: _Table) -> SitemapConfig:
    index = table.text("index", DEFAULT_INDEX)
    if "/" in index or not index.endswith(".xml"):
        raise table.error("index", f"must be a file name ending in .xml, got {index!r}")
    config = SitemapConfig(
        max_urls=table.integer("max_urls", MAX_URLS, 1, MAX_URLS),
        # The floor holds the largest possible entry (2,048 characters of `&`, escaped).
        max_bytes=table.integer("max_bytes", MAX_BYTES, 16384, MAX_BYTES),
        gzip=table.flag("gzip", False),
        gzip_level=table.integer("gzip_level", 6, 1, 9),
        index=index,
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
    patterns = []
    for n, pattern in enumerate(table.texts("ignore", ())):
        try:
            patterns.append(re.compile(pattern.encode()))
        except re.error as exc:
            raise table.error(f"ignore[{n}]", f"not a valid regular expression ({exc})") from exc
    defaults = DirectorySource(name="", root=root)
    include = table.texts("include", defaults.include)
    if not include:
        raise table.error("include", "must name at least one glob")
    return DirectorySource(
        name=table.text("name", f"directory:{root}"),
        root=root,
        url_prefix=prefix,
        include=include,
        exclude=table.texts("exclude", ()),
        strip_html=table.flag("strip_html", False),
        index_files=table.texts("index_files", defaults.index_files),
        ignore=tuple(patterns),
        backend=table.choice("backend", "auto", BACKENDS),
        poll_interval=table.number("poll_interval", 2.0, 0.1, 3600),
    )


def _urllist(table: _Table, base: Path) -> SourceConfig:
    path = table.path("path", base)
    return UrlListSource(name=table.text("name", f"urllist:{path}"), path=path)


_SOURCE_READERS.update(directory=_directory, urllist=_urllist)
