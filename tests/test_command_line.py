"""How `sitemapd` reads its command line: usage errors, long options never abbreviated,
-c from $SITEMAPD_CONFIG, --log-level on either side of the command, the help, init's
questions on a terminal, and a reader that stops reading."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Site, page, run_cli, terminal_output

from sitemapd.cli.app import COMMANDS


def sitemapd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `sitemapd ARGS` with `env` added to the environment, without
    $SITEMAPD_CONFIG unless `env` gives it."""
    environ = {k: v for k, v in os.environ.items() if k != "SITEMAPD_CONFIG"}
    return subprocess.run(
        [sys.executable, "-m", "sitemapd", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**environ, **(env or {})},
    )


def refused(*args: str, env: dict[str, str] | None = None) -> str:
    """Return the last line on stderr of `sitemapd ARGS`, which must exit 2 printing
    nothing on stdout."""
    result = sitemapd(*args, env=env)
    assert (result.returncode, result.stdout) == (2, ""), result
    return result.stderr.splitlines()[-1]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["biuld"], "sitemapd: error: argument COMMAND: invalid choice: 'biuld' (choose"),
        (["build"], "sitemapd build: error: the following arguments are required: -c/--config"),
        (
            ["build", "-c", "x.toml", "--dry-rnu"],
            "sitemapd: error: unrecognized arguments: --dry-rnu",
        ),
        (
            ["drill", "-c", "x.toml", "--pages", "many"],
            "argument --pages: 'many' is not a whole number of one or more.",
        ),
        (["drill", "-c", "x.toml", "--pages", "0"], "argument --pages: '0' is not a whole"),
        (["drill", "-c", "x.toml", "--pages", "-3"], "argument --pages: '-3' is not a whole"),
        (["explain", "-c", "x.toml"], "the following arguments are required: TARGET"),
        (["import", "-c", "x.toml"], "the following arguments are required: FILE"),
        (["--log-level", "loud", "status"], "argument --log-level: invalid choice: 'loud'"),
        (["--log-level", "debug"], "the following arguments are required: COMMAND"),
        (["changelog-sql", "--oracle"], "unrecognized arguments: --oracle"),
        (["build", "-c", "x.toml", "--json"], "argument --json: only with --dry-run"),
        (["run", "-c", "x.toml", "--json"], "argument --json: only with --dry-run"),
    ],
)
def test_a_usage_error_exits_2_naming_it(args: list[str], said: str) -> None:
    assert said in refused(*args)


def test_long_options_are_never_abbreviated(tmp_path: Path) -> None:
    config = str(tmp_path / "sitemapd.toml")
    assert refused("status", "-c", config, "--js").endswith("unrecognized arguments: --js")
    in_env = {"SITEMAPD_CONFIG": config}
    assert refused("status", "--conf", "x", env=in_env).endswith("unrecognized arguments: --conf x")
    assert refused("changelog-sql", "--sql").endswith("unrecognized arguments: --sql")
    # Whole, an option may take its value after `=`.
    result = sitemapd("status", f"--config={config}")
    assert result.stderr == f"sitemapd: configuration error: {config}: no such file\n"


def test_the_config_comes_from_the_environment_unless_given(site: Site) -> None:
    no_ledger = f"sitemapd: error: no ledger at {site.state / 'ledger.sqlite3'} yet"
    given = {"SITEMAPD_CONFIG": str(site.config)}
    assert sitemapd("status", env=given).stderr.startswith(no_ledger)
    other = str(site.base / "other.toml")
    assert other in sitemapd("status", "-c", other, env=given).stderr
    # An empty variable is none; a directory is no configuration file.
    assert refused("status", env={"SITEMAPD_CONFIG": ""}).endswith("required: -c/--config")
    assert refused("status", env={"SITEMAPD_CONFIG": str(site.base)}).endswith(
        f"argument -c/--config: File '{site.base}' is a directory."
    )


def test_the_log_level_after_the_command_wins_and_takes_any_case(site: Site) -> None:
    site.write("a.html", page("A"))
    assert " INFO sitemapd.engine: " in site.build().stderr
    assert " DEBUG sitemapd." in site.cli("build", "--log-level", "DEBUG").stderr
    late = run_cli("--log-level", "debug", "build", "--log-level", "Error", "-c", str(site.config))
    assert late.stderr == ""
    early = run_cli("--log-level=warning", "build", "-c", str(site.config))
    assert early.stderr == ""
    assert early.stdout.startswith("0 new, 0 updated, 0 gone")


def test_the_help_lists_every_command_and_each_its_options() -> None:
    bare = sitemapd()
    assert bare.returncode == 2
    shown = sitemapd("--help")
    assert shown.returncode == 0
    assert bare.stdout == shown.stdout
    listed = " ".join(shown.stdout.split())
    for command in COMMANDS.values():
        assert f" {command.name} {command.summary}" in listed
        own = sitemapd(command.name, "--help")
        assert own.returncode == 0
        assert f"usage: sitemapd {command.name} " in own.stdout
        assert "--log-level LEVEL" in own.stdout
        for declared in command.arguments:
            assert declared.options.get("metavar", declared.names[-1]) in own.stdout
    assert "(default: 200)" in sitemapd("drill", "--help").stdout


@pytest.mark.parametrize(
    ("flags", "database"),
    [
        ([], "PostgreSQL"),
        (["--sqlite"], "SQLite"),
        (["--sqlite", "--mysql"], "MySQL"),
        (["--mysql", "--postgres"], "PostgreSQL"),
    ],
)
def test_changelog_sql_prints_for_the_last_database_named(flags: list[str], database: str) -> None:
    result = sitemapd("changelog-sql", *flags)
    assert result.stdout.startswith(f"-- sitemapd change log for {database}")


def _into_closed_pipe(*args: str) -> tuple[int, str]:
    """Run `sitemapd ARGS` writing into a pipe nobody reads; return its exit code and
    what it said on stderr."""
    read, write = os.pipe()
    os.close(read)
    with os.fdopen(write, "w") as closed:
        result = subprocess.run(
            [sys.executable, "-m", "sitemapd", *args],
            stdout=closed,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    return result.returncode, result.stderr


def test_a_reader_that_stops_reading_ends_it_quietly(site: Site) -> None:
    assert _into_closed_pipe("changelog-sql") == (1, "")
    # A command that names its errors on stderr: the closed pipe is none of them.
    site.write("index.html", "<html><head><title>Home</title></head><body>Hi</body></html>")
    site.cli("build")
    assert _into_closed_pipe("status", "--json", "-c", str(site.config)) == (1, "")


def converse(args: list[str], cwd: Path, answers: list[str]) -> tuple[int, str]:
    """Run `sitemapd ARGS` on a terminal, typing each answer as a question ends (`: `),
    then nothing more; return its exit code and what the terminal showed."""
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitemapd", *args],
        stdin=child,
        stdout=child,
        stderr=child,
        cwd=cwd,
    )
    os.close(child)
    left = list(answers)

    def answer(seen: bytes) -> bytes | None:
        if not seen.rstrip(b" ").endswith(b":"):
            return None
        return (left.pop(0) + "\n").encode() if left else b"\x04"

    seen = terminal_output(main, 30, answer)
    os.close(main)
    return proc.wait(30), seen.decode().replace("\r\n", "\n")


def test_init_asks_what_the_options_do_not_say(tmp_path: Path) -> None:
    (tmp_path / "public").mkdir()
    # An empty answer is asked again: no folder is offered where no generator says one
    # (this one, where the configuration goes, would be refused as the site's).
    code, shown = converse(["init"], tmp_path, ["", "public", "", "https://example.com/"])
    assert code == 0, shown
    assert shown.count("Folder of the built site: ") == 2
    assert shown.count("The site's URL (https://example.com/): ") == 2
    text = (tmp_path / "sitemapd.toml").read_text()
    assert 'base_url = "https://example.com/"' in text
    # The input ending before an answer: no traceback, no file.
    code, shown = converse(["init", "-c", "other.toml", "--content", "public"], tmp_path, [])
    assert code == 1
    assert shown.endswith("Aborted!\n")
    assert "Traceback" not in shown
    assert not (tmp_path / "other.toml").exists()
