"""The `sitemapd` command line: every command with its options and arguments, and
`main`, which parses a command line and runs its command.

A command's module is imported only when the command runs: a `status` does not load the
engine nor the modules of the commands that write. Each module imports in the body of a
command what only that command uses (a deploy hook's `build` of URL lists loads no HTML
parser, no HTTP client).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sitemapd import __version__
from sitemapd.cli import arguments, process
from sitemapd.cli.arguments import Arg, Command, arg, count, dir_path, file_path

CONFIG = arg(
    "-c",
    "--config",
    dest="config_path",
    metavar="FILE",
    type=file_path,
    env="SITEMAPD_CONFIG",
    required=True,
    help="Configuration file (TOML). Also read from $SITEMAPD_CONFIG.",
)
JSON = arg("--json", dest="as_json", action="store_true", help="Print the report as JSON.")
DRY_RUN = (
    arg(
        "--dry-run",
        action="store_true",
        help="Scan and print what would change; write, record and send nothing (no lock).",
    ),
    arg("--json", dest="as_json", action="store_true", help="With --dry-run: print JSON."),
)


def _kind(name: str, help: str, **default: Any) -> Arg:
    """Return the flag of changelog-sql that picks the database `name`."""
    return arg(f"--{name}", dest="kind", action="store_const", const=name, help=help, **default)


COMMANDS = {
    command.name: command
    for command in (
        Command(
            "build",
            "publishing:build",
            "Scan every source once, update the ledger and publish what changed.",
            (
                CONFIG,
                arg(
                    "--confirm-removal",
                    action="store_true",
                    help="Publish removals the mass-removal guard holds ([site] max_removal).",
                ),
                *DRY_RUN,
            ),
        ),
        Command(
            "run",
            "publishing:run",
            "Publish, then follow every change to the sources until SIGTERM (SIGHUP reloads).",
            (CONFIG, *DRY_RUN),
            "With --dry-run: one pass that prints what the start would change, as `build "
            "--dry-run`.",
        ),
        Command(
            "import",
            "publishing:import_",
            "Seed lastmods from existing sitemaps or indexes (.xml or .xml.gz).",
            (CONFIG, arg("files", nargs="+", type=file_path, metavar="FILE")),
        ),
        Command(
            "forget",
            "publishing:forget_",
            "Forget everything the ledger knows of URL, then build: it is read as new.",
            (CONFIG, arg("url", metavar="URL")),
            "Its lastmod, publication date and history start again from what its source says now.",
        ),
        Command(
            "reread",
            "publishing:reread_",
            "Read URL's file again whatever its size and mtime, then build.",
            (CONFIG, arg("url", metavar="URL")),
            "Its lastmod moves only if its content changed; a publication date the page "
            "now states replaces a provisional one.",
        ),
        Command(
            "status",
            "inspecting:status_",
            "Show URLs by state, excluded and invalid items, shards and the last publish.",
            (CONFIG, JSON),
        ),
        Command(
            "verify",
            "inspecting:verify_",
            "Re-read the published files and check them; exit 1 listing any problem.",
            (
                CONFIG,
                arg(
                    "--partition",
                    dest="partitions",
                    action="append",
                    default=[],
                    type=file_path,
                    metavar="FILE",
                    help="The configuration of another partition of the site (repeat for "
                    "each): checks them all, and that no URL is in two.",
                ),
            ),
        ),
        Command(
            "robots",
            "inspecting:robots_",
            "Print the robots.txt `Sitemap:` lines of the site (one per partition).",
            (CONFIG,),
        ),
        Command(
            "explain",
            "inspecting:explain_",
            "Show what TARGET's fingerprint is taken over and its lastmod history.",
            (CONFIG, arg("target", metavar="TARGET")),
            "TARGET is a page's URL, its path on the site (/news/a.html) or its file under "
            "a directory source's root.",
        ),
        Command(
            "drill",
            "inspecting:drill_",
            "Change pages' surroundings as a CMS does and their content as an editor does, "
            "in memory, and report how often lastmod would move for nothing or miss an "
            "edit.",
            (
                CONFIG,
                arg(
                    "--pages",
                    type=count,
                    default=200,
                    metavar="N",
                    help="Pages drilled per source (default: 200).",
                ),
                JSON,
            ),
            "Exits 1 when a source misses the bars (5% false moves, 98% of edits caught).",
        ),
        Command(
            "check-config",
            "inspecting:check_config",
            "Validate the configuration file and that no file in output_dir under a name "
            "sitemapd publishes was written by another.",
            (CONFIG,),
            "Exits 2 naming the first bad key or file, 1 naming each change log whose "
            "database driver is not installed.",
        ),
        Command(
            "init",
            "starting:init_",
            "Write a small working configuration for one site; asks for what the options "
            "do not say when run on a terminal.",
            (
                arg("--base-url", metavar="URL", help="The site's URL, e.g. https://example.com/."),
                arg(
                    "--content",
                    type=dir_path,
                    metavar="DIR",
                    help="Folder of the built site (default: the output folder of the "
                    "generator found).",
                ),
                arg(
                    "--url-list",
                    type=file_path,
                    metavar="FILE",
                    help="A file of URLs, one a line, instead of a content folder.",
                ),
                arg(
                    "--output",
                    type=dir_path,
                    metavar="DIR",
                    help="Where the sitemaps go (default: the content folder, served at the "
                    "site root).",
                ),
                arg(
                    "--state",
                    type=dir_path,
                    metavar="DIR",
                    help="Where the ledger lives (default: sitemapd-state beside the config file).",
                ),
                arg(
                    "--project",
                    type=dir_path,
                    default=Path("."),
                    metavar="DIR",
                    help="Folder searched for a site generator's files (hugo.toml, "
                    "mkdocs.yml, ...; default: .).",
                ),
                arg(
                    "-c",
                    "--config",
                    dest="config_path",
                    type=file_path,
                    default=Path("sitemapd.toml"),
                    metavar="FILE",
                    help="The configuration file to write (default: sitemapd.toml).",
                ),
                arg("--force", action="store_true", help="Replace an existing configuration file."),
            ),
        ),
        Command(
            "changelog-sql",
            "starting:changelog_sql",
            "Print the change table, index and trigger template a CMS installs for sitemapd.",
            (
                _kind("postgres", "PostgreSQL (the default).", default="postgres"),
                _kind("sqlite", "SQLite."),
                _kind("mysql", "MySQL or MariaDB."),
                arg(
                    "--table",
                    default="sitemap_changes",
                    help="Change table (default: sitemap_changes).",
                ),
                arg("--channel", default="sitemapd", help="NOTIFY channel (default: sitemapd)."),
            ),
        ),
    )
}


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """Return the parser of `sitemapd`'s command line, as the environment now is: of
    every command, or of the command `only` alone."""
    commands = COMMANDS.values() if only is None else [COMMANDS[only]]
    return arguments.parser(
        "Keep a site's XML sitemaps true to its content.", __version__, commands
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Parse `argv` (the process's arguments by default) and run its command; exits 2
    on a usage error, naming it on stderr, and prints the help when given nothing."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        parser().print_help()
        sys.exit(2)
    # The parser of a command alone when the line names it: argparse would take 8 ms to
    # build all thirteen (most of it gettext looking for translations of its words).
    command_line = parser(arguments.named(args, COMMANDS))
    given = vars(command_line.parse_args(args))
    if given.get("as_json") and given.get("dry_run") is False:
        # `build` and `run` report as JSON only what a dry run would do.
        command_line.error("argument --json: only with --dry-run")
    process.configure(given.pop("log_level"))
    # Each line out as soon as it is written: a log of stdout and stderr together keeps
    # their order.
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    try:
        module, name = COMMANDS[given.pop("command")].runs.split(":")
        command = getattr(importlib.import_module(f"sitemapd.cli.{module}"), name)
        process.collect_from_here()
        process.exit_without_collecting()
        command(**given)
    except (EOFError, KeyboardInterrupt):
        # An answer not given at a prompt, or ^C: no traceback.
        print("\nAborted!", file=sys.stderr)
        sys.exit(1)
    except BrokenPipeError:
        # A reader that stopped reading (`| head`): no traceback, nor another one as the
        # exit flushes what is left for it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
