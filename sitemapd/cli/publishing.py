"""The commands that write: build, run, import, forget, reread."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from sitemapd import config
from sitemapd.cli import process, unchanged
from sitemapd.cli.common import (
    F,
    config_option,
    errors_exit,
    locked_engine,
    opened_engine,
    progress_bar,
)
from sitemapd.core.words import count
from sitemapd.errors import LockError
from sitemapd.ledger.lock import StateLock

if TYPE_CHECKING:
    from sitemapd.engine.engine import Engine

# The engine, the publisher and what they use load in the bodies of the commands that run
# them: a build that finds nothing changed (unchanged.py) ends without them.

log = logging.getLogger("sitemapd.build")

dry_run_options = (
    click.option(
        "--dry-run",
        is_flag=True,
        help="Scan and print what would change; write, record and send nothing (no lock).",
    ),
    click.option("--json", "as_json", is_flag=True, help="With --dry-run: print JSON."),
)


def _with_dry_run(command: F) -> F:
    """Add --dry-run and --json to a command."""
    for option in reversed(dry_run_options):
        command = option(command)
    return command


def _print_dry_run(cfg: config.Config, as_json: bool, confirm_removal: bool = False) -> None:
    """Print what a build would do; exit 1 when a source failed or a removal is held, 2
    (ConfigError) when a file in output_dir under sitemapd's names is not its own."""
    import json

    from sitemapd.cli import dryrun
    from sitemapd.publish import ownership

    ownership.refuse(cfg, ownership.foreign_files(cfg, ownership.ledger_records(cfg)))

    report = dryrun.dry_run(cfg, confirm_removal)
    click.echo(json.dumps(report.as_json(), indent=2) if as_json else report.render_text())
    if report.failed or report.held:
        sys.exit(1)


@click.command()
@config_option
@click.option(
    "--confirm-removal",
    is_flag=True,
    help="Publish removals the mass-removal guard holds ([site] max_removal).",
)
@_with_dry_run
@errors_exit
def build(config_path: Path, confirm_removal: bool, dry_run: bool, as_json: bool) -> None:
    """Scan every source once, update the ledger and publish what changed."""
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
    and it ended quiet (see unchanged.py); raises LockError as a build does."""
    started = time.perf_counter()
    with StateLock(cfg.site.state_dir):
        if not unchanged.as_noted(cfg):
            return False
    log.debug("nothing changed since the last build, which ended quiet: nothing to do")
    click.echo(_summary(0, 0, 0, 0, 0, 0, 0, time.perf_counter() - started))
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
    click.echo(
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
    from sitemapd.status import problems

    with StateLock(cfg.site.state_dir), unchanged.hearing() as heard:
        read = unchanged.inputs(cfg)
        with opened_engine(cfg) as engine, progress_bar(cfg) as bar:
            ownership.claim(cfg, engine.ledger.published)
            first(engine)
            target = cfg.publish.s3
            # A running daemon renews its lease several times per TTL: two TTLs tell.
            engine.target.acquire(wait=2 * target.lease_ttl + 1 if target else 0)
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
        click.echo(f"sitemapd: warning: {line}", err=True)
    changes, report = result.changes, result.report
    click.echo(
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
        click.echo(
            f"{count(unmatched, 'imported URL')} matched no page: not published "
            "('seeded' in status; sitemapd forget URL drops one)"
        )
    if undelivered:
        click.echo(
            f"{count(undelivered, 'notification')} not delivered yet (kept for the next run)"
        )
    # Published, but a deploy hook should hear that a source was not read as it should.
    for name, reason in {**result.failed, **result.held}.items():
        click.echo(f"sitemapd: error: {name}: {reason}", err=True)
    for name, files in result.unreadable.items():
        for path, why in files.items():
            click.echo(f"sitemapd: error: {name}: {path}: unreadable for now ({why})", err=True)
    if result.failed or result.held or result.unreadable:
        sys.exit(1)


@click.command()
@config_option
@_with_dry_run
@errors_exit
def run(config_path: Path, dry_run: bool, as_json: bool) -> None:
    """Publish, then follow every change to the sources until SIGTERM (SIGHUP reloads).

    With --dry-run: one pass that prints what the start would change, as `build --dry-run`.
    """
    cfg = config.load(config_path)
    if dry_run:
        _print_dry_run(cfg, as_json)
        return
    # The daemon's modules (watchdog, the scheduler, the sidecar) load for `run` only: a
    # build from a deploy hook starts faster without them.
    from sitemapd.daemon.daemon import Daemon
    from sitemapd.publish import ownership

    process.raise_open_files_limit()
    with StateLock(cfg.site.state_dir) as lock:
        unchanged.forget(cfg.site.state_dir)
        ownership.claim(cfg, ownership.ledger_records(cfg))
        daemon = Daemon(cfg, lock)
        daemon.install_signal_handlers()
        try:
            daemon.start()
            daemon.serve_forever()
        finally:
            daemon.stop()


@click.command(name="import")
@config_option
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@errors_exit
def import_(config_path: Path, files: tuple[Path, ...]) -> None:
    """Seed lastmods from existing sitemaps or indexes (.xml or .xml.gz)."""
    from sitemapd.cli.importer import ImportTally, read_sitemaps
    from sitemapd.core import w3c

    cfg = config.load(config_path)
    tally, now = ImportTally(), w3c.now()
    with locked_engine(cfg) as engine:
        seeded = engine.ledger.seed(read_sitemaps(list(files), engine.policy, tally, now), now)
    click.echo(
        f"read {count(tally.urls, 'URL')} from {count(tally.files, 'file')} "
        f"({tally.skipped} skipped); "
        f"seeded {seeded}"
    )
    for line in tally.unused(cfg.site.origin.root):
        click.echo(line)


@click.command(name="forget")
@config_option
@click.argument("url")
@errors_exit
def forget_(config_path: Path, url: str) -> None:
    """Forget everything the ledger knows of URL, then build: it is read as new.

    Its lastmod, publication date and history start again from what its source says now.
    """
    from sitemapd.cli import correct

    _build(
        config.load(config_path),
        lambda engine: correct.forget(engine.ledger, engine.policy.site_url(url)),
    )


@click.command(name="reread")
@config_option
@click.argument("url")
@errors_exit
def reread_(config_path: Path, url: str) -> None:
    """Read URL's file again whatever its size and mtime, then build.

    Its lastmod moves only if its content changed; a publication date the page now
    states replaces a provisional one.
    """
    from sitemapd.cli import correct

    _build(
        config.load(config_path),
        lambda engine: correct.reread(engine.ledger, engine.policy.site_url(url)),
    )
