"""What a command line is declared with (a command, its options and arguments, the path
types) and the argparse parser built from the declarations: the standard library's,
which loads in a tenth of the time of a framework's."""

from __future__ import annotations

import argparse
import os
from collections.abc import Container, Iterable, Sequence
from pathlib import Path
from typing import Any

from sitemapd.core import logs

LEVELS = tuple(logs.LEVELS)


class Arg:
    """An option or argument: the names and keywords of `add_argument`; the keyword
    `env` names an environment variable that gives its value when it is not given."""

    __slots__ = ("names", "options")

    names: tuple[str, ...]
    options: dict[str, Any]

    def __init__(self, names: tuple[str, ...], options: dict[str, Any]) -> None:
        self.names = names
        self.options = options


def arg(*names: str, **options: Any) -> Arg:
    """Return the declaration of an option or argument, as to `add_argument`."""
    return Arg(names, options)


class Command:
    """A command: its name, the function running it (`module:function` in sitemapd.cli,
    imported when the command runs), the line that sums it up, its options and
    arguments, and what its help says after the summary line."""

    __slots__ = ("arguments", "more", "name", "runs", "summary")

    name: str
    runs: str
    summary: str
    arguments: tuple[Arg, ...]
    more: str

    def __init__(
        self, name: str, runs: str, summary: str, arguments: tuple[Arg, ...] = (), more: str = ""
    ) -> None:
        self.name = name
        self.runs = runs
        self.summary = summary
        self.arguments = arguments
        self.more = more


def file_path(text: str) -> Path:
    """Return `text` as a Path; raises ArgumentTypeError when it is a directory."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"File {text!r} is a directory.")
    return Path(text)


def count(text: str) -> int:
    """Return `text` as a whole number of one or more; raises ArgumentTypeError else."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of one or more.")
    return value


def dir_path(text: str) -> Path:
    """Return `text` as a Path; raises ArgumentTypeError when it is a file."""
    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"Directory {text!r} is a file.")
    return Path(text)


def _columns() -> int:
    """Return the terminal's width as shutil.get_terminal_size does: $COLUMNS, else the
    width of the terminal on stdout, else 80."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    try:
        return os.get_terminal_size().columns
    except OSError:
        return 80


class _Paragraphs(argparse.HelpFormatter):
    """Fills each paragraph of a description on its own (argparse runs them together)."""

    def __init__(self, prog: str) -> None:
        # add_argument makes a formatter: argparse's own measure of the terminal would
        # load shutil (and the bz2 and lzma it imports) at every start.
        super().__init__(prog, width=_columns() - 2)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        fill = super()._fill_text
        return "\n\n".join(fill(part, width, indent) for part in text.split("\n\n"))


def _log_level(parser: argparse.ArgumentParser, default: str) -> None:
    """Add --log-level to `parser`, with `default` when it is not given."""
    parser.add_argument(
        "--log-level",
        default=default,
        type=str.lower,
        choices=LEVELS,
        metavar="LEVEL",
        help="Log level: debug, info, warning or error (default: info; accepted before or "
        "after the command).",
    )


def _add(parser: argparse.ArgumentParser, declared: Arg) -> None:
    """Add the option or argument `declared` to `parser`, its default from the
    environment when it names a variable."""
    options = dict(declared.options)
    env = options.pop("env", None)
    if env is not None:
        # An empty variable gives no value: a required option must then be given.
        options["default"] = os.environ.get(env) or None
        options["required"] = options.pop("required", False) and options["default"] is None
    parser.add_argument(*declared.names, **options)


def named(argv: Sequence[str], names: Container[str]) -> str | None:
    """Return the command `argv` names when only --log-level comes before it, else None
    (the help, the version or an error may need every command)."""
    words = iter(argv)
    for word in words:
        if word == "--log-level":
            next(words, None)
        elif not word.startswith("--log-level="):
            return word if word in names else None
    return None


def parser(summary: str, version: str, commands: Iterable[Command]) -> argparse.ArgumentParser:
    """Return the parser of the command line of `commands`: `--version`, `--log-level`
    and each command with its arguments; the environment is read as it is built."""
    # No abbreviated long options: `--conf` would stop working the day a `--confirm`
    # appears, and a script's typo would pass for another option.
    top = argparse.ArgumentParser(
        prog="sitemapd", description=summary, allow_abbrev=False, formatter_class=_Paragraphs
    )
    top.add_argument("--version", action="version", version=f"sitemapd, version {version}")
    _log_level(top, "info")
    chosen = top.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    chosen.required = True
    for command in sorted(commands, key=lambda command: command.name):
        sub = chosen.add_parser(
            command.name,
            help=command.summary,
            description="\n\n".join(filter(None, (command.summary, command.more))),
            allow_abbrev=False,
            formatter_class=_Paragraphs,
        )
        for declared in command.arguments:
            _add(sub, declared)
        # After the command, it overrides the one before only when given.
        _log_level(sub, argparse.SUPPRESS)
    return top
