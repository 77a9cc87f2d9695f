"""The documentation against the code: every configuration example in docs/ loads through
sitemapd's own config loader, every `sitemapd` command line in docs/ and the README
parses with the command line's own parser, and the README's links lead somewhere.

Conventions for docs/*.md (mkdocs.yml's nav and `mkdocs build --strict` check the rest):

- A ```toml block is a configuration example. It is a whole configuration unless the line
  before it is `<!-- config: fragment -->`: a fragment is loaded on top of `BASE` (a site
  and a folder of pages), its tables merged into the base's and its [[source]] tables
  added to the base's folder. A commented-out `# key = value` in a block is a setting the
  reader may turn on: each is loaded turned on, alone (replacing the key's active line),
  unless its value holds a `<placeholder>` (`"<output_url>atom.xml"`: the default's form).
- A command line is a line of a ```sh block, or a `$ ` line of a ```console block, whose
  command (before a pipe, `&&`, `;` or a redirection) is `sitemapd` or a path ending in it:
  it must parse whole. A `sitemapd <command> ...` code span in a sentence may leave out
  arguments, but its command and options must be real; a usage line (`[--json]`) is not
  checked there. The table of commands.md lists every command, each usage line's options
  real.
"""

from __future__ import annotations

import argparse
import re
import shlex
import socket
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
from conftest import REPO

from sitemapd import ConfigError, config
from sitemapd.cli import app

DOCS = REPO / "docs"
FRAGMENT = "<!-- config: fragment -->"
# What a fragment is loaded on top of: the smallest valid configuration.
BASE: dict[str, Any] = {
    "site": {"base_url": "https://example.com/", "output_dir": "out", "state_dir": "state"},
    "source": [{"type": "directory", "root": "pages"}],
}
# A commented-out setting, as config.example.toml writes them (prose never looks so).
_SETTING = re.compile(r"#\s?([a-z_]+) = .*")
_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
_OPERATORS = {"|", "||", "&&", ";", "&"}
_REQUIRED = "the following arguments are required: "
_REDIRECTS = {">", ">>", "<", ">&"}


@dataclass(frozen=True)
class Block:
    """A fenced block of a Markdown file: its language, text and where it starts."""

    file: Path
    line: int  # of its opening fence, from 1
    end: int  # of its closing fence
    lang: str
    text: str
    fragment: bool

    def __str__(self) -> str:
        return f"{self.file.relative_to(REPO)}:{self.line}"


def blocks(file: Path) -> Iterator[Block]:
    """Yield the fenced blocks of `file`, dedented to their fence."""
    lines = file.read_text().splitlines()
    n = 0
    while n < len(lines):
        opening = _FENCE.match(lines[n])
        if not opening:
            n += 1
            continue
        indent, lang = opening.groups()
        end = next(k for k in range(n + 1, len(lines)) if lines[k].strip() == "```")
        body = [line.removeprefix(indent) for line in lines[n + 1 : end]]
        fragment = n > 0 and lines[n - 1].strip() == FRAGMENT
        yield Block(file, n + 1, end + 1, lang, "\n".join(body) + "\n", fragment)
        n = end + 1


def doc_files() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def toml_blocks() -> list[Block]:
    return [block for file in doc_files() for block in blocks(file) if block.lang == "toml"]


def merged(base: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    """Return `base` with `block` on top: tables merged, [[source]] tables added."""
    out = dict(base)
    for key, value in block.items():
        if key == "source":
            out[key] = [*base.get(key, []), *value]
        elif isinstance(value, dict) and isinstance(base.get(key), dict):
            out[key] = merged(base[key], value)
        else:
            out[key] = value
    return out


def variants(text: str) -> Iterator[tuple[str, str]]:
    """Yield (what, TOML text): the block as written, then each commented-out setting
    turned on alone, replacing an active line of the same key in its table."""
    yield "as written", text
    lines = text.splitlines()
    for n, line in enumerate(lines):
        setting = _SETTING.fullmatch(line.rstrip())
        if not setting or re.search(r"<[a-z_]+>", line):
            continue
        key = setting.group(1)
        start = max((k for k in range(n) if lines[k].lstrip().startswith("[")), default=0)
        end = next((k for k in range(n, len(lines)) if lines[k].lstrip().startswith("[")), None)
        table = range(start, len(lines) if end is None else end)
        turned = [
            line[1:].lstrip() if k == n else other
            for k, other in enumerate(lines)
            if k == n or k not in table or not re.match(rf"\s*{key}\s*=", other)
        ]
        yield f"with {line.strip()!r} turned on", "\n".join(turned) + "\n"


@pytest.mark.parametrize("block", toml_blocks(), ids=str)
def test_configuration_examples_load(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # partition = "auto/K" reads the host name: a StatefulSet pod's, as the docs describe.
    monkeypatch.setattr(socket, "gethostname", lambda: "sitemaps-2")
    # Folders the examples name exist, as they would beside a real configuration.
    for folder in ("pages", "site", "out", "state"):
        (tmp_path / folder).mkdir()
    file = tmp_path / "sitemapd.toml"
    for what, text in variants(block.text):
        raw = tomllib.loads(text)
        try:
            config.parse(merged(BASE, raw) if block.fragment else raw, file)
        except ConfigError as exc:
            pytest.fail(f"{block}, {what}: {exc}")


def test_fragments_are_marked_and_wholes_are_whole() -> None:
    examples = toml_blocks()
    assert len(examples) >= 14
    wholes = [block for block in examples if not block.fragment]
    assert wholes  # the essentials of Configuration
    # A whole configuration names its site; a fragment is marked, or it would be loaded alone.
    for block in wholes:
        assert "base_url" in tomllib.loads(block.text).get("site", {}), block
    for file in doc_files():
        lines = file.read_text().splitlines()
        for n, line in enumerate(lines):
            if line.strip() == FRAGMENT:
                assert lines[n + 1].strip() == "```toml", f"{file}:{n + 1}"


def command_lines(file: Path) -> Iterator[tuple[Block, list[str]]]:
    """Yield each `sitemapd` command line of a sh or console block, as its arguments."""
    for block in blocks(file):
        if block.lang not in {"sh", "console"}:
            continue
        text = block.text.replace("\\\n", " ")
        for line in text.splitlines():
            if block.lang == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            lexer.commenters = "#"
            command: list[str] = []
            target = False  # the token after a redirection is its file, no argument
            for token in [*lexer, ";"]:
                if token in _OPERATORS:
                    if command and Path(command[0]).name == "sitemapd":
                        yield block, command[1:]
                    command = []
                elif token in _REDIRECTS:
                    target = True
                elif target:
                    target = False
                else:
                    command.append(token)


class UsageError(Exception):
    """A command line `sitemapd` would refuse, with argparse's message."""


def _refuse(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    raise UsageError(f"{parser.prog}: {message}")


def parse(argv: list[str], whole: bool = True) -> None:
    """Parse `argv` as `sitemapd` would, invoking nothing; raise UsageError on an unknown
    command or option, or on a missing or extra argument: when not `whole`, arguments
    may be missing (the sentence names the command and options)."""
    given = list(argv)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "error", _refuse)
        while True:
            try:
                app.parser().parse_args(given)
                return
            except UsageError as exc:
                # Missing arguments are checked first: given placeholders, the rest of
                # the line is checked too.
                missing = str(exc).partition(_REQUIRED)[2]
                if whole or not missing:
                    raise
                for name in missing.split(", "):
                    given += [name.split("/")[0], "x"] if name.startswith("-") else ["x"]


def inline_commands(file: Path) -> Iterator[tuple[str, list[str]]]:
    """Yield each `sitemapd <command> ...` code span of the prose of `file` (a command
    named in a sentence: its arguments may be left out), but usage lines (`[--json]`)."""
    fenced = {n for block in blocks(file) for n in range(block.line, block.end + 1)}
    lines = file.read_text().splitlines()
    prose = "\n".join(line for n, line in enumerate(lines, 1) if n not in fenced)
    for span in re.findall(r"`sitemapd ([^`]+)`", prose):
        if "[" not in span:
            yield (
                f"{file.relative_to(REPO)}: `sitemapd {' '.join(span.split())}`",
                shlex.split(span),
            )


def every_command_line() -> list[tuple[Block, list[str]]]:
    return [found for file in [REPO / "README.md", *doc_files()] for found in command_lines(file)]


def test_command_lines_name_real_commands_and_options(monkeypatch: pytest.MonkeyPatch) -> None:
    # A line shown without -c must not pass thanks to the environment of the test run.
    monkeypatch.delenv("SITEMAPD_CONFIG", raising=False)
    found = every_command_line()
    assert len(found) >= 15
    failures = []
    for block, argv in found:
        try:
            parse(argv)
        except UsageError as exc:
            failures.append(f"{block}: sitemapd {shlex.join(argv)}: {exc}")
    assert not failures, "\n".join(failures)
    shown = {argv[0] for _, argv in found if argv}
    assert {"build", "run", "status", "explain", "import", "changelog-sql"} <= shown


def test_commands_named_in_sentences_are_real_with_real_options() -> None:
    found = [
        found for file in [REPO / "README.md", *doc_files()] for found in inline_commands(file)
    ]
    assert len(found) >= 30
    failures = []
    for where, argv in found:
        try:
            parse(argv, whole=False)
        except UsageError as exc:
            failures.append(f"{where}: {exc}")
    assert not failures, "\n".join(failures)


def test_the_command_table_lists_every_command_with_real_options() -> None:
    rows = re.findall(r"^\| `([a-z-]+)([^`]*)` \|", (DOCS / "commands.md").read_text(), re.M)
    assert {name for name, _ in rows} == set(app.COMMANDS)
    for name, usage in rows:
        # `verify [--partition FILE]...`: the options a usage line offers, all given; a
        # number's placeholder (`--pages N`) given a number.
        words = re.sub(r"[\[\]]|\.\.\.", " ", usage).split()
        parse([name, *("10" if word == "N" else word for word in words)], whole=False)


@pytest.mark.parametrize(
    ("argv", "whole"),
    [
        (["biuld", "-c", "x.toml"], True),
        (["build", "--dry-rnu", "-c", "x.toml"], True),
        (["status"], True),
        (["changelog-sql", "--oracle"], True),
        (["explain", "-c", "x.toml", "a.html", "b.html"], True),
        (["biuld"], False),
        (["build", "--confirm-removals"], False),
    ],
)
def test_a_wrong_command_line_fails_the_check(argv: list[str], whole: bool) -> None:
    with pytest.raises(UsageError):
        parse(argv, whole)


def test_a_renamed_key_fails_the_check(tmp_path: Path) -> None:
    block = "[daemon]\ndebounse = 0.5\n"
    with pytest.raises(ConfigError, match="debounse"):
        config.parse(merged(BASE, tomllib.loads(block)), tmp_path / "sitemapd.toml")
    # A commented-out setting is checked too.
    texts = [text for _, text in variants("[daemon]\n# debounse = 0.5\n")]
    assert texts[1] == "[daemon]\ndebounse = 0.5\n"


def test_the_readme_links_lead_to_files() -> None:
    readme = (REPO / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    local = [target for target in targets if "://" not in target]
    assert "docs/status-page.png" in local
    assert "docs/configuration.md" in local
    missing = [target for target in local if not (REPO / target).is_file()]
    assert not missing
    assert len(readme.splitlines()) < 300
