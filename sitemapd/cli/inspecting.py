"""The commands that only read: status, verify, robots, explain, drill, check-config."""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
import sys
from pathlib import Path

import click

from sitemapd import config
from sitemapd.cli.common import config_option, errors_exit
from sitemapd.core.words import count
from sitemapd.errors import SitemapdError

# Each command imports what it runs in its body: a command starts without the modules of
# the others (the ownership check's lxml, the status report, the engine, json).


@click.command(name="status")
@config_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@errors_exit
def status_(config_path: Path, as_json: bool) -> None:
    """Show URLs by state, excluded and invalid items, shards and the last publish."""
    import json

    from sitemapd.ledger.readonly import open_readonly
    from sitemapd.publish.names import OutputNames
    from sitemapd.status import report as status

    cfg = config.load(config_path)
    if not cfg.ledger_path.exists():
        raise SitemapdError(f"no ledger at {cfg.ledger_path} yet: run 'sitemapd build' first")
    try:
        with contextlib.closing(open_readonly(cfg.ledger_path)) as conn:
            report = status.collect(cfg, conn, OutputNames(cfg))
    except sqlite3.Error as exc:
        raise SitemapdError(f"{cfg.ledger_path}: cannot read the ledger ({exc})") from exc
    click.echo(json.dumps(report, indent=2) if as_json else status.render_text(report))


@click.command(name="verify")
@config_option
@click.option(
    "--partition",
    "partitions",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The configuration of another partition of the site (repeat for each): checks "
    "them all, and that no URL is in two.",
)
@errors_exit
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


@click.command(name="robots")
@config_option
@errors_exit
def robots_(config_path: Path) -> None:
    """Print the robots.txt `Sitemap:` lines of the site (one per partition)."""
    from sitemapd.publish.names import partition_index_urls

    cfg = config.load(config_path)
    for url in partition_index_urls(cfg):
        click.echo(f"Sitemap: {url}")


@click.command(name="explain")
@config_option
@click.argument("target")
@errors_exit
def explain_(config_path: Path, target: str) -> None:
    """Show what TARGET's fingerprint is taken over and its lastmod history.

    TARGET is a page's URL, its path on the site (/news/a.html) or its file under a
    directory source's root.
    """
    from sitemapd.cli.explain import explain

    click.echo(explain(config.load(config_path), target), nl=False)


@click.command(name="drill")
@config_option
@click.option("--pages", default=200, show_default=True, help="Pages drilled per source.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@errors_exit
def drill_(config_path: Path, pages: int, as_json: bool) -> None:
    """Change pages' surroundings as a CMS does and their content as an editor does, in
    memory, and report how often lastmod would move for nothing or miss an edit.

    Exits 1 when a source misses the bars (5% false moves, 98% of edits caught).
    """
    import json

    from sitemapd.drill import passed, render, run_drill

    reports = run_drill(config.load(config_path), max(pages, 1))
    if as_json:
        click.echo(json.dumps([dataclasses.asdict(r) for r in reports], indent=2))
    else:
        click.echo(render(reports), nl=False)
    if not passed(reports):
        sys.exit(1)


@click.command(name="check-config")
@config_option
@errors_exit
def check_config(config_path: Path) -> None:
    """Validate the configuration file and that no file in output_dir under a name
    sitemapd publishes was written by another; exit 2 naming the first bad key or file,
    1 naming each change log whose database driver is not installed."""
    from sitemapd.publish import ownership

    cfg = config.load(config_path)
    missing = _missing_drivers(cfg)
    for message in missing:
        click.echo(f"sitemapd: error: {message}", err=True)
    if missing:
        sys.exit(1)
    foreign = ownership.foreign_files(cfg, ownership.ledger_records(cfg))
    ownership.refuse(cfg, foreign)
    for found in foreign:
        click.echo(f"site.take_over: {found.path} will be replaced (a copy kept)")
    click.echo(f"ok: {cfg.path}: {len(cfg.sources)} sources, index {cfg.sitemap.index}")


def _missing_drivers(cfg: config.Config) -> list[str]:
    """Return, for each change log of `cfg` whose driver cannot be imported, the message
    a build would fail with."""
    logs = [s.spec for s in cfg.sources if isinstance(s, config.ChangelogSource)]
    if not logs:
        return []
    from sitemapd.changelog import missing_driver

    return [message for spec in logs if (message := missing_driver(spec)) is not None]
