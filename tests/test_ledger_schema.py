"""The ledger's schema: a new ledger has the released shape, and every released version
upgrades to it without losing a row.

`tests/data/ledger-schema/vN.sql` is the schema a released sitemapd wrote at version N
(its tables made through sqlite-utils then); the migrations are plain SQL now, so these
compare what they make, column by column and index by index, with what users' ledgers hold.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from conftest import run_cli

from sitemapd.errors import LedgerError
from sitemapd.ledger.schema import MIGRATIONS, migrate

RELEASED = Path(__file__).parent / "data" / "ledger-schema"
Shape = dict[str, object]


def released(version: int, path: Path) -> sqlite3.Connection:
    """Return a ledger at `path` holding the schema released at `version`."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript((RELEASED / f"v{version}.sql").read_text())
    conn.execute(f"PRAGMA user_version = {version}")
    return conn


def shape(conn: sqlite3.Connection) -> Shape:
    """Return each table's columns and rowid-ness and each index's columns, uniqueness and
    condition: what a query sees, not how the CREATE statement was spelled."""
    found: Shape = {}
    for kind, name, table, sql in conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL"
    ):
        spelled = re.sub(r"\s+", " ", sql.replace('"', "")).upper()
        if kind == "table":
            columns = conn.execute(f"PRAGMA table_xinfo({name})").fetchall()
            found[f"table {name}"] = (columns, "WITHOUT ROWID" in spelled)
        else:
            columns = conn.execute(f"PRAGMA index_xinfo({name})").fetchall()
            where = spelled.partition(" WHERE ")[2]
            found[f"index {name}"] = (table, columns, spelled.startswith("CREATE UNIQUE"), where)
    return found


def test_released_schemas_cover_every_migration() -> None:
    assert sorted(p.name for p in RELEASED.glob("v*.sql")) == sorted(
        f"v{n}.sql" for n in range(1, len(MIGRATIONS) + 1)
    )


def test_a_new_ledger_has_the_released_shape(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "new.sqlite3", isolation_level=None)
    migrate(conn, tmp_path / "new.sqlite3")
    assert conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
    current = released(len(MIGRATIONS), tmp_path / "released.sqlite3")
    assert shape(conn) == shape(current)


def test_a_ledger_a_build_makes_is_whole(tmp_path: Path) -> None:
    """Made with one sync of its file (none a migration), the ledger a first build
    makes has the released shape, in WAL, and nothing of its making is left beside it."""
    (tmp_path / "sitemapd.toml").write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"\n'
    )
    (tmp_path / "urls.txt").write_text("https://example.com/a\n")
    run_cli("build", "-c", str(tmp_path / "sitemapd.toml"))
    ledger = tmp_path / "state" / "ledger.sqlite3"
    conn = sqlite3.connect(ledger, isolation_level=None)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
        current = released(len(MIGRATIONS), tmp_path / "released.sqlite3")
        assert shape(conn) == shape(current)
    finally:
        conn.close()
    assert not list(ledger.parent.glob("ledger.sqlite3.new*"))


@pytest.mark.parametrize("version", range(1, len(MIGRATIONS)))
def test_a_released_ledger_upgrades_and_keeps_its_rows(tmp_path: Path, version: int) -> None:
    conn = released(version, tmp_path / "old.sqlite3")
    conn.execute(
        "INSERT INTO urls (loc, status, lastmod, first_seen, change_count) "
        "VALUES ('https://example.com/a', 'live', '2026-01-02T03:04:05Z', "
        "'2026-01-01T00:00:00Z', 2)"
    )
    conn.execute("INSERT INTO published (name, sha256, bytes, at) VALUES ('s.xml', 'x', 1, 't')")
    migrate(conn, tmp_path / "old.sqlite3")
    current = released(len(MIGRATIONS), tmp_path / "released.sqlite3")
    assert shape(conn) == shape(current)
    assert conn.execute("SELECT loc, lastmod, change_count FROM urls").fetchall() == [
        ("https://example.com/a", "2026-01-02T03:04:05Z", 2)
    ]
    assert conn.execute("SELECT name FROM published").fetchall() == [("s.xml",)]


def test_a_ledger_newer_than_this_sitemapd_is_refused(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "future.sqlite3", isolation_level=None)
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(LedgerError, match="newer than this sitemapd understands"):
        migrate(conn, tmp_path / "future.sqlite3")
