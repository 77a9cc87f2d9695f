"""A `build` that finds nothing changed since the last one, told before the engine loads.

A build that ended with nothing to say (no warning or error, printed or logged at a
level that shows them; no held removal; nothing owed) notes in the state folder what the
next build's outcome rests on: the configuration as loaded, and the status (inode, size,
mode, mtime and ctime; through a symlink too) of each URL list and of robots.txt as they
were before the build read them, of the output folder, its manifest folder and every
published file, of the state folder's files (the ledger among them) and of the files of
the sitemapd modules the build ran, as the build left them. The next
build, holding the state lock, compares: when all of it is as noted, a full build would
find every list unread (its key is its cursor's), every published file intact and
nothing to write or say, so it ends there. Anything else (a list touched, a file edited
or added, another configuration, other code) runs the full build, which notes the state
it leaves. Every command that opens the ledger to write deletes the note first.

Only sites whose builds rest on nothing else take part: URL lists only, a local output
folder, no partition, no news sitemap, feeds or notifications (those move with the clock
and with what is owed).
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import sitemapd
from sitemapd import __version__
from sitemapd.config import Config, UrlListSource
from sitemapd.core.filedigest import open_regular, piece_digests
from sitemapd.ledger.lock import StateLock
from sitemapd.publish.manifestfile import manifest_name

if TYPE_CHECKING:
    from concurrent.futures import Future

log = logging.getLogger("sitemapd.build")
# Where this sitemapd's modules are.
_PACKAGE = Path(sitemapd.__file__).parent
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


class Heard(logging.Handler):
    """Whether sitemapd logged a warning or an error while this was attached: a build
    that did would log it again, so it did not end quiet."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        # Warnings the log level hides cannot be heard: they count as said.
        self.said = not logging.getLogger("sitemapd").isEnabledFor(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        self.said = True


@contextlib.contextmanager
def hearing() -> Iterator[Heard]:
    """Yield a Heard attached to sitemapd's logger until the block ends."""
    heard = Heard()
    logger = logging.getLogger("sitemapd")
    logger.addHandler(heard)
    try:
        yield heard
    finally:
        logger.removeHandler(heard)


# The pieces of a list the early check found as noted before one that was not: its status
# then, and their digests (a build that follows hashes them no more for its note).
Heads = dict[Path, tuple[str, list[str]]]


def as_noted(cfg: Config, heads: Heads | None = None) -> bool:
    """True when the last build of `cfg` was quiet and nothing it rests on changed since;
    a list touched since (its status moved, its bytes did not) is noted anew. Else
    `heads` gets the pieces found as noted of a list that changed.

    Call it holding the state lock."""
    if not eligible(cfg):
        return False
    try:
        noted = (cfg.site.state_dir / NOTE).read_text()
    except (OSError, UnicodeDecodeError):
        return False
    lines = noted.split("\n")
    head = ("published ", "code ", "digests ")
    if len(lines) < 6 or not all(lines[n].startswith(word) for n, word in enumerate(head, 2)):
        return False
    published, code, digests = (lines[n].split()[1:] for n in (2, 3, 4))
    try:
        now = inputs(cfg)
        then = lines[5 : 5 + len(now)]
        # One pass over what the build left: all of it as noted, the inputs as they were.
        if len(then) != len(now) or _state(cfg, published, code, digests, then) != noted:
            return False
        moved = [n for n, (line, was) in enumerate(zip(now, then, strict=True)) if line != was]
        lists = _lists(cfg)
        for n in moved:
            if n >= min(len(lists), len(digests)):
                return False
            same: list[str] = []
            if not _same_bytes(lists[n], now[n], digests[n], same):
                if heads is not None:
                    heads[lists[n]] = (now[n], same)
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


def hash_lists(
    cfg: Config, read: list[str], heads: Heads | None = None
) -> Future[list[str]] | None:
    """Start hashing the URL lists of `cfg`, whose status `read` gave (see `inputs`), on
    a thread of its own while the build runs, for `note`; None when `cfg` is not noted.
    A list whose status is not `read`'s, or that cannot be read, has the digest "-". The
    pieces `heads` knows of a list whose status is still the one it gives are not read."""
    if not eligible(cfg):
        return None
    # Loaded by a full build only (whose engine needs it too), not by one that ends early.
    from concurrent.futures import ThreadPoolExecutor

    hashing = ThreadPoolExecutor(1, thread_name_prefix="list-digests")
    try:
        return hashing.submit(_digests, _lists(cfg), read, heads or {})
    finally:
        hashing.shutdown(wait=False)


def _digests(lists: list[Path], read: list[str], heads: Heads) -> list[str]:
    """Return the digest of each of `lists` whose status is still `read`'s, else "-"."""
    try:
        return [
            _digest_as(path, line, heads.get(path)) for path, line in zip(lists, read, strict=False)
        ]
    except OSError:
        return ["-"] * len(lists)


def note(
    cfg: Config, published: Iterable[str], read: list[str], digests: Future[list[str]] | None
) -> None:
    """Note the state a quiet build of `cfg` left, whose published files are `published`
    and whose inputs were `read` (as `inputs` gave them before the build read them), the
    lists' bytes those of `digests` (from `hash_lists`).

    Call it holding the state lock, the ledger closed."""
    if digests is None:
        return
    lists = _lists(cfg)
    # Hashed as the build started: a list replaced since may hold other bytes than those
    # hashed, which the build may have read. Its status now tells.
    hashed = [
        digest if before == after else "-"
        for digest, before, after in zip(digests.result(), read, _lines(lists), strict=False)
    ]
    try:
        text = _state(cfg, sorted(published), _code(), hashed, read)
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
    try:
        (state_dir / NOTE).unlink(missing_ok=True)
    except OSError as exc:
        log.debug("cannot delete %s (%s)", state_dir / NOTE, exc)


def _code() -> list[str]:
    """Return the files of the sitemapd modules loaded now, under the package's folder: a
    build's code, whose status tells an upgrade (or an edit) that keeps the version."""
    files = [
        module.__file__
        for name, module in list(sys.modules.items())
        if name.partition(".")[0] == "sitemapd" and getattr(module, "__file__", None)
    ]
    return sorted(Path(file).relative_to(_PACKAGE).as_posix() for file in files if file)


def _state(
    cfg: Config, published: list[str], code: list[str], digests: list[str], read: list[str]
) -> str:
    """Return the text of the note of `cfg` with files `published`, built by the modules
    `code` from inputs `read` (the lists' bytes of `digests`), as the output and state
    are now; raises OSError when the state folder cannot be listed."""
    out, state = cfg.site.output_dir, cfg.site.state_dir
    paths = [_PACKAGE / name for name in code]
    paths += [out, (out / manifest_name(cfg.sitemap.index)).parent]
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
        " ".join(["digests", *digests]),
        *read,
        *_lines(paths),
    ]
    return "\n".join(lines) + "\n"


def _lists(cfg: Config) -> list[Path]:
    """Return the paths of the URL lists of `cfg`."""
    return [source.path for source in cfg.content_sources if isinstance(source, UrlListSource)]


def _digest_as(path: Path, line: str, head: tuple[str, list[str]] | None = None) -> str:
    """Return the digests of the pieces of `path`, joined by commas, when its status is
    still that of `line` (the bytes the build read), or "-". `head`: the status of `path`
    and the digests of pieces that start it, not read again when that status is `line`
    (the file was not written since: its ctime would have moved)."""
    handle = open_regular(path)
    if handle is None:  # refused by the build's scan too
        return "-"
    with handle:
        if _lines([path])[0] != line:
            return "-"
        known = head[1] if head is not None and head[0] == line else []
        digest = ",".join([*known, *piece_digests(handle, len(known))])
    # Replaced or written while it was hashed: the bytes read are not known.
    return digest if _lines([path])[0] == line else "-"


def _same_bytes(path: Path, line: str, digest: str, head: list[str] | None = None) -> bool:
    """True when `path`, whose status is `line` now, holds the bytes of `digest` (see
    `_digest_as`). A changed list is told at its first changed piece: hashing it to its
    end would only delay the build that reads it. `head` gets the digests of the pieces
    found the same before it."""
    if digest == "-":
        return False
    expected = iter(digest.split(","))
    handle = open_regular(path)
    if handle is None:
        return False
    with handle:
        if _lines([path])[0] != line:
            return False
        for found in piece_digests(handle):
            if found != next(expected, None):
                return False
            if head is not None:
                head.append(found)
    # Not one piece more, and not written while it was hashed.
    return next(expected, None) is None and _lines([path])[0] == line


def _lines(paths: Iterable[Path]) -> list[str]:
    """Return a line naming each of `paths` and its status."""
    return [f"{str(path)!r} {_key(path)}" for path in paths]


def _key(path: Path) -> str:
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
