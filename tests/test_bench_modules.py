"""The benchmarks `make bench` runs load against the current package: a renamed function
fails here, in the suite, and not half-way through a twenty-minute `make bench`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from conftest import REPO

BENCHMARKS = sorted((REPO / "bench").glob("bench_*.py"))


def test_make_bench_runs_every_benchmark() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert BENCHMARKS
    for path in BENCHMARKS:
        assert f"bench/{path.name}" in makefile, path.name


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda path: path.stem)
def test_benchmark_loads(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Loaded as `make bench` runs it, but not as __main__: nothing is measured.
    monkeypatch.setattr(sys, "path", [str(path.parent), *sys.path])
    spec = importlib.util.spec_from_file_location(f"bench_module_{path.stem}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert callable(module.main)
