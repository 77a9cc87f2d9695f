"""What whole `sitemapd` processes import: each command loads the modules it uses and
not those it does not (read from `python -X importtime`, which names every module a
process imports)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def imported(*args: str) -> set[str]:
    """Run `sitemapd *args` (which must succeed); return the names of the modules it
    imported."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sitemapd", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert result.returncode == 0, result.stderr
    return {
        line.rpartition("|")[2].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:")
    }


@pytest.fixture
def listed(tmp_path: Path) -> tuple[Path, Path]:
    """Return the configuration and the list of a built site of one URL list."""
    listing = tmp_path / "urls.txt"
    listing.write_text(
        "".join(f"https://example.com/{n}.html\t2026-01-01T00:00:00+00:00\n" for n in range(500))
    )
    config = tmp_path / "sitemapd.toml"
    config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"\n'
    )
    assert "sitemapd.engine.engine" in imported("build", "-c", str(config))
    return config, listing


def test_a_changed_line_loads_no_news_renderer_for_a_site_without_news(
    listed: tuple[Path, Path],
) -> None:
    config, listing = listed
    # Chunks of 64 KiB on average: a list of several, built.
    lines = [f"https://example.com/{n}.html\t2026-01-01T00:00:00+00:00\n" for n in range(8_000)]
    listing.write_text("".join(lines))
    assert "pyfastcdc" in imported("build", "-c", str(config))
    lines[4_000] = "https://example.com/4000.html\t2026-02-01T00:00:00+00:00\n"
    listing.write_text("".join(lines))
    modules = imported("--log-level", "warning", "build", "-c", str(config))
    assert "sitemapd.engine.engine" in modules
    # Nor `logging`: at this level the build shows no record, and whether a warning would
    # show is answered without it. Nor `concurrent.futures`, which loads it: the build's
    # threads are `core.workers`.
    assert not {"logging", "concurrent.futures"} & modules
    assert "sitemapd.render.news" not in modules
    # Nor OpenSSL: published files are recorded by xxh3 (core/docdigest.py).
    assert "hashlib" not in modules
    # Nor json: change logs and held removals load it, a list's line changes neither.
    assert "json" not in modules
    # Nor the change-log rows' loading, which a list's chunks never go through.
    assert "sitemapd.ledger.changes" not in modules
    # Nor dataclasses: the configuration and the ledger's rows are plain classes and named
    # tuples.
    assert "dataclasses" not in modules
    # Nor the chunker, with its typing_extensions and their `inspect`: a line of the same
    # size keeps the chunks' ends (sources/listchunks.py).
    assert not {"pyfastcdc", "typing_extensions", "inspect"} & modules
    # A line added moves the ends after it: the changed stretch is cut.
    listing.write_text("".join([*lines, "https://example.com/new.html\n"]))
    assert "pyfastcdc" in imported("build", "-c", str(config))


def test_a_command_runs_with_the_collector_on(listed: tuple[Path, Path]) -> None:
    # Off while the command line loads, on once a command starts.
    config, _ = listed
    code = (
        "import atexit, gc, sys\n"
        "from sitemapd.__main__ import run\n"
        "atexit.register(lambda: print(gc.isenabled()))\n"
        f"sys.argv = ['sitemapd', 'check-config', '-c', {str(config)!r}]\n"
        "run()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "True"


def test_a_quiet_build_loads_no_engine_and_no_gzip(listed: tuple[Path, Path]) -> None:
    config, _ = listed
    modules = imported("build", "-c", str(config))
    assert not {"sitemapd.engine.engine", "gzip"} & modules
    assert "sitemapd.cli.unchanged" in modules
    # Nor dataclasses, whose `inspect` (with `ast`, `dis` and `tokenize`) is a sixth of
    # the start-up's instructions; nor `logging`, as the build shows no record.
    assert not {"dataclasses", "inspect", "logging"} & modules


def test_status_and_check_config_load_what_they_report(listed: tuple[Path, Path]) -> None:
    config, _ = listed
    status = imported("status", "-c", str(config))
    # No thread pool, manifest reader or journal (the latter for IndexNow sites alone).
    assert "sitemapd.status.report" in status
    # The command line is the standard library's; the commands that write are not loaded.
    assert "argparse" in status
    assert not {"click", "sitemapd.cli.publishing", "sitemapd.engine.engine"} & status
    assert not {"concurrent.futures", "gzip", "sitemapd.ledger.journal"} & status
    checked = imported("check-config", "-c", str(config))
    assert not {"json", "concurrent.futures", "sitemapd.ledger.journal"} & checked
    assert not {"dataclasses", "inspect"} & (status | checked)
    # A command that shows no record loads no `logging` (with traceback and threading).
    assert "logging" not in status | checked


def test_explain_loads_no_dataclasses(tmp_path: Path) -> None:
    pages = tmp_path / "pages"
    pages.mkdir()
    page = pages / "story.html"
    page.write_text(
        "<html><head><title>A story</title></head><body><nav>Home</nav><main><h1>A story"
        "</h1><p>What happened, told in a few words.</p></main></body></html>"
    )
    config = tmp_path / "sitemapd.toml"
    config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        f'[[source]]\ntype = "directory"\nroot = "{pages}"\nname = "pages"\n'
    )
    modules = imported("explain", "-c", str(config), str(page))
    # The page is read and its fingerprint explained...
    assert "sitemapd.fingerprint.extract" in modules
    # ...by plain classes and named tuples: `dataclasses` costs its import and each class's
    # generated methods (lxml still loads `inspect`).
    assert "dataclasses" not in modules
    # The page's news language is worked out without the news renderer and the sitemap
    # module under it.
    assert "sitemapd.render.newslanguage" in modules
    assert not {"sitemapd.render.news", "sitemapd.render.sitemap"} & modules
    # Nor OpenSSL: the fingerprint's blake2b is hashlib's own, taken from `_blake2`.
    assert "hashlib" not in modules
    assert "logging" not in modules
