"""The repository is self-contained: its tests pass from a clone with nothing beside it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, SCHEMAS


def _copy_checkout(target: Path) -> None:
    """Copy the files git would clone (tracked or new, not ignored) into `target`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


@pytest.mark.slow
def test_schema_tests_pass_in_a_clone_with_nothing_beside_it(tmp_path: Path) -> None:
    clone = tmp_path / "alone" / "sitemapd"
    _copy_checkout(clone)
    assert not (clone.parent / "shared").exists()
    child = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_feed_render.py::test_atom_validates_against_rfc4287_schema",
            "tests/test_build.py::test_example_site_publishes_exactly_its_indexable_pages",
        ],
        cwd=clone,
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )
    assert child.returncode == 0, child.stdout + child.stderr


def test_every_schema_has_its_source_and_licence_noted() -> None:
    notes = (SCHEMAS / "SOURCES.md").read_text()
    for path in SCHEMAS.iterdir():
        if path.suffix in {".xsd", ".rng"}:
            row = next(line for line in notes.splitlines() if line.startswith(f"| {path.name} |"))
            assert row.count("|") == 5, row  # file, what, copied from, licence
    assert SCHEMAS.is_relative_to(REPO)


def test_a_package_build_leaves_nothing_for_git() -> None:
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "build/lib/sitemapd/__init__.py"], cwd=REPO, check=False
    )
    assert ignored.returncode == 0
