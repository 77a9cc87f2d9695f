"""The package's shape: rooms of one job, no import circle, each folder saying what it holds.

The layers themselves (which package may import which) are import-linter's contract in
pyproject.toml, checked by `make lint`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sitemapd"
MAX_LINES = 400
# Modules kept longer on purpose, with why. A module listed here that shrinks below the
# limit fails the test too, so the list stays true.
LONGER = {
    # One state machine each (a replication stream and its snapshot hand-over); cut in
    # two, either half would need the other's private state.
    "changelog/binlog.py": 520,
    "changelog/logical.py": 500,
    # The change-log source's whole schema: columns, modes and the checks between them.
    "config/changelog.py": 495,
}


def modules() -> dict[str, int]:
    """Return `{path under sitemapd/: line count}` of every module."""
    return {
        path.relative_to(PACKAGE).as_posix(): len(path.read_text().splitlines())
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def test_no_module_grows_past_its_room() -> None:
    sizes = modules()
    over = {name: n for name, n in sizes.items() if n > LONGER.get(name, MAX_LINES)}
    assert not over, f"split these by job (or list them in LONGER, with why): {over}"
    stale = {name for name in LONGER if sizes.get(name, 0) <= MAX_LINES}
    assert not stale, f"no longer over {MAX_LINES} lines: drop them from LONGER: {stale}"


@pytest.mark.parametrize("type_checking", [False, True], ids=["runtime", "with-types"])
def test_no_import_circle(type_checking: bool) -> None:
    graph = grimp.build_graph(
        "sitemapd", exclude_type_checking_imports=not type_checking, cache_dir=None
    )
    circles = [
        (module, imported)
        for module in sorted(graph.modules)
        for imported in graph.find_modules_directly_imported_by(module)
        if graph.find_shortest_chain(importer=imported, imported=module)
    ]
    assert not circles, f"modules that import each other, directly or not: {circles}"


def test_every_module_says_what_it_does() -> None:
    silent = [
        name for name in modules() if not ast.get_docstring(ast.parse((PACKAGE / name).read_text()))
    ]
    assert not silent, f"modules without a docstring: {silent}"
