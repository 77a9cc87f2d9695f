"""Whose files sit in the output folder: sitemapd never replaces a file it did not write.

A site generator writing into the same folder often uses the same names (`sitemap.xml`,
`rss.xml`). A file under a name sitemapd publishes is its own when the ledger recorded
it as published and it is still as published, or when its bytes are sitemapd's kind of
document (after a lost state folder the ledger knows nothing, but the files are ours):
an index naming only sitemapd's files, a shard or news sitemap as sitemapd begins one,
a feed whose generator is sitemapd, the IndexNow key file holding the key. Anything else
is foreign: an error naming the file and the setting that renames sitemapd's, unless
`[site] take_over` says to replace it, keeping a copy in the state folder.
"""

# Annotations evaluated, not text: see core/observation.py.
import sqlite3
import stat
import zlib
from collections.abc import Callable
from pathlib import Path

from sitemapd.config import Config
from sitemapd.core import logs
from sitemapd.errors import ConfigError, SitemapdError
from sitemapd.publish.names import OutputNames
from sitemapd.publish.store import LocalStore, Record
from sitemapd.render.parts import part_number
from sitemapd.render.sitemap import INDEX_HEAD, URLSET_EXTENDED_HEAD, URLSET_HEAD

log = logs.Logger("sitemapd.ownership")

# Where copies of the files taken over are kept, in the state folder.
REPLACED = "replaced"
# Bytes read to recognise a document's start (a feed names its generator early on).
_HEAD_BYTES = 8192

Published = Callable[[str], Record | None]


class Foreign:
    """A file in the output folder under a name sitemapd publishes, written by another."""

    __slots__ = ("path", "setting")

    path: Path
    # The dotted key that gives sitemapd's file another name.
    setting: str

    def __init__(self, path: Path, setting: str) -> None:
        self.path = path
        self.setting = setting


def foreign_files(config: Config, published: Published) -> list[Foreign]:
    """Return the files in `config`'s output folder under names sitemapd publishes that
    it did not write; `published` gives the ledger's record of a name (None: none)."""
    if config.publish.s3 is not None:
        return []  # a bucket has no other writer: its keys are sitemapd's by lease
    folder = config.site.output_dir
    names = OutputNames(config)
    store = LocalStore(folder, None)
    found = []
    for name in store.names():
        # A symlink or folder at the name is nobody's document: the publisher replaces a
        # symlink without following it.
        if not names.is_output(name) or not _regular(folder / name):
            continue
        record = published(name)
        if record is not None and store.intact(name, record):
            continue
        if not _own_bytes(folder / name, config, names):
            found.append(Foreign(folder / name, _setting(config, name, names)))
    return found


def ledger_records(config: Config) -> Published:
    """Return a lookup of the ledger's published records, read without writing: none when
    there is no ledger yet or it cannot be read as this version reads it (an older schema
    before its migration, an empty file): the documents' bytes then tell sitemapd's own,
    and opening the ledger to write says what is wrong with it."""
    path = config.ledger_path
    rows: list[tuple[str, str, int, int | None]] = []
    if path.exists():
        try:
            conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
            try:
                rows = conn.execute(
                    "SELECT name, sha256, bytes, mtime_ns FROM published"
                ).fetchall()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            log.debug("%s: published records not read (%s)", path, exc)
    records: dict[str, Record] = {name: (sha, size, stamp) for name, sha, size, stamp in rows}
    return records.get


def refuse(config: Config, found: list[Foreign]) -> None:
    """Raise ConfigError naming the first of the `found` foreign files and the setting
    that renames sitemapd's, unless `[site] take_over` lets sitemapd replace them."""
    if not found or config.site.take_over:
        return
    first = found[0]
    more = "".join(f", {f.path.name}" for f in found[1:])
    raise ConfigError(
        f"{first.path} was not written by sitemapd"
        + (f" (nor were {more[2:]})" if more else "")
        + f": give sitemapd's file another name with {first.setting} in {config.path}, "
        f"or set site.take_over = true to replace it (a copy is kept in "
        f"{config.site.state_dir / REPLACED})"
    )


def claim(config: Config, published: Published) -> list[Foreign]:
    """Make sure sitemapd may write every name it publishes; return the files taken over,
    each copied into the state folder first. Raises ConfigError (see `refuse`), or
    SitemapdError when a copy cannot be kept."""
    found = foreign_files(config, published)
    refuse(config, found)
    for foreign in found:
        # Loaded for a take-over only (with bz2 and lzma): most builds find nothing foreign.
        import shutil

        keep = config.site.state_dir / REPLACED / foreign.path.name
        try:
            keep.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(foreign.path, keep)
        except OSError as exc:
            raise SitemapdError(f"cannot keep a copy of {foreign.path} in {keep} ({exc})") from exc
        log.warning("taking over %s, not written by sitemapd: its copy is %s", foreign.path, keep)
    return found


def _regular(path: Path) -> bool:
    """True when `path` is a regular file itself, not a symlink to one."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _setting(config: Config, name: str, names: OutputNames) -> str:
    """Return the key that renames sitemapd's file `name`."""
    for key, first in (
        ("news.file", config.news.file if config.news else None),
        ("feed.atom", config.feed.atom if config.feed else None),
        ("feed.rss", config.feed.rss if config.feed else None),
    ):
        if first is not None and part_number(first, name) is not None:
            return key
    if name == names.key_file:
        return "indexnow.key_file (false)"
    return "sitemap.index"


def _own_bytes(path: Path, config: Config, names: OutputNames) -> bool:
    """True when the document at `path` is one sitemapd writes under its name."""
    name = path.name
    try:
        if name == names.key_file:
            return config.indexnow is not None and path.read_bytes() == config.indexnow.key.encode()
        head = _head(path)
    except (OSError, EOFError, zlib.error):  # gzip's BadGzipFile is an OSError
        return False
    if name == names.index:
        return head.startswith(INDEX_HEAD.encode()) and _names_only_ours(path, names)
    if names.is_shard(name):
        return head.startswith((URLSET_HEAD.encode(), URLSET_EXTENDED_HEAD.encode()))
    if names.is_news(name):
        # The news renderer loads only where a file may be a news sitemap.
        from sitemapd.render.news import NEWS_HEAD

        return head.startswith(NEWS_HEAD.encode())
    # feedgen loads only for a site with feeds.
    from sitemapd.render.feeds import GENERATOR

    return f"<generator>{GENERATOR}</generator>".encode() in head


def _head(path: Path) -> bytes:
    """Return the first bytes of `path`, uncompressed when it is gzip."""
    with path.open("rb") as handle:
        data = handle.read(_HEAD_BYTES)
    if data.startswith(b"\x1f\x8b"):
        import gzip  # here: a build's claim reads gzip files seldom

        with gzip.open(path, "rb") as stream:
            return stream.read(_HEAD_BYTES)
    return data


def _names_only_ours(index: Path, names: OutputNames) -> bool:
    """True when every sitemap the index at `index` names is one of sitemapd's files."""
    # Here: lxml loads only for an index that is not known as sitemapd's.
    from sitemapd.render.sitemapfile import entries, open_sitemap

    try:
        with open_sitemap(index) as stream:
            for entry in entries(stream, str(index)):
                name = entry.loc.removeprefix(names.output_url)
                if entry.loc == name or not names.is_output(name):
                    return False
    except SitemapdError:
        return False
    return True
