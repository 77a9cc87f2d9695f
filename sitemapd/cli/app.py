"""The `sitemapd` command line: build, run, import, forget, reread, status, verify, explain,
robots, check-config, changelog-sql."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import sqlite3
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from sitemapd import __version__, config
from sitemapd.cli import correct, fdlimit, logs
from sitemapd.core import w3c
from sitemapd.core.words import count
from sitemapd.engine import progress
from sitemapd.engine.engine import Engine
from sitemapd.errors import ConfigError, LockError, SitemapdError
from sitemapd.ledger import removals
from sitemapd.ledger.lock import StateLock
from sitemapd.notify import outbox
from sitemapd.publish import ownership
from sitemapd.publish.publisher import OutputNames, partition_index_urls
from sitemapd.status import report as status

# A command imports the modules only it uses in its body: each start-up pays for its own
# command alone (a deploy hook's `build` of URL lists loads no HTML parser, no HTTP client).
F = TypeVar("F", bound=Callable[..., Any])

config_option = click.option(
    "-c",
    "--config",
    "config_path",
    envvar="SITEMAPD_CONFIG",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Configuration file (TOML). Also read from $SITEMAPD_CONFIG.",
)


def _errors_exit(command: F) -> F:
    """Turn sitemapd errors into one line on stderr: exit 2 for config, 1 otherwise."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except ConfigError as exc:
            click.echo(f"sitemapd: configuration error: {exc}", err=True)
            sys.exit(2)
        except SitemapdError as exc:
            click.echo(f"sitemapd: error: {exc}", err=True)
            sys.exit(1)
        except OSError as exc:
            # A file system that is full or read-only: the file and why, not a traceback.
            where = f"{exc.filename}: " if exc.filename else ""
            click.echo(f"sitemapd: error: {where}{exc.strerror or exc}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


@contextlib.contextmanager
def _locked_engine(cfg: config.Config) -> Iterator[Engine]:
    """Yield the site's Engine while holding the state-directory lock."""
    with StateLock(cfg.site.state_dir):
        # No sidecar or metrics endpoint reads the ledger of a command meanwhile.
        engine = Engine(cfg, alone=True)
        try:
            yield engine
        finally:
            engine.close()


_LEVELS = click.Choice(["debug", "info", "warning", "error"], case_sensitive=False)


def _set_log_level(ctx: click.Context, param: click.Parameter, level: str | None) -> None:
    if level is not None:
        logs.configure(level)


class _Commands(click.Group):
    """The command group; each command also takes --log-level after its name."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        cmd.params.append(
            click.Option(
                ["--log-level"],
                type=_LEVELS,
                expose_value=False,
                callback=_set_log_level,
                help="Log level (also accepted before the command).",
            )
        )
        super().add_command(cmd, name)


@click.group(cls=_Commands)
@click.version_option(__version__, prog_name="sitemapd")
@click.option("--log-level", default="info", show_default=True, type=_LEVELS)
def main(log_level: str) -> None:
    """Keep a site's XML sitemaps true to its content."""
    logs.configure(log_level)


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
    from sitemapd.cli import dryrun

    ownership.refuse(cfg, ownership.foreign_files(cfg, ownership.ledger_records(cfg)))

    report = dryrun.dry_run(cfg, confirm_removal)
    click.echo(json.dumps(report.as_json(), indent=2) if as_json else report.render_text())
    if report.failed or report.held:
        sys.exit(1)


@main.command()
@config_option
@click.option(
    "--confirm-removal",
    is_flag=True,
    help="Publish removals the mass-removal guard holds ([site] max_removal).",
)
@_with_dry_run
@_errors_exit
def build(config_path: Path, confirm_removal: bool, dry_run: bool, as_json: bool) -> None:
    """Scan every source once, update the ledger and publish what changed."""
    cfg = config.load(config_path)
    if dry_run:
        _print_dry_run(cfg, as_json, confirm_removal)
        return
    try:
        _build(cfg, lambda engine: None, confirm_removal)
    except LockError:
        if not confirm_removal:
            raise
        _confirm_to_daemon(cfg)


def _confirm_to_daemon(cfg: config.Config) -> None:
    """Leave the confirmation for the process holding the state directory: a daemon
    looks for it every few seconds and publishes the removals it holds."""
    removals.request_confirmation(cfg.site.state_dir)
    pid = StateLock(cfg.site.state_dir).holder()
    click.echo(
        f"sitemapd pid {pid or 'unknown'} holds the state directory: left the confirmation "
        "for it; a running daemon publishes the held removals within seconds"
    )


def _build(cfg: config.Config, first: Callable[[Engine], None], confirm: bool = False) -> None:
    """Under the state lock, run `first` on the engine, then build, notify and print the
    summary; exit 1 when a source failed or a removal is held."""
    with _locked_engine(cfg) as engine, _progress_bar(cfg) as bar:
        ownership.claim(cfg, engine.ledger.published)
        first(engine)
        target = cfg.publish.s3
        # A running daemon renews its lease several times per TTL: two TTLs tell.
        engine.acquire(wait=2 * target.lease_ttl + 1 if target else 0)
        result = engine.build(confirm_removal=confirm, progress=bar)
        # Notifications owed but not delivered stay owed: the next build or run sends them.
        undelivered = outbox.deliver_now(engine.ledger, cfg)
        for line in status.canonical_elsewhere(engine.ledger.conn, cfg.site.origin.root):
            click.echo(f"sitemapd: warning: {line}", err=True)
        unmatched = status.seeded_count(engine.ledger.conn)
    changes, report = result.changes, result.report
    click.echo(
        f"{changes.new} new, {changes.updated} updated, {changes.gone} gone, "
        f"{changes.rejected} invalid; wrote {count(len(report.written), 'file')} "
        f"({report.bytes_written} bytes), removed {len(report.removed)} in {result.seconds:.2f}s"
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


@main.command()
@config_option
@_with_dry_run
@_errors_exit
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

    fdlimit.raise_open_files_limit()
    with StateLock(cfg.site.state_dir) as lock:
        ownership.claim(cfg, ownership.ledger_records(cfg))
        daemon = Daemon(cfg, lock)
        daemon.install_signal_handlers()
        try:
            daemon.start()
            daemon.serve_forever()
        finally:
            daemon.stop()


@main.command(name="import")
@config_option
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@_errors_exit
def import_(config_path: Path, files: tuple[Path, ...]) -> None:
    """Seed lastmods from existing sitemaps or indexes (.xml or .xml.gz)."""
    from sitemapd.cli.importer import ImportTally, read_sitemaps

    cfg = config.load(config_path)
    tally, now = ImportTally(), w3c.now()
    with _locked_engine(cfg) as engine:
        seeded = engine.ledger.seed(read_sitemaps(list(files), engine.policy, tally, now), now)
    click.echo(
        f"read {count(tally.urls, 'URL')} from {count(tally.files, 'file')} "
        f"({tally.skipped} skipped); "
        f"seeded {seeded}"
    )
    for line in tally.unused(cfg.site.origin.root):
        click.echo(line)


@contextlib.contextmanager
def _progress_bar(cfg: config.Config) -> Iterator[progress.Progress | None]:
    """Yield a Progress drawing a bar with rate and ETA on stderr when it is a terminal,
    else None (long scans then log a line every 10 s)."""
    if not sys.stderr.isatty():
        yield None
        return
    total = max(progress.estimate(cfg), 1)
    with click.progressbar(length=total, label="scanning", file=sys.stderr, show_pos=True) as bar:

        def draw(pages: int, rate: float) -> None:
            bar.label = f"scanning ({rate:.0f} pages/s)"
            bar.update(pages - bar.pos)

        yield progress.Progress(draw, every=0.2)


@main.command(name="forget")
@config_option
@click.argument("url")
@_errors_exit
def forget_(config_path: Path, url: str) -> None:
    """Forget everything the ledger knows of URL, then build: it is read as new.

    Its lastmod, publication date and history start again from what its source says now.
    """
    _build(
        config.load(config_path),
        lambda engine: correct.forget(engine.ledger, engine.policy.site_url(url)),
    )


@main.command(name="reread")
@config_option
@click.argument("url")
@_errors_exit
def reread_(config_path: Path, url: str) -> None:
    """Read URL's file again whatever its size and mtime, then build.

    Its lastmod moves only if its content changed; a publication date the page now
    states replaces a provisional one.
    """
    _build(
        config.load(config_path),
        lambda engine: correct.reread(engine.ledger, engine.policy.site_url(url)),
    )


@main.command(name="status")
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@_errors_exit
def status_(config_path: Path, as_json: bool) -> None:
    """Show URLs by state, excluded and invalid items, shards and the last publish."""
    cfg = config.load(config_path)
    if not cfg.ledger_path.exists():
        raise SitemapdError(f"no ledger at {cfg.ledger_path} yet: run 'sitemapd build' first")
    conn = sqlite3.connect(f"{cfg.ledger_path.as_uri()}?mode=ro", uri=True)
    try:
        report = status.collect(cfg, conn, OutputNames(cfg))
    except sqlite3.Error as exc:
        raise SitemapdError(f"{cfg.ledger_path}: cannot read the ledger ({exc})") from exc
    finally:
        conn.close()
    click.echo(json.dumps(report, indent=2) if as_json else status.render_text(report))


@main.command(name="verify")
@config_option
@click.option(
    "--partition",
    "partitions",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The configuration of another partition of the site (repeat for each): checks "
    "them all, and that no URL is in two.",
)
@_errors_exit
def verify_(config_path: Path, partitions: tuple[Path, ...]) -> None:
    """Re-read the published files and check them; exit 1 listing any problem."""
    cfg = config.load(config_path)
    from sitemapd.cli.verify import NOTE, WARNING, verify_all

    found = verify_all(cfg, [config.load(path) for path in partitions])
    for line in found:
        click.echo(line)
    problems = [line for line in found if not line.startswith((NOTE, WARNING))]
    if problems:
        click.echo(count(len(problems), "problem"), err=True)
        sys.exit(1)
    where = cfg.publish.s3.url if cfg.publish.s3 else f"{cfg.site.output_dir}/"
    click.echo(f"ok: {where}{cfg.sitemap.index}")


@main.command(name="robots")
@config_option
@_errors_exit
def robots_(config_path: Path) -> None:
    """Print the robots.txt `Sitemap:` lines of the site (one per partition)."""
    cfg = config.load(config_path)
    for url in partition_index_urls(cfg):
        click.echo(f"Sitemap: {url}")


@main.command(name="explain")
@config_option
@click.argument("target")
@_errors_exit
def explain_(config_path: Path, target: str) -> None:
    """Show what TARGET's fingerprint is taken over and its lastmod history.

    TARGET is a page's URL, its path on the site (/news/a.html) or its file under a
    directory source's root.
    """
    from sitemapd.cli.explain import explain

    click.echo(explain(config.load(config_path), target), nl=False)


@main.command(name="drill")
@config_option
@click.option("--pages", default=200, show_default=True, help="Pages drilled per source.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@_errors_exit
def drill_(config_path: Path, pages: int, as_json: bool) -> None:
    """Change pages' surroundings as a CMS does and their content as an editor does, in
    memory, and report how often lastmod would move for nothing or miss an edit.

    Exits 1 when a source misses the bars (5% false moves, 98% of edits caught).
    """
    from sitemapd.drill import passed, render, run_drill

    reports = run_drill(config.load(config_path), max(pages, 1))
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(r) for r in reports], indent=2))
    else:
        click.echo(render(reports), nl=False)
    if not passed(reports):
        sys.exit(1)


@main.command(name="check-config")
@config_option
@_errors_exit
def check_config(config_path: Path) -> None:
    """Validate the configuration file and that no file in output_dir under a name
    sitemapd publishes was written by another; exit 2 naming the first bad key or file."""
    cfg = config.load(config_path)
    foreign = ownership.foreign_files(cfg, ownership.ledger_records(cfg))
    ownership.refuse(cfg, foreign)
    for found in foreign:
        click.echo(f"site.take_over: {found.path} will be replaced (a copy kept)")
    click.echo(f"ok: {cfg.path}: {len(cfg.sources)} sources, index {cfg.sitemap.index}")


@main.command(name="init")
@click.option("--base-url", help="The site's URL, e.g. https://example.com/.")
@click.option(
    "--content",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder of the built site (default: the output folder of the generator found).",
)
@click.option(
    "--url-list",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A file of URLs, one a line, instead of a content folder.",
)
@click.option(
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the sitemaps go (default: the content folder, served at the site root).",
)
@click.option(
    "--state",
    type=click.Path(file_okay=False, path_type=Path),
    help="Where the ledger lives (default: sitemapd-state beside the config file).",
)
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Folder searched for a site generator's files (hugo.toml, mkdocs.yml, ...).",
)
@click.option(
    "-c",
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("sitemapd.toml"),
    show_default=True,
    help="The configuration file to write.",
)
@click.option("--force", is_flag=True, help="Replace an existing configuration file.")
@_errors_exit
def init_(
    base_url: str | None,
    content: Path | None,
    url_list: Path | None,
    output: Path | None,
    state: Path | None,
    project: Path,
    config_path: Path,
    force: bool,
) -> None:
    """Write a small working configuration for one site; asks for what the options do
    not say when run on a terminal."""
    from sitemapd.cli import init

    if config_path.exists() and not force:
        raise SitemapdError(f"{config_path} exists: give another -c FILE, or --force")
    interactive = sys.stdin.isatty()
    found = init.detect(project)
    if found is not None:
        where = f" (its site: {found.output})" if found.output else " (not built yet)"
        click.echo(f"found a {found.generator.name} project in {project}{where}")
    if content is None and url_list is None:
        guess = (found.output or project / found.generator.outputs[0]) if found else None
        if interactive:
            content = Path(click.prompt("Folder of the built site", default=str(guess or ".")))
        elif guess is None:
            raise SitemapdError("give --content FOLDER (the built site) or --url-list FILE")
        else:
            content = guess
    if base_url is None:
        if not interactive:
            raise SitemapdError("give --base-url URL (the site's address)")
        base_url = str(click.prompt("The site's URL (https://example.com/)"))
    base = config_path.resolve().parent
    output = output or content or base / "sitemaps"
    state = state or base / "sitemapd-state"
    generator = found.generator if found else None
    answers = init.Answers(
        base_url=base_url,
        output_dir=init.relative(output, base),
        state_dir=init.relative(state, base),
        index=init.index_name(output, generator),
        content=None if content is None else init.relative(content, base),
        url_list=None if url_list is None else init.relative(url_list, base),
        generator=generator.name if generator else None,
    )
    text = init.render(answers)
    cfg = config.parse(tomllib.loads(text), config_path)
    if content is not None and state.resolve().is_relative_to(content.resolve()):
        raise SitemapdError(
            f"--state {state} is inside the site's folder: the ledger is not public"
        )
    config_path.write_text(text)
    click.echo(f"wrote {config_path}: sitemaps into {output}, index {cfg.sitemap.index}")
    mine = f"-c {config_path}"
    for sitemap in init.generator_sitemaps(output, generator):
        click.echo(
            f"to keep the lastmods of {sitemap} (if they are true): sitemapd import {mine} "
            f"{sitemap}"
        )
    if (output / "robots.txt").is_file():
        click.echo(
            f"{output / 'robots.txt'}: to have sitemapd keep its Sitemap: line there (and "
            "leave out what it disallows), add robots_txt to [site]"
        )
    click.echo(f"next: sitemapd check-config {mine} && sitemapd build {mine}")


@main.command(name="changelog-sql")
@click.option("--postgres", "kind", flag_value="postgres", default=True, help="PostgreSQL.")
@click.option("--sqlite", "kind", flag_value="sqlite", help="SQLite.")
@click.option("--mysql", "kind", flag_value="mysql", help="MySQL or MariaDB.")
@click.option("--table", default="sitemap_changes", show_default=True, help="Change table.")
@click.option("--channel", default="sitemapd", show_default=True, help="NOTIFY channel.")
def changelog_sql(kind: str, table: str, channel: str) -> None:
    """Print the change table, index and trigger template a CMS installs for sitemapd."""
    from sitemapd.changelog.ddl import ddl

    click.echo(ddl(kind, table, channel), nl=False)
