"""`[[source]]`: directories, URL lists, change logs and access logs."""

# Annotations evaluated, not text: see core/observation.py.
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import unquote

from sitemapd.config.daemon import BACKENDS
from sitemapd.config.table import Table, spelled_like

if TYPE_CHECKING:
    from sitemapd.config.changelog import ChangelogSpec

# Pages generators write at the root for the web server's errors, mostly without noindex
# (not deeper: /news/404.html may well be the 404th article).
ERROR_PAGES = ("404.html", "50x.html")


class DirectorySource(NamedTuple):
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


class UrlListSource(NamedTuple):
    """A sitemaps.org text file: one URL a line, optionally a tab and a W3C datetime."""

    name: str
    path: Path


class ChangelogSource(NamedTuple):
    """A database change table (or query) read after a cursor kept in the ledger."""

    name: str
    spec: "ChangelogSpec"
    # Seconds between polls; with PostgreSQL LISTEN/NOTIFY wakes it at once.
    poll_interval: float = 2.0
    # Rows per read; one read is one ledger transaction with its cursor.
    batch_size: int = 10_000
    # Optional SELECT of every live URL (first column), run every reconcile to catch
    # deletions the change log missed.
    reconcile_query: str | None = None
    language: str | None = None
    articles: str = "auto"


class AccessLogSource(NamedTuple):
    """A web server access log: when crawlers fetched the feeds, what they got for URLs."""

    name: str
    path: Path
    poll_interval: float = 5.0


SourceConfig = DirectorySource | UrlListSource | ChangelogSource | AccessLogSource


ContentSource = DirectorySource | UrlListSource | ChangelogSource


def read_source(table: Table, base: Path) -> SourceConfig:
    kind = table.required_text("type")
    reader = _SOURCE_READERS.get(kind)
    if reader is None:
        known = ", ".join(sorted(_SOURCE_READERS))
        near = spelled_like(kind, sorted(_SOURCE_READERS))
        hint = f"did you mean {near}? " if near else ""
        raise table.error("type", f"unknown source type {kind!r} ({hint}known: {known})")
    source = reader(table, base)
    table.done()
    if not source.name.strip():
        raise table.error("name", "must not be empty (it names the source in logs and status)")
    return source


def _directory(table: Table, base: Path) -> SourceConfig:
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


def _source_language(table: Table) -> str | None:
    language = table.text("language", "")
    if language and not re.fullmatch(r"[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*", language):
        raise table.error(
            "language", f"must be a language tag like 'en' or 'pt-BR', got {language!r}"
        )
    return language or None


def _selector(table: Table) -> str | None:
    selector = table.text("content_selector", "")
    if selector:
        # lxml and cssselect load here only: a site of URL lists starts without them.
        from sitemapd.fingerprint import compile_selector

        try:
            compile_selector(selector)
        except ValueError as exc:
            raise table.error("content_selector", str(exc)) from exc
    return selector or None


def _urllist(table: Table, base: Path) -> SourceConfig:
    path = table.path("path", base, resolve=False)
    return UrlListSource(name=table.text("name", f"urllist:{path}"), path=path)


def _changelog(table: Table, base: Path) -> SourceConfig:
    # Loaded for a change log only: a site of files and lists starts without it.
    from sitemapd.config.changelog import SERVER_ID, ChangelogSpec

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


def _wordpress(table: Table, dsn: str) -> ChangelogSource:
    """Return the source of `preset = "wordpress"`: a WordPress site from its tables."""
    from sitemapd.config.changelog import SERVER_ID, ChangelogSpec

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
_WP_POSTS = r"(?i)\b\w*posts\b"


_WP_COLUMNS = r"(?i)\bpost_(status|name|modified|modified_gmt|date|type)\b"


def _refuse_content_table(table: Table, source: str) -> None:
    """Refuse a table-mode source over WordPress's posts table: its cursor only moves
    forward over ids, and an edited post keeps its id, so no edit would ever be read."""
    mapped = " ".join(str(value) for value in table.data.get("columns", {}).values())
    if not (re.search(_WP_POSTS, source) and re.search(_WP_COLUMNS, f"{source} {mapped}")):
        return
    key = "query" if "query" in table.data else "table"
    raise table.error(
        key,
        "reads WordPress's posts table as a change log: its id cursor never reads a post "
        "again, so every edit, unpublish and deletion is missed. Follow the site with "
        'preset = "wordpress", the table itself with mode = "binlog", or fill a change table '
        "by trigger (sitemapd changelog-sql --mysql)",
    )


def _stream_column(table: Table, columns: Table) -> Callable[[str, str], str]:
    """Return a getter of a stream mode's column names: in `columns` or, as the issue's
    short form has them, beside `type` (not both)."""

    def column(key: str, default: str) -> str:
        if key in table.data and key in columns.data:
            raise table.error(key, f"given here and as columns.{key}: keep one")
        return table.text(key, "") or columns.text(key, default)

    return column


def _pg_name(table: Table, key: str, default: str) -> str:
    """Return a replication slot or publication name (lower case letters, digits, _)."""
    name = table.text(key, default)
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
        raise table.error(key, f"must be lower case letters, digits and _, got {name!r}")
    return name


def _live(live: Table) -> tuple[tuple[str, tuple[str, ...]], ...]:
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


def _accesslog(table: Table, base: Path) -> SourceConfig:
    path = table.path("path", base)
    return AccessLogSource(
        name=table.text("name", f"accesslog:{path}"),
        path=path,
        poll_interval=table.number("poll_interval", 5.0, 0.1, 3600),
    )


_SOURCE_READERS: dict[str, Callable[[Table, Path], SourceConfig]] = {
    "directory": _directory,
    "urllist": _urllist,
    "changelog": _changelog,
    "accesslog": _accesslog,
}
