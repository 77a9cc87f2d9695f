"""A build opening a ledger with URLs starts its new WAL on a thread of its own, by a
commit that changes nothing; the build still ends with the WAL checkpointed and deleted,
and every table as a build without it leaves them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from conftest import Site, write_atomic

from sitemapd.ledger.ledger import Ledger
from sitemapd.ledger.shards import Limits

LIST_SOURCE = '[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"'


def listed(site: Site, stamp: str) -> None:
    lines = [f"https://example.com/{n}\t2025-01-0{1 + n % 9}T00:00:00+00:00" for n in range(50)]
    lines[7] = f"https://example.com/7\t{stamp}"
    write_atomic(site.base / "urls.txt", "".join(f"{line}\n" for line in lines))


def user_version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        return int(version)
    finally:
        conn.close()


def test_a_build_starts_the_wal_ahead_and_leaves_none(site: Site) -> None:
    site.configure(extra=LIST_SOURCE)
    listed(site, "2025-03-01T00:00:00+00:00")
    site.build()
    ledger = site.state / "ledger.sqlite3"
    version = user_version(ledger)
    listed(site, "2025-04-01T00:00:00+00:00")
    site.build()
    assert site.urls()["https://example.com/7"] == "2025-04-01T00:00:00+00:00"
    assert sorted(p.name for p in site.state.iterdir() if p.name.startswith(ledger.name)) == [
        ledger.name
    ]
    assert user_version(ledger) == version


def test_the_wal_is_started_before_the_first_write(site: Site) -> None:
    site.configure(extra=LIST_SOURCE)
    listed(site, "2025-03-01T00:00:00+00:00")
    site.build()
    path = site.state / "ledger.sqlite3"
    wal = path.with_name(path.name + "-wal")
    ledger = Ledger(path, Limits(50_000, 52_428_800), alone=True)
    try:
        ledger.cursor("none")  # a read: waits for no write
        with ledger.transaction():  # waits for the WAL's start
            pass
        assert wal.stat().st_size > 0  # started by a commit before this one wrote
    finally:
        ledger.close()
    assert not wal.exists()
    # A ledger that is not alone (the daemon's) starts its WAL itself.
    ledger = Ledger(path, Limits(50_000, 52_428_800))
    try:
        with ledger.transaction():
            pass
        assert wal.stat().st_size == 0
    finally:
        ledger.close()
