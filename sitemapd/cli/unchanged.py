"""A `build` that finds nothing changed since the last one, told before the engine loads.

A build that ended with nothing to say (no warning or error, printed or logged at a
level that shows them; no held removal; nothing owed) notes in the state folder what the
next build's outcome rests on: the configuration as loaded, and the status (inode, size,
mode, mtime and ctime; through a symlink too) of each URL list and of robots.txt as they
were before the build read them, of the output folder, its manifest folder and every
published file, of the state folder's files (the ledger among them) and of the files of
the sitemapd modules the build ran, as the build left them; and each list's chunks as the
ledger records them (where each ends, its bytes' digest). The next build, holding the
state lock, compares: when all of it is as noted, a full build would find every list
unread (its key is its cursor's), every published file intact and nothing to write or
say, so it ends there. A list whose status alone moved is hashed in place by those
chunks, from both ends at once: the same bytes (a `touch`) are noted anew; where the
chunks differ the full build runs, and its scan takes the chunks found unchanged at
either end from `filedigest.ends` rather than hashing them again. Anything else (a file
edited or added, another configuration, other code) runs the full build, which notes
the state it leaves. Every command that opens the ledger to write deletes the note
first.

Only sites whose builds rest on nothing else take part: URL lists only, a local output
folder, no partition, no news sitemap, feeds or notifications (those move with the clock
and with what is owed).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import sitemapd
from sitemapd import __version__
from sitemapd.config import Config, UrlListSource
from sitemapd.core import logs
from sitemapd.core.durable import freeing
from sitemapd.core.filedigest import Place, matching, open_regular
from sitemapd.ledger.lock import StateLock
from sitemapd.publish.manifestfile import manifest_name

if TYPE_CHECKING:
    import sqlite3

    from sitemapd.ledger.ledger import Ledger

log = logs.Logger("sitemapd.build")
# Where this sitemapd's modules are, as the prefix of their files' paths: kept as text,
# as their paths are (a Path of each of a build's ~80 files cost 2 ms).
_PACKAGE = os.path.join(os.path.dirname(sitemapd.__file__), "")
# The note, in the state folder.
NOTE = "quiet-build"


def eligible(cfg: Config) -> bool:
    """True when the outcome of a build of `cfg` rests on its files alone."""
    return (
        all(isinstance(source, UrlListSource) for source in cfg.sources)
        and cfg.publish.s3 is None
        and cfg.site.partition is None
        and cfg.news is None
        and cfg.feed is None
        and cfg.indexnow is None
        and not cfg.websub.hubs
    )


class Heard:
    """Whether sitemapd showed a warning or an error since this was made: a build that
    did would show it again, so it did not end quiet."""

    def __init__(self) -> None:
        self._before = logs.warned()
        # Warnings the log level hides cannot be heard: they count as said.
        self._hidden = not log.isEnabledFor(logs.WARNING)

    @property
    def said(self) -> bool:
        """True when a warning was shown since, or the log level hides them."""
        return self._hidden or logs.warned() > self._before


def as_noted(cfg: Config) -> bool:
    """True when the last build of `cfg` was quiet and nothing it rests on changed since;
    a list touched since (its status moved, its bytes did not) is noted anew.

    Call it holding the state lock."""
    if not eligible(cfg):
        return False
    try:
        noted = (cfg.site.state_dir / NOTE).read_text()
    except (OSError, UnicodeDecodeError):
        return False
    lines = noted.split("\n")
    # A note of releases that hashed lists by 8 MiB pieces says `digests`: not read.
    head = ("published ", "code ", "chunks ")
    if len(lines) < 6 or not all(lines[n].startswith(word) for n, word in enumerate(head, 2)):
        return False
    published, code, chunks = (lines[n].split()[1:] for n in (2, 3, 4))
    try:
        now = inputs(cfg)
        then = lines[5 : 5 + len(now)]
        if len(then) != len(now):
            return False
        # A list whose status moved first: one whose bytes moved too (a changed line) runs
        # the build without the rest being looked at, and its scan takes up the hashing.
        moved = [n for n, (line, was) in enumerate(zip(now, then, strict=True)) if line != was]
        lists = _lists(cfg)
        for n in moved:
            if n >= min(len(lists), len(chunks)) or not _same_bytes(lists[n], now[n], chunks[n]):
                return False
        # One pass over what the build left: all of it as noted, the inputs as they were.
        if _state(cfg, published, code, chunks, then) != noted:
            return False
        if moved:
            lines[5 : 5 + len(now)] = now
            _write(cfg, "\n".join(lines))
        return True
    except OSError:
        return False


def inputs(cfg: Config) -> list[str]:
    """Return the status of what a build of `cfg` reads (its lists, then robots.txt),
    taken before it reads them: a list replaced while the build runs differs from it, and
    the next build reads the list again."""
    paths = _lists(cfg)
    if cfg.site.robots_txt is not None:
        # The folder too: a missing robots.txt is read as empty only where it still is.
        paths += [cfg.site.robots_txt, cfg.site.robots_txt.parent]
    return _lines(paths)


def recorded(cfg: Config, ledger: Ledger) -> list[str] | None:
    """Return the chunks `ledger` records of each URL list of `cfg`, as the note holds
    them (see `_chunks`), for `note`; None when `cfg` is not noted."""
    if not eligible(cfg):
        return None
    return [_chunks(ledger.conn, source.name) for source in _sources(cfg)]


def _chunks(conn: sqlite3.Connection, source: str) -> str:
    """Return `c` and, joined by commas, where each chunk of the list `source` ends and its
    digest (`end:hex`), in order, as the ledger open on `conn` records them; "-" when it
    recorded one without its end. Joined by SQLite: a thousand chunks' records and texts
    made in Python cost 1-2 ms."""
    missing, text = conn.execute(
        "SELECT count(*) - count(end_byte), group_concat(end_byte || ':' || lower(hex(digest)), "
        "',') FROM (SELECT c.end_byte, c.digest FROM list_chunks c JOIN sources s "
        "ON s.id = c.source_id WHERE s.name = ? ORDER BY c.pos)",
        (source,),
    ).fetchone()
    return "-" if missing else "c" + (text or "")


def _places(chunks: str) -> list[Place] | None:
    """Return the chunks of a list as `_chunks` gave them; None when it gave none."""
    if not chunks.startswith("c"):
        return None
    try:
        return [
            Place(bytes.fromhex(digest), int(end))
            for end, _, digest in (item.partition(":") for item in chunks[1:].split(",") if item)
        ]
    except ValueError:
        return None


def note(cfg: Config, published: Iterable[str], read: list[str], chunks: list[str] | None) -> None:
    """Note the state a quiet build of `cfg` left, whose published files are `published`
    and whose inputs were `read` (as `inputs` gave them before the build read them), the
    lists' chunks those the ledger recorded after the build (`recorded`).

    Call it holding the state lock, the ledger closed."""
    if chunks is None:
        return
    # The chunks are those of the bytes the build read, or of an earlier read when the
    # list's key was its cursor's: the bytes of status `read` unless the list was written
    # since (its ctime moved), which its status now tells.
    kept = [
        known if before == after else "-"
        for known, before, after in zip(chunks, read, _lines(_lists(cfg)), strict=False)
    ]
    try:
        text = _state(cfg, sorted(published), _code(), kept, read)
    except OSError as exc:  # the build itself is done: the next one runs in full
        log.debug("cannot note the quiet build (%s)", exc)
        return
    _write(cfg, text)


def _write(cfg: Config, text: str) -> None:
    """Write the note `text` (see `_state`). A note lost in a crash costs a full build, no
    more: it is not fsynced."""
    path = cfg.site.state_dir / NOTE
    temp = path.with_name(f"{NOTE}.tmp")
    try:
        temp.write_text(text)
        temp.replace(path)
    except OSError as exc:  # the build itself is done: the next one runs in full
        log.debug("cannot note the quiet build in %s (%s)", path, exc)


def forget(state_dir: Path) -> None:
    """Delete the note: the ledger or the output is about to change. One that cannot be
    deleted is harmless: what changes next changes the status it notes."""
    path = state_dir / NOTE
    with freeing(path):
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            log.debug("cannot delete %s (%s)", path, exc)


def _code() -> list[str]:
    """Return the files of the sitemapd modules loaded now, under the package's folder: a
    build's code, whose status tells an upgrade (or an edit) that keeps the version."""
    files = [
        module.__file__
        for name, module in list(sys.modules.items())
        if name.partition(".")[0] == "sitemapd" and getattr(module, "__file__", None)
    ]
    return sorted(file.removeprefix(_PACKAGE) for file in files if file)


def _state(
    cfg: Config, published: list[str], code: list[str], chunks: list[str], read: list[str]
) -> str:
    """Return the text of the note of `cfg` with files `published`, built by the modules
    `code` from inputs `read` (the lists' bytes of `chunks`), as the output and state
    are now; raises OSError when the state folder cannot be listed."""
    out, state = cfg.site.output_dir, cfg.site.state_dir
    paths: list[str | Path] = [_PACKAGE + name for name in code]
    paths += [out, (out / manifest_name(cfg.sitemap.index_name)).parent]
    paths += [out / name for name in published]
    lock = StateLock(state).path.name
    # The ledger, its WAL and a first load's spool; not the lock, whose file holds the pid
    # of each process that takes it, nor the note itself.
    paths += sorted(p for p in state.iterdir() if p.name != lock and not p.name.startswith(NOTE))
    lines = [
        f"sitemapd {__version__}, Python {sys.version.split()[0]}",
        repr(cfg),
        " ".join(["published", *published]),
        " ".join(["code", *code]),
        " ".join(["chunks", *chunks]),
        *read,
        *_lines(paths),
    ]
    return "\n".join(lines) + "\n"


def _sources(cfg: Config) -> list[UrlListSource]:
    """Return the URL lists of `cfg`."""
    return [source for source in cfg.content_sources if isinstance(source, UrlListSource)]


def _lists(cfg: Config) -> list[Path]:
    """Return the paths of the URL lists of `cfg`."""
    return [source.path for source in _sources(cfg)]


def _same_bytes(path: Path, line: str, chunks: str) -> bool:
    """True when `path`, whose status is `line` now, holds the bytes of `chunks` (see
    `_chunks`), hashed in place up to the first that differs."""
    places = _places(chunks)
    if places is None:
        return False
    handle = open_regular(path)
    if handle is None:
        return False
    with handle:
        if _lines([path])[0] != line:
            return False
        if places:
            same = matching(handle, places) == len(places)
        else:
            same = os.fstat(handle.fileno()).st_size == 0
    # Not written while it was hashed.
    return same and _lines([path])[0] == line


def _lines(paths: Iterable[str | Path]) -> list[str]:
    """Return a line naming each of `paths` and its status."""
    return [f"{str(path)!r} {_key(path)}" for path in paths]


def _key(path: str | Path) -> str:
    """Return what identifies the state of `path`: its lstat, and its stat if a symlink;
    what went wrong when it cannot be had."""
    try:
        st = os.lstat(path)
        key = _stat_key(st)
        if stat.S_ISLNK(st.st_mode):
            key += f" -> {_stat_key(os.stat(path))}"
    except OSError as exc:
        return f"error {exc.errno}"
    return key


def _stat_key(st: os.stat_result) -> str:
    return f"{st.st_dev}:{st.st_ino} {st.st_mode:o} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}"
