"""The publisher: the only code that touches the output directory.

Every file is written whole to a temp file in the same folder, fsynced, renamed over the
old one, and the folder fsynced, so readers only ever see complete documents. Shards go
out before the index that names them; a shard file is removed only after an index that no
longer names it is in place. Files whose bytes did not change are not rewritten.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from . import robots
from .config import Config
from .errors import PublishError
from .ledger import Ledger
from .render.sitemap import sitemap_index, urlset

log = logging.getLogger(__name__)

_TEMP_PREFIX = ".sitemapd-tmp-"


@dataclass
class PublishReport:
    """What one publish wrote and removed."""

    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    bytes_written: int = 0


def atomic_write(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` so that no reader ever sees a partial file.

    `mode` keeps an existing file's permissions; new files get 0o666 minus the umask.
    """
    temp = path.with_name(f"{_TEMP_PREFIX}{path.name}-{os.getpid()}")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
        _fsync_dir(path.parent)
    except OSError as exc:
        temp.unlink(missing_ok=True)
        raise PublishError(f"cannot write {path} ({exc.strerror})") from exc


def _remove_leftover_temps(folder: Path) -> None:
    """Remove temp files that a crashed sitemapd left in `folder` (never a live one's)."""
    for path in folder.glob(_TEMP_PREFIX + "*"):
        pid = path.name.rpartition("-")[2]
        if pid.isdigit() and int(pid) != os.getpid() and _running(int(pid)):
            continue
        path.unlink(missing_ok=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class OutputNames:
    """The file names and public URLs of a site's sitemaps."""

    def __init__(self, config: Config) -> None:
        self.index = config.sitemap.index
        self.output_url = config.site.output_url
        self._gzip = config.sitemap.gzip
        self._stem = config.sitemap.index.removesuffix(".xml")
        self._shard_file = re.compile(rf"{re.escape(self._stem)}-(\d+)\.xml(\.gz)?\Z")

    def shard(self, shard_id: int) -> str:
        """Return the file name of shard `shard_id`."""
        return f"{self._stem}-{shard_id}.xml" + (".gz" if self._gzip else "")

    def is_output(self, name: str) -> bool:
        """True when `name` is a file sitemapd writes into the output directory."""
        return name == self.index or self.is_shard(name)

    def is_shard(self, name: str) -> bool:
        """True when `name` is a shard file of this site, compressed or not."""
        return self._shard_file.match(name) is not None

    @property
    def index_url(self) -> str:
        """Return the public URL of the sitemap index."""
        return self.output_url + self.index


class Publisher:
    """Writes the ledger's sitemaps into the output directory, touching only what changed."""

    def __init__(self, config: Config, ledger: Ledger) -> None:
        self.site = config.site
        self.sitemap = config.sitemap
        self.ledger = ledger
        self.out = config.site.output_dir
        self.names = OutputNames(config)

    def publish(self, now: str) -> PublishReport:
        """Write every changed file, then remove files no index names; return what happened."""
        report = PublishReport()
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PublishError(f"cannot create output directory {self.out} ({exc})") from exc
        _remove_leftover_temps(self.out)
        written: dict[str, tuple[str, int, int]] = {}
        dirty = {shard_id for shard_id, _ in self.ledger.shards_to_render()}
        index_rows = self.ledger.index_rows()
        for shard_id, _ in index_rows:
            name = self.names.shard(shard_id)
            if shard_id in dirty or not self._intact(name):
                text = "".join(urlset(self.ledger.shard_rows(shard_id)))
                self._write(name, text.encode(), written, report)
        if not index_rows:
            log.warning("no URL is live: publishing an empty sitemap index")
        index = sitemap_index(
            (self.site.output_url + self.names.shard(shard_id), lastmod)
            for shard_id, lastmod in index_rows
        )
        self._write(self.sitemap.index, index.encode(), written, report)
        # robots.txt names the new index before any retired file goes.
        self._update_robots_txt(report)
        # Only now that the index is in place may files it no longer names go: shards of
        # this index, and anything published under names no longer in use (a renamed index
        # and its shards).
        named = {self.names.shard(shard_id) for shard_id, _ in index_rows}
        current = named | {self.sitemap.index}
        retired = [name for name in self.ledger.published_names() if name not in current]
        for path in sorted(self.out.iterdir()):
            stale = self.names.is_shard(path.name) and path.name not in named
            if stale or path.name in retired:
                path.unlink(missing_ok=True)
                report.removed.append(path.name)
        if report.removed:
            _fsync_dir(self.out)
        self.ledger.record_publish(written, dirty, self.ledger.empty_shards(), retired, at=now)
        return report

    def _intact(self, name: str, record: tuple[str, int, int | None] | None = None) -> bool:
        """True when `name` is on disk exactly as published (same size and mtime)."""
        record = record or self.ledger.published(name)
        try:
            st = (self.out / name).stat()
        except FileNotFoundError:
            return False
        return record is not None and (st.st_size, st.st_mtime_ns) == record[1:]

    def _write(
        self,
        name: str,
        text: bytes,
        written: dict[str, tuple[str, int, int]],
        report: PublishReport,
    ) -> None:
        digest = hashlib.sha256(text).hexdigest()
        record = self.ledger.published(name)
        if record is not None and record[0] == digest and self._intact(name, record):
            return
        data = text
        if name.endswith(".gz"):
            # mtime=0 and no file name in the header: the same sitemap gives the same bytes.
            data = gzip.compress(text, compresslevel=self.sitemap.gzip_level, mtime=0)
        atomic_write(self.out / name, data)
        written[name] = (digest, len(data), (self.out / name).stat().st_mtime_ns)
        report.written.append(name)
        report.bytes_written += len(data)
        log.debug("wrote %s (%d bytes)", name, len(data))

    def _update_robots_txt(self, report: PublishReport) -> None:
        if self.site.robots_txt is None:
            return
        # Edit the file a symlink points to, keeping its permissions.
        path = self.site.robots_txt.resolve()
        try:
            current = path.read_bytes()
            mode: int | None = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            current, mode = b"", None
        except OSError as exc:
            raise PublishError(f"cannot read {path} ({exc.strerror})") from exc
        retired = self.ledger.cursor("robots_sitemap_line")
        updated = robots.with_sitemap_line(current, self.names.index_url, retired)
        if updated != current:
            try:
                _remove_leftover_temps(path.parent)
                atomic_write(path, updated, mode)
            except (OSError, PublishError) as exc:
                # The sitemaps are out; a read-only robots.txt must not stop them.
                log.warning(
                    "cannot add the Sitemap: line to %s (%s): make its folder writable "
                    "(systemd: ReadWritePaths=) or add the line by hand",
                    path,
                    exc,
                )
                return
            report.written.append(str(path))
            report.bytes_written += len(updated)
        if retired != self.names.index_url:
            self.ledger.set_cursor("robots_sitemap_line", self.names.index_url)
