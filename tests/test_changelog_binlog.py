"""`mode = "binlog"`: `sitemapd run`/`build` following a CMS table on a real MariaDB
through its row-based binlog, into published sitemaps."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

from conftest import Site, published, run_cli
from daemon_harness import RunningDaemon, start
from mariadb import MariaDB
from pymysql.constants import CLIENT

from sitemapd.core import w3c

BASE = "https://example.com/news/"
# Commit times the test sets (SET TIMESTAMP): every lastmod must be one of them.
EPOCH = 1_700_000_000


class Cms:
    """A CMS database on `server` whose `articles` rows are pages when published."""

    def __init__(self, server: MariaDB, name: str) -> None:
        self.server = server
        self.name = name
        server.create_database(name)
        self.execute(
            "CREATE TABLE articles (id BIGINT PRIMARY KEY AUTO_INCREMENT, slug VARCHAR(190),"
            " status VARCHAR(20), title TEXT, body LONGTEXT, views INT DEFAULT 0,"
            " published_at DATETIME, updated_at DATETIME) ENGINE=InnoDB"
        )

    def execute(self, *statements: str, at: int | None = None) -> None:
        """Run `statements` in one transaction committed at epoch `at` (else now)."""
        with self.server.connect(self.name) as conn, conn.cursor() as cur:
            if at is not None:
                cur.execute(f"SET TIMESTAMP = {at}")
            cur.execute("BEGIN")
            for statement in statements:
                cur.execute(statement)
            cur.execute("COMMIT")

    def execute_each(self, *statements: str, at: int) -> None:
        """Run each of `statements` in a transaction of its own, one after another on one
        connection as a CMS's request does, committed at epoch `at`."""
        with self.server.connect(self.name) as conn, conn.cursor() as cur:
            cur.execute(f"SET TIMESTAMP = {at}")
            for statement in statements:
                cur.execute("BEGIN")
                cur.execute(statement)
                cur.execute("COMMIT")

    def add(self, slugs: list[str], at: int, status: str = "publish") -> None:
        values = ", ".join(
            f"('{slug}', '{status}', 'Title {slug}', 'Body {slug}', FROM_UNIXTIME({at}),"
            f" FROM_UNIXTIME({at}))"
            for slug in slugs
        )
        self.execute(
            "INSERT INTO articles (slug, status, title, body, published_at, updated_at) VALUES "
            + values,
            at=at,
        )

    def rows(self) -> list[dict[str, Any]]:
        with self.server.connect(self.name) as conn, conn.cursor() as cur:
            cur.execute("SELECT slug, status FROM articles")
            return [{"slug": slug, "status": status} for slug, status in cur.fetchall()]

    def live(self) -> set[str]:
        return {BASE + row["slug"] for row in self.rows() if row["status"] == "publish"}

    def dsn(self) -> str:
        return self.server.dsn(self.name)


def binlog_site(tmp_path: Path, dsn: str, extra: str = "") -> Site:
    site = Site(tmp_path)
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        "[daemon]\ndebounce = 0.1\n"
        f'[[source]]\ntype = "changelog"\nmode = "binlog"\ndsn = "{dsn}"\n'
        'table = "articles"\nurl_template = "/news/{slug}"\n'
        'live = { status = "publish" }\nfingerprint_columns = ["title", "body"]\n'
        'title = "title"\npublished = "published_at"\npoll_interval = 0.2\n'
        'name = "cms"\n[source.columns]\nchanged_at = "updated_at"\n' + extra
    )
    return site


def stamp(at: int) -> str:
    return w3c.format_epoch(at)


def ledger(site: Site) -> sqlite3.Connection:
    return sqlite3.connect(site.state / "ledger.sqlite3")


def journal(site: Site) -> dict[str, int]:
    with ledger(site) as conn:
        found = conn.execute("SELECT kind, count(*) FROM journal_entries GROUP BY kind").fetchall()
    conn.close()
    return dict(found)


def purge(server: MariaDB) -> str:
    """Start a new binlog and purge the others (once the server's binlog checkpoint lets
    it: a file stays while its transactions may be needed for crash recovery)."""
    deadline = time.monotonic() + 30
    with server.connect() as conn, conn.cursor() as cur:
        cur.execute("FLUSH BINARY LOGS")
        cur.execute("SHOW MASTER STATUS")
        (current,) = cur.fetchone()[:1]
        while time.monotonic() < deadline:
            cur.execute(f"PURGE BINARY LOGS TO '{current}'")
            cur.execute("SHOW BINARY LOGS")
            if [row[0] for row in cur.fetchall()] == [current]:
                return str(current)
            time.sleep(0.2)
    raise AssertionError("the server kept its old binlogs")


def test_a_table_followed_through_crash_and_restart(tmp_path: Path, mariadb: MariaDB) -> None:
    cms = Cms(mariadb, "cms_follow")
    slugs = [f"a{n}" for n in range(1000)]
    cms.add(slugs[:200], EPOCH)  # there before sitemapd: read by the snapshot
    site = binlog_site(tmp_path, cms.dsn())
    expected = {BASE + slug: stamp(EPOCH) for slug in slugs[:200]}
    daemon = start(site)
    try:
        daemon.wait_for_urls(set(expected))
        for part in range(8):  # inserts streamed from the binlog, 100 a transaction
            at = EPOCH + 100 + part
            cms.add(slugs[200 + part * 100 : 300 + part * 100], at)
            expected.update({BASE + slug: stamp(at) for slug in slugs[200 + part * 100 :][:100]})
        daemon.wait_for_urls(set(expected), timeout=60)
        for n in range(10):  # bodies edited: these move
            cms.execute(f"UPDATE articles SET body = 'edited' WHERE slug = 'a{n}'", at=EPOCH + 200)
            expected[BASE + f"a{n}"] = stamp(EPOCH + 200)
        for n in range(10, 20):  # saved without change, counters bumped: these do not
            cms.execute(
                f"UPDATE articles SET updated_at = NOW(), body = body WHERE slug = 'a{n}'",
                at=EPOCH + 210,
            )
        for n in range(20, 30):
            cms.execute(
                f"UPDATE articles SET views = views + 1 WHERE slug = 'a{n}'", at=EPOCH + 220
            )
        daemon.wait_until(lambda: journal(site).get("updated") == 10, 30, "ten edits")
        daemon.kill()  # SIGKILL between changes
    finally:
        daemon.stop()
    for n in range(30, 35):
        cms.execute(f"DELETE FROM articles WHERE slug = 'a{n}'", at=EPOCH + 300)
        del expected[BASE + f"a{n}"]
    for n in range(35, 40):
        cms.execute(f"UPDATE articles SET status = 'draft' WHERE slug = 'a{n}'", at=EPOCH + 310)
        del expected[BASE + f"a{n}"]
    mariadb.stop()
    mariadb.start()  # a new binlog file; the position in the old one still leads on
    daemon = start(site)
    try:
        for n in range(40, 43):
            cms.execute(f"UPDATE articles SET slug = 'r{n}' WHERE slug = 'a{n}'", at=EPOCH + 320)
            del expected[BASE + f"a{n}"]
            expected[BASE + f"r{n}"] = stamp(EPOCH + 320)
        # One save as WordPress trashes a post: renamed while still published, then trashed,
        # two transactions of one request (a connection each would leave a login between
        # them, past the reader's 0.1 s of quiet on a busy host).
        cms.execute_each(
            "UPDATE articles SET slug = 'a43__trashed' WHERE slug = 'a43'",
            "UPDATE articles SET status = 'trash' WHERE slug = 'a43__trashed'",
            at=EPOCH + 330,
        )
        del expected[BASE + "a43"]
        daemon.wait_until(lambda: published(site.out) == expected, 60, "the table's truth")
    finally:
        assert daemon.stop() == 0
    assert set(published(site.out)) == cms.live()
    with ledger(site) as conn:
        trashed = conn.execute("SELECT count(*) FROM urls WHERE loc LIKE '%trashed%'").fetchone()
        (cursor,) = conn.execute(
            "SELECT value FROM cursors WHERE name = 'changelog:cms'"
        ).fetchone()
    conn.close()
    assert trashed == (0,)
    # Each change applied once: new URLs (the renamed ones too), ten edits, the removals.
    assert journal(site) == {"new": 1003, "updated": 10, "gone": 14}
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        file, offset = cur.fetchone()[:2]
    assert json.loads(cursor) == {"file": file, "pos": offset}


def test_a_purged_position_is_reported_and_the_table_read_again(
    tmp_path: Path, mariadb: MariaDB
) -> None:
    cms = Cms(mariadb, "cms_purged")
    cms.add(["kept", "dropped", "edited"], EPOCH)
    site = binlog_site(tmp_path, cms.dsn())
    site.cli("build")
    assert set(published(site.out)) == {BASE + s for s in ("kept", "dropped", "edited")}
    cms.execute("DELETE FROM articles WHERE slug = 'dropped'", at=EPOCH + 10)
    cms.execute(
        "UPDATE articles SET body = 'new', updated_at = NOW() WHERE slug = 'edited'", at=EPOCH + 20
    )
    cms.add(["added"], EPOCH + 30)
    purge_to = purge(mariadb)
    built = site.cli("build")
    assert "was purged before sitemapd read it" in built.stderr
    (position,) = json.loads(site.cli("status", "--json").stdout)["changelogs"]
    assert json.loads(position["cursor"])["file"] == purge_to
    assert position["error"] is None
    # The snapshot knows what exists, not when it changed: the row's own updated_at.
    assert published(site.out) == {
        BASE + "kept": stamp(EPOCH),
        BASE + "edited": stamp(EPOCH + 20),
        BASE + "added": stamp(EPOCH + 30),
    }


def test_binlog_settings_and_rights_are_checked_with_the_fix(
    tmp_path: Path, mariadb: MariaDB
) -> None:
    cms = Cms(mariadb, "cms_checks")
    site = binlog_site(tmp_path, cms.dsn())
    for setting, value, says in (
        ("binlog_format", "MIXED", "binlog_format is MIXED; mode 'binlog' needs binlog_format=ROW"),
        ("binlog_row_image", "MINIMAL", "needs binlog_row_image=FULL"),
        ("binlog_row_metadata", "MINIMAL", "needs binlog_row_metadata=FULL"),
    ):
        with mariadb.connect() as conn, conn.cursor() as cur:
            cur.execute(f"SET GLOBAL {setting} = '{value}'")
        try:
            failed = site.cli("build", check=False)
        finally:
            with mariadb.connect() as conn, conn.cursor() as cur:
                cur.execute(f"SET GLOBAL {setting} = DEFAULT")
                cur.execute(
                    f"SET GLOBAL {setting} = '{'ROW' if setting == 'binlog_format' else 'FULL'}'"
                )
        assert failed.returncode != 0
        assert says in failed.stderr
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("CREATE USER 'reader'@'127.0.0.1' IDENTIFIED BY 'pw-reader'")
        cur.execute("GRANT SELECT ON *.* TO 'reader'@'127.0.0.1'")
    (tmp_path / "lacking").mkdir()
    lacking = binlog_site(tmp_path / "lacking", mariadb.dsn("cms_checks", "reader", "pw-reader"))
    failed = lacking.cli("build", check=False)
    assert failed.returncode != 0
    assert "GRANT REPLICATION CLIENT" in failed.stderr
    assert "pw-reader" not in failed.stderr
    with mariadb.connect() as conn, conn.cursor() as cur:
        cur.execute("GRANT REPLICATION CLIENT ON *.* TO 'reader'@'127.0.0.1'")
    failed = lacking.cli("build", check=False)
    assert failed.returncode != 0
    assert "GRANT REPLICATION SLAVE" in failed.stderr


def test_a_daemon_killed_mid_backlog_applies_nothing_twice(
    tmp_path: Path, mariadb: MariaDB
) -> None:
    cms = Cms(mariadb, "cms_backlog")
    site = binlog_site(tmp_path, cms.dsn(), "")
    site.config.write_text(
        site.config.read_text().replace('name = "cms"', 'name = "cms"\nbatch_size = 50')
    )
    daemon = start(site)
    try:
        daemon.wait_ready()
        for part in range(20):
            cms.add([f"b{part}-{n}" for n in range(100)], EPOCH + part)
        daemon.wait_until(lambda: bool(published(site.out)), 30, "the first rows")
        daemon.proc.send_signal(signal.SIGKILL)
        daemon.proc.wait()
    finally:
        daemon.stop()
    daemon = RunningDaemon(site)
    try:
        daemon.wait_until(lambda: len(published(site.out)) == 2000, 60, "every row")
    finally:
        assert daemon.stop() == 0
    assert journal(site) == {"new": 2000}


def test_a_commit_wakes_the_daemon_before_its_poll(tmp_path: Path, mariadb: MariaDB) -> None:
    cms = Cms(mariadb, "cms_wake")
    site = binlog_site(tmp_path, cms.dsn() + "?ssl_disabled=true")
    site.config.write_text(
        site.config.read_text().replace("poll_interval = 0.2", "poll_interval = 600")
    )
    daemon = start(site)
    try:
        for n in range(3):  # each a wake-up of its own, once the last was read
            cms.add([f"w{n}"], EPOCH + n)
            daemon.wait_for_urls({BASE + f"w{m}" for m in range(n + 1)}, timeout=60)
            # `status` asks the server without taking the stream from the daemon.
            (position,) = json.loads(site.cli("status", "--json").stdout)["changelogs"]
            assert (position["waiting"], position["error"]) == (None, None)
            assert "following (cursor" in site.cli("status").stdout
            if n == 0:  # a server restart under the running daemon
                mariadb.stop()
                mariadb.start()
    finally:
        assert daemon.stop() == 0


def test_a_row_without_a_url_is_rejected_with_the_reason(tmp_path: Path, mariadb: MariaDB) -> None:
    cms = Cms(mariadb, "cms_no_url")
    site = binlog_site(tmp_path, cms.dsn())
    site.cli("build")  # the snapshot; what follows comes from the binlog
    cms.add(["fine"], EPOCH)
    cms.execute(
        "INSERT INTO articles (slug, status, title, body) VALUES (NULL, 'publish', 'x', 'y')",
        at=EPOCH,
    )
    built = site.cli("build")
    assert set(published(site.out)) == {BASE + "fine"}
    status = site.cli("status").stdout + built.stderr
    assert "url_template needs slug, which is NULL" in status


def test_a_source_switched_from_its_change_table_to_the_binlog_reads_the_table(
    tmp_path: Path, mariadb: MariaDB
) -> None:
    cms = Cms(mariadb, "cms_switch")
    multi = CLIENT.MULTI_STATEMENTS
    with mariadb.connect("cms_switch", client_flag=multi) as conn, conn.cursor() as cur:
        cur.execute(run_cli("changelog-sql", "--mysql").stdout)
        while cur.nextset():
            pass
    cms.add(["one", "two"], EPOCH)
    site = binlog_site(tmp_path, cms.dsn())
    binlog = site.config.read_text()
    table_mode = cms.dsn().replace("mysql://", "mysql+pymysql://")
    site.config.write_text(
        binlog.split("[[source]]")[0]
        + f'[[source]]\ntype = "changelog"\ndsn = "{table_mode}"\nname = "cms"\n'
    )
    site.cli("build")  # the change table's cursor, an id
    assert set(published(site.out)) == {BASE + "one", BASE + "two"}
    cms.execute("UPDATE articles SET status = 'draft' WHERE slug = 'two'", at=EPOCH + 10)
    site.config.write_text(binlog)
    built = site.cli("build")
    assert "is not one of mode 'binlog' (was the mode changed?)" in built.stderr
    assert published(site.out) == {BASE + "one": stamp(EPOCH)}
