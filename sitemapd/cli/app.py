"""The `sitemapd` command group: its options, and every command added to it.

A command imports the modules only it uses in its body: each start-up pays for its own
command alone (a deploy hook's `build` of URL lists loads no HTML parser, no HTTP client).
The module of a command is imported only when the command is asked for: a `status` does
not load the engine that the writing commands import.
"""

from __future__ import annotations

import importlib

import click

from sitemapd import __version__
from sitemapd.cli import process

_LEVELS = click.Choice(["debug", "info", "warning", "error"], case_sensitive=False)
# Each command: the module of sitemapd.cli that defines it, and its name there.
_COMMANDS = {
    "build": ("publishing", "build"),
    "run": ("publishing", "run"),
    "import": ("publishing", "import_"),
    "forget": ("publishing", "forget_"),
    "reread": ("publishing", "reread_"),
    "status": ("inspecting", "status_"),
    "verify": ("inspecting", "verify_"),
    "robots": ("inspecting", "robots_"),
    "explain": ("inspecting", "explain_"),
    "drill": ("inspecting", "drill_"),
    "check-config": ("inspecting", "check_config"),
    "init": ("starting", "init_"),
    "changelog-sql": ("starting", "changelog_sql"),
}


def _set_log_level(ctx: click.Context, param: click.Parameter, level: str | None) -> None:
    if level is not None:
        process.configure(level)


class _Commands(click.Group):
    """The command group, whose commands load when asked for; each also takes
    --log-level after its name."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = self.commands.get(cmd_name)
        if found is not None or cmd_name not in _COMMANDS:
            return found
        module, name = _COMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(f"sitemapd.cli.{module}"), name)
        command.params.append(
            click.Option(
                ["--log-level"],
                type=_LEVELS,
                expose_value=False,
                callback=_set_log_level,
                help="Log level (also accepted before the command).",
            )
        )
        self.commands[cmd_name] = command
        return command


@click.group(cls=_Commands)
@click.version_option(__version__, prog_name="sitemapd")
@click.option("--log-level", default="info", show_default=True, type=_LEVELS)
def main(log_level: str) -> None:
    """Keep a site's XML sitemaps true to its content."""
    process.configure(log_level)
    process.collect_from_here()
    process.exit_without_collecting()
