"""The commands that write: build, run, import, forget, reread."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sitemapd import config
from sitemapd.cli import process, unchanged
from sitemapd.cli.common import errors_exit, locked_engine, opened_engine, progress_bar
from sitemapd.core import logs
from sitemapd.core.words import count
from sitemapd.errors import LockError
from sitemapd.ledger.lock import StateLock

if TYPE_CHECKING:
    from sitemapd.engine.engine import Engine

# The engine, the publisher and what they use load in the bodies of the commands that run
# them: a build that finds nothing changed (unchanged.py) ends without them.

log = logs.Logger("sitemapd.build")


def _print_dry_run(cfg: config.Config, as_json: bool, confirm_removal: bool = False) -> None:
    """Print what a build would do; exit 1 when a source failed or a removal is held, 2
    (ConfigError) when a file in output_dir under sitemapd's names is not its own."""
    import json

    from sitemapd.cli import dryrun
    from sitemapd.publish import ownership

    ownership.refuse(cfg, ownership.foreign_files(cfg, ownership.ledger_records(cfg)))

    report = dryrun.dry_run(cfg, confirm_removal)
    print(json.dumps(report.as_json(), indent=2) if as_json else report.render_text())
    if report.failed or report.held:
        sys.exit(1)


@errors_exit
def build(config_path: Path, confirm_removal: bool, dry_run: bool, as_json: bool) -> None:
    """`sitemapd build`: see its help (app.py)."""
    cfg = config.load(config_path)
    if dry_run:
        _print_dry_run(cfg, as_json, confirm_removal)
        return
    if not confirm_removal and _unchanged(cfg):
        return
    try:
        _build(cfg, lambda engine: None, confirm_removal)
    except LockError:
        if not confirm_removal:
            raise
        _confirm_to_daemon(cfg)


def _unchanged(cfg: config.Config) -> bool:
    """True, having printed the build's summary, when nothing changed since the last build
    and it ended quiet (see unchanged.py); raises LockError and PublishError as a build
    does."""
    from sitemapd.publish.folderlock import FolderLock

    started = time.perf_counter()
    with StateLock(cfg.site.state_dir):
        if not unchanged.as_noted(cfg):
            return False
        # Nothing to write, but a folder another process publishes into is refused all
        # the same: a deploy hook hears of the second config.
        lock = FolderLock.taken(cfg)
        if lock is not None:
            lock.release()
    log.debug("nothing changed since the last build, which ended quiet: nothing to do")
    print(_summary(0, 0, 0, 0, 0, 0, 0, time.perf_counter() - started))
    return True


def _summary(
    new: int, updated: int, gone: int, invalid: int, files: int, size: int, removed: int, s: float
) -> str:
    """Return the line a build ends with."""
    return (
        f"{new} new, {updated} updated, {gone} gone, {invalid} invalid; wrote "
        f"{count(files, 'file')} ({size} bytes), removed {removed} in {s:.2f}s"
    )


def _deliver(engine: Engine, cfg: config.Config) -> int:
    """Send the notifications owed once; return how many failed. A site that notifies no
    one owes none: the outbox and its HTTP client are not loaded for it."""
    if cfg.indexnow is None and not (cfg.feed is not None and cfg.websub.hubs):
        return 0
    from sitemapd.notify import outbox

    return outbox.deliver_now(engine.ledger, cfg)


def _confirm_to_daemon(cfg: config.Config) -> None:
    """Leave the confirmation for the process holding the state directory: a daemon
    looks for it every few seconds and publishes the removals it holds."""
    from sitemapd.ledger import removals

    removals.request_confirmation(cfg.site.state_dir)
    pid = StateLock(cfg.site.state_dir).holder()
    print(
        f"sitemapd pid {pid or 'unknown'} holds the state directory: left the confirmation "
        "for it; a running daemon publishes the held removals within seconds"
    )


def _build(
    cfg: config.Config,
    first: Callable[[Engine], None],
    confirm: bool = False,
) -> None:
    """Under the state lock, run `first` on the engine, then build, notify and print the
    summary; exit 1 when a source failed or a removal is held."""
    from sitemapd.publish import ownership
    from sitemapd.publish.folderlock import FolderLock
    from sitemapd.status import problems

    with StateLock(cfg.site.state_dir):
        heard = unchanged.Heard()
        read = unchanged.inputs(cfg)
        # The folder's lock before the ledger opens, a bucket's lease before anything
        # changes: a refused build changes nothing.
        folder_lock = FolderLock.taken(cfg)
        with opened_engine(cfg, folder_lock) as engine, progress_bar(cfg) as bar:
            target = cfg.publish.s3
            # A running daemon renews its lease several times per TTL: two TTLs tell.
            engine.target.acquire(wait=2 * target.lease_ttl + 1 if target else 0)
            ownership.claim(cfg, engine.ledger.published_records().get)
            first(engine)
            result = engine.build(confirm_removal=confirm, progress=bar)
            # Notifications owed but not delivered stay owed: the next build or run sends them.
            undelivered = _deliver(engine, cfg)
            warnings = problems.canonical_elsewhere(engine.ledger.conn, cfg.site.origin.root)
            unmatched = problems.seeded_count(engine.ledger.conn)
            published = engine.ledger.published_names()
            chunks = unchanged.recorded(cfg, engine.ledger)
        said = heard.said or warnings or unmatched or undelivered or result.failed
        if not (said or result.held or result.unreadable):
            # Nothing to say: the next build finds nothing to do unless something changes.
            unchanged.note(cfg, published, read, chunks)
    for line in warnings:
        print(f"sitemapd: warning: {line}", file=sys.stderr)
    changes, report = result.changes, result.report
    print(
        _summary(
            changes.new,
            changes.updated,
            changes.gone,
            changes.rejected,
            len(report.written),
            report.bytes_written,
            len(report.removed),
            result.seconds,
        )
    )
    if unmatched:
        print(
            f"{count(unmatched, 'imported URL')} matched no page: not published "
            "('seeded' in status; sitemapd forget URL drops one)"
        )
    if undelivered:
        print(f"{count(undelivered, 'notification')} not delivered yet (kept for the next run)")
    # Published, but a deploy hook should hear that a source was not read as it should.
    for name, reason in {**result.failed, **result.held}.items():
        print(f"sitemapd: error: {name}: {reason}", file=sys.stderr)
    for name, files in result.unreadable.items():
        for path, why in files.items():
            print(f"sitemapd: error: {name}: {path}: unreadable for now ({why})", file=sys.stderr)
    if result.failed or result.held or result.unreadable:
        sys.exit(1)


@errors_exit
def run(config_path: Path, dry_run: bool, as_json: bool) -> None:
    """`sitemapd run`: see its help (app.py)."""
    cfg = config.load(config_path)
    if dry_run:
        _print_dry_run(cfg, as_json)
        return
    # The daemon's modules (watchdog, the scheduler, the sidecar) load for `run` only: a
    # build from a deploy hook starts faster without them.
    from sitemapd.daemon.daemon import Daemon
    from sitemapd.publish import ownership
    from sitemapd.publish.folderlock import FolderLock

    # The daemon loads `logging` with its libraries: set up now, their warnings (watchdog's)
    # show in sitemapd's format from the start.
    logs.settle()
    process.raise_open_files_limit()
    with StateLock(cfg.site.state_dir) as lock:
        folder_lock = FolderLock.taken(cfg)
        unchanged.forget(cfg.site.state_dir)
        ownership.claim(cfg, ownership.ledger_records(cfg))
        daemon = Daemon(cfg, lock, folder_lock)
        daemon.install_signal_handlers()
        try:
            daemon.start()
            daemon.serve_forever()
        finally:
            daemon.stop()


@errors_exit
def import_(config_path: Path, files: list[Path]) -> None:
    """`sitemapd import`: see its help (app.py)."""
    from sitemapd.cli.importer import ImportTally, read_sitemaps
    from sitemapd.core import w3c

    cfg = config.load(config_path)
    tally, now = ImportTally(), w3c.now()
    with locked_engine(cfg) as engine:
        seeded = engine.ledger.seed(read_sitemaps(files, engine.policy, tally, now), now)
    print(
        f"read {count(tally.urls, 'URL')} from {count(tally.files, 'file')} "
        f"({tally.skipped} skipped); "
        f"seeded {seeded}"
    )
    for line in tally.unused(cfg.site.origin.root):
        print(line)


@errors_exit
def forget_(config_path: Path, url: str) -> None:
    """`sitemapd forget`: see its help (app.py)."""
    from sitemapd.cli import correct

    _build(
        config.load(config_path),
        lambda engine: correct.forget(engine.ledger, engine.policy.site_url(url)),
    )


@errors_exit
def reread_(config_path: Path, url: str) -> None:
    """`sitemapd reread`: see its help (app.py)."""
    from sitemapd.cli import correct

    _build(
        config.load(config_path),
        lambda engine: correct.reread(engine.ledger, engine.policy.site_url(url)),
    )
