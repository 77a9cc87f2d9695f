"""A first load's early write-back: the ledger file flushed on a thread while the load
runs, through a descriptor that outlives the block (closing one SQLite did not open
would release SQLite's locks) until the ledger closes."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from sitemapd.ledger.writeback import EarlyWriteback

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/fd")


def open_on(path: Path) -> int:
    """Return how many descriptors of this process are open on `path`."""
    return sum(
        os.path.realpath(f"/proc/self/fd/{fd}") == str(path.resolve())
        for fd in os.listdir("/proc/self/fd")
    )


def test_the_ledger_file_alone_is_flushed_until_it_closes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = tmp_path / "ledger.sqlite3"
    ledger.write_bytes(b"pages")
    flushed: list[int] = []
    monkeypatch.setattr(os, "fdatasync", lambda fd: flushed.append(os.fstat(fd).st_ino))
    writeback = EarlyWriteback(ledger)
    with writeback.running():
        deadline = time.monotonic() + 10
        while len(flushed) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    count = len(flushed)
    assert count >= 2
    assert set(flushed) == {ledger.stat().st_ino}
    time.sleep(0.6)
    assert len(flushed) == count  # stopped with the block
    assert open_on(ledger) == 1  # kept: SQLite may still hold locks on the file
    with writeback.running():  # a second load reuses it
        assert open_on(ledger) == 1
    writeback.close()
    assert open_on(ledger) == 0


def test_a_ledger_that_cannot_be_opened_loads_without_it(tmp_path: Path) -> None:
    writeback = EarlyWriteback(tmp_path / "missing.sqlite3")
    with writeback.running():
        pass
    writeback.close()
