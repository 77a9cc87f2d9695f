"""The `sitemapd` command group: its options, and every command added to it.

A command imports the modules only it uses in its body: each start-up pays for its own
command alone (a deploy hook's `build` of URL lists loads no HTML parser, no HTTP client).
"""

from __future__ import annotations

import click

from sitemapd import __version__
from sitemapd.cli import process
from sitemapd.cli.inspecting import check_config, drill_, explain_, robots_, status_, verify_
from sitemapd.cli.publishing import build, forget_, import_, reread_, run
from sitemapd.cli.starting import changelog_sql, init_

_LEVELS = click.Choice(["debug", "info", "warning", "error"], case_sensitive=False)


def _set_log_level(ctx: click.Context, param: click.Parameter, level: str | None) -> None:
    if level is not None:
        process.configure(level)


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
    process.configure(log_level)


for command in (
    build,
    run,
    import_,
    forget_,
    reread_,
    status_,
    verify_,
    robots_,
    explain_,
    drill_,
    check_config,
    init_,
    changelog_sql,
):
    main.add_command(command)
