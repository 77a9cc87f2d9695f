"""The commands that start a site: init (a first configuration) and changelog-sql."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import click

from sitemapd import config
from sitemapd.cli.common import errors_exit
from sitemapd.errors import SitemapdError


@click.command(name="init")
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
@errors_exit
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


@click.command(name="changelog-sql")
@click.option("--postgres", "kind", flag_value="postgres", default=True, help="PostgreSQL.")
@click.option("--sqlite", "kind", flag_value="sqlite", help="SQLite.")
@click.option("--mysql", "kind", flag_value="mysql", help="MySQL or MariaDB.")
@click.option("--table", default="sitemap_changes", show_default=True, help="Change table.")
@click.option("--channel", default="sitemapd", show_default=True, help="NOTIFY channel.")
def changelog_sql(kind: str, table: str, channel: str) -> None:
    """Print the change table, index and trigger template a CMS installs for sitemapd."""
    from sitemapd.changelog.ddl import ddl

    click.echo(ddl(kind, table, channel), nl=False)
