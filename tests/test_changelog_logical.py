"""`mode = "logical"`: `sitemapd run`/`build` following a CMS table on a real PostgreSQL
through a logical replication slot (pgoutput), into published sitemaps."""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import datetime
from pathlib import Path

from conftest import Site, assert_valid, published
from daemon_harness import http_port, request, start
from pg import Postgres

from sitemapd.core import w3c

BASE = "https://example.com/news/"
SNAPSHOT_TIME = "2023-11-14T22:13:20+00:00"


class Cms:
    """A CMS database whose `articles` rows are pages when published."""

    def __init__(self, server: Postgres, name: str) -> None:
        self.server = server
        self.name = name
        self.dsn = server.create_database(name)
        self.execute(
            "CREATE TABLE articles (id bigserial PRIMARY KEY, slug text, status text, "
            "title text, body text, views int DEFAULT 0, published_at timestamptz, "
            "updated_at timestamptz)",
            "ALTER TABLE articles REPLICA IDENTITY FULL",
        )

    def execute(self, *statements: str) -> str:
        """Run `statements` in one transaction; return its commit time, W3C."""
        with self.server.connect(self.name, autocommit=False) as conn:
            for statement in statements:
                conn.execute(statement)  # type: ignore[arg-type]
            (xid,) = conn.execute("SELECT pg_current_xact_id()::text").fetchone()
            conn.commit()
            (when,) = conn.execute(
                f"SELECT pg_xact_commit_timestamp('{xid}'::xid8::xid)"  # type: ignore[arg-type]
            ).fetchone()
        assert isinstance(when, datetime)
        return w3c.format_epoch(when.timestamp())

    def add(self, slugs: list[str], updated: str = "now()") -> str:
        values = ", ".join(
            f"('{slug}', 'publish', 'Title {slug}', 'Body {slug}', now(), {updated})"
            for slug in slugs
        )
        return self.execute(
            "INSERT INTO articles (slug, status, title, body, published_at, updated_at) "
            f"VALUES {values}"
        )

    def live(self) -> set[str]:
        with self.server.connect(self.name) as conn:
            rows = conn.execute("SELECT slug FROM articles WHERE status = 'publish'").fetchall()
        return {BASE + slug for (slug,) in rows}

    def confirmed(self) -> str:
        with self.server.connect(self.name) as conn:
            row = conn.execute(
                "SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                "WHERE slot_name = 'sitemapd'"
            ).fetchone()
        return "" if row is None else str(row[0])


def logical_site(tmp_path: Path, dsn: str) -> Site:
    site = Site(tmp_path)
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        "[daemon]\ndebounce = 0.1\n"
        f'[[source]]\ntype = "changelog"\nmode = "logical"\ndsn = "{dsn}"\n'
        'table = "public.articles"\nurl_template = "/news/{slug}"\n'
        'live = { status = "publish" }\nfingerprint_columns = ["title", "body"]\n'
        'title = "title"\npublished = "published_at"\nchanged_at = "updated_at"\n'
        'poll_interval = 0.2\nname = "cms"\n'
    )
    return site


def lsn(text: str) -> int:
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16) if low else 0


def journal(site: Site) -> dict[str, int]:
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        found = conn.execute("SELECT kind, count(*) FROM journal_entries GROUP BY kind").fetchall()
    conn.close()
    return dict(found)


def cursor(site: Site) -> str:
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        row = conn.execute("SELECT value FROM cursors WHERE name = 'changelog:cms'").fetchone()
    conn.close()
    return "" if row is None else str(row[0])


def test_a_table_followed_through_crash_and_restart(tmp_path: Path, postgres: Postgres) -> None:
    cms = Cms(postgres, "cms_logical")
    slugs = [f"a{n}" for n in range(1000)]
    cms.add(slugs[:200], f"'{SNAPSHOT_TIME}'")  # there before sitemapd: the snapshot's
    # Bodies big and random enough to be TOASTed out of line: an update that leaves them
    # sends them as "unchanged", which must not read as a change.
    cms.execute(
        "UPDATE articles SET body = (SELECT string_agg(md5(random()::text || g), '') "
        "FROM generate_series(1, 300) g) WHERE slug IN "
        + "("
        + ", ".join(f"'a{n}'" for n in range(20, 30))
        + ")"
    )
    site = logical_site(tmp_path, cms.dsn)
    expected = dict.fromkeys((BASE + slug for slug in slugs[:200]), SNAPSHOT_TIME)
    daemon = start(site)
    try:
        daemon.wait_for_urls(set(expected))
        for part in range(8):
            batch = slugs[200 + part * 100 : 300 + part * 100]
            expected.update(dict.fromkeys((BASE + s for s in batch), cms.add(batch)))
        daemon.wait_for_urls(set(expected), timeout=60)
        for n in range(10):  # bodies edited: these move
            expected[BASE + f"a{n}"] = cms.execute(
                f"UPDATE articles SET body = 'edited' WHERE slug = 'a{n}'"
            )
        for n in range(10, 20):  # saved without change, counters bumped: these do not
            cms.execute(f"UPDATE articles SET updated_at = now(), body = body WHERE slug = 'a{n}'")
        for n in range(20, 30):
            cms.execute(f"UPDATE articles SET views = views + 1 WHERE slug = 'a{n}'")
        daemon.wait_until(lambda: journal(site).get("updated") == 10, 30, "ten edits")
        daemon.kill()  # SIGKILL between changes
    finally:
        daemon.stop()
    for n in range(30, 35):
        cms.execute(f"DELETE FROM articles WHERE slug = 'a{n}'")
        del expected[BASE + f"a{n}"]
    for n in range(35, 40):
        cms.execute(f"UPDATE articles SET status = 'draft' WHERE slug = 'a{n}'")
        del expected[BASE + f"a{n}"]
    postgres.stop("immediate")
    postgres.start()
    daemon = start(site)
    try:
        for n in range(40, 43):
            del expected[BASE + f"a{n}"]
            expected[BASE + f"r{n}"] = cms.execute(
                f"UPDATE articles SET slug = 'r{n}' WHERE slug = 'a{n}'"
            )
        # One save as WordPress trashes a post: renamed while still published, then trashed,
        # two transactions of one request on one connection (a connection each would leave
        # a backend's start between them, past the reader's 0.1 s of quiet on a busy host).
        with postgres.connect(cms.name) as conn:
            conn.execute("UPDATE articles SET slug = 'a43__trashed' WHERE slug = 'a43'")
            conn.execute("UPDATE articles SET status = 'trash' WHERE slug = 'a43__trashed'")
        del expected[BASE + "a43"]
        daemon.wait_until(lambda: published(site.out) == expected, 60, "the table's truth")
        # The slot advanced to what the ledger holds (or past it, over WAL that held no
        # change of the table, once the stream is idle).
        daemon.wait_until(
            lambda: lsn(cms.confirmed()) >= lsn(cursor(site)) > 0, 30, "the slot confirmed"
        )
    finally:
        assert daemon.stop() == 0
    assert set(published(site.out)) == cms.live()
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        trashed = conn.execute("SELECT count(*) FROM urls WHERE loc LIKE '%trashed%'").fetchone()
    conn.close()
    assert trashed == (0,)
    assert journal(site) == {"new": 1003, "updated": 10, "gone": 14}


def test_a_dropped_slot_is_reported_and_the_table_read_again(
    tmp_path: Path, postgres: Postgres
) -> None:
    cms = Cms(postgres, "cms_slot_gone")
    cms.add(["kept", "dropped", "edited"], f"'{SNAPSHOT_TIME}'")
    site = logical_site(tmp_path, cms.dsn)
    site.cli("build")
    assert set(published(site.out)) == {BASE + s for s in ("kept", "dropped", "edited")}
    with postgres.connect("cms_slot_gone") as conn:
        conn.execute("SELECT pg_drop_replication_slot('sitemapd')")
    cms.execute("DELETE FROM articles WHERE slug = 'dropped'")
    edited = cms.execute(
        "UPDATE articles SET body = 'new', updated_at = now() WHERE slug = 'edited'"
    )
    built = site.cli("build")
    assert "replication slot sitemapd is gone" in built.stderr
    found = published(site.out)
    assert set(found) == {BASE + "kept", BASE + "edited"}
    assert found[BASE + "kept"] == SNAPSHOT_TIME
    # A snapshot knows the row's updated_at (the transaction's start), not its commit.
    moved = datetime.fromisoformat(found[BASE + "edited"]).timestamp()
    assert abs(moved - datetime.fromisoformat(edited).timestamp()) <= 1


def test_replica_identity_and_the_right_to_replicate_are_checked(
    tmp_path: Path, postgres: Postgres
) -> None:
    cms = Cms(postgres, "cms_checks")
    cms.execute("ALTER TABLE articles REPLICA IDENTITY DEFAULT")
    site = logical_site(tmp_path, cms.dsn)
    failed = site.cli("build", check=False)
    assert failed.returncode != 0
    assert "ALTER TABLE public.articles REPLICA IDENTITY FULL" in failed.stderr
    cms.execute("ALTER TABLE articles REPLICA IDENTITY FULL")
    with postgres.connect("cms_checks") as conn:
        conn.execute("CREATE ROLE reader LOGIN PASSWORD 'pw-reader'")
        conn.execute("GRANT SELECT ON articles TO reader")
    (tmp_path / "reader").mkdir()
    lacking = logical_site(
        tmp_path / "reader", cms.dsn.replace("postgres:pw-not-secret@", "reader:pw-reader@")
    )
    failed = lacking.cli("build", check=False)
    assert failed.returncode != 0
    assert "ALTER ROLE reader REPLICATION" in failed.stderr
    assert "pw-reader" not in failed.stderr


def test_a_commit_wakes_the_daemon_before_its_poll(tmp_path: Path, postgres: Postgres) -> None:
    cms = Cms(postgres, "cms_logical_wake")
    site = logical_site(tmp_path, cms.dsn)
    site.config.write_text(
        site.config.read_text().replace("poll_interval = 0.2", "poll_interval = 600")
    )
    daemon = start(site)
    try:
        for n in range(3):  # each a wake-up of its own, once the last was read
            cms.add([f"w{n}"])
            daemon.wait_for_urls({BASE + f"w{m}" for m in range(n + 1)}, timeout=60)
            # `status` asks the server without taking the stream from the daemon.
            (position,) = json.loads(site.cli("status", "--json").stdout)["changelogs"]
            assert (position["waiting"], position["error"]) == (None, None)
            assert "following (cursor" in site.cli("status").stdout
            if n == 0:  # a server restart under the running daemon
                postgres.stop("fast")
                postgres.start()
    finally:
        assert daemon.stop() == 0


def test_wal_kept_by_the_slot_is_measured_and_reported(tmp_path: Path, postgres: Postgres) -> None:
    cms = Cms(postgres, "cms_wal")
    cms.add(["first"])
    site = logical_site(tmp_path, cms.dsn)
    site.config.write_text(
        site.config.read_text().replace("[daemon]\n", '[http]\nlisten = "127.0.0.1:0"\n[daemon]\n')
        + 'slot = "walwatch"\n'
    )
    daemon = start(site)
    port = http_port(daemon)
    try:
        daemon.wait_for_urls({BASE + "first"})
        daemon.wait_until(
            lambda: (
                re.search(
                    r'sitemapd_changelog_retained_wal_bytes\{source="cms"\} \d',
                    request(port, "/metrics")[2].decode(),
                )
                is not None
            ),
            20,
            "the slot's WAL measured",
        )
        assert request(port, "/readyz")[0] == 200
        with postgres.connect("postgres") as admin:
            admin.execute("ALTER SYSTEM SET max_wal_size = '32MB'")
            admin.execute("SELECT pg_reload_conf()")
        try:
            # A transaction left open (having written) holds the slot's restart position
            # back while WAL is written past max_wal_size.
            cms.execute("CREATE TABLE hold (x int)")
            with postgres.connect("cms_wal", autocommit=False) as idle:
                idle.execute("INSERT INTO hold VALUES (1)")
                cms.execute(
                    "CREATE TABLE filler AS SELECT g, md5(g::text) AS h "
                    "FROM generate_series(1, 500000) g"
                )
                for _ in range(3):
                    cms.execute("INSERT INTO filler VALUES (0, 'x')")
                    with postgres.connect("postgres") as admin:
                        admin.execute("SELECT pg_switch_wal()")
                cms.add(["second"])  # read while the slot stays back
                daemon.wait_until(
                    lambda: "more than max_wal_size" in request(port, "/readyz")[2].decode(),
                    30,
                    "/readyz reporting the WAL kept",
                )
                assert request(port, "/readyz")[0] == 503
                metrics = request(port, "/metrics")[2].decode()
                kept = re.search(
                    r'sitemapd_changelog_retained_wal_bytes\{source="cms"\} (\S+)', metrics
                )
                assert kept is not None
                assert float(kept.group(1)) > 32 * 2**20
                status = site.cli("status").stdout
                assert "WAL kept:" in status
                assert "bound it on the server with max_slot_wal_keep_size" in status
                idle.rollback()
        finally:
            with postgres.connect("postgres") as admin:
                admin.execute("ALTER SYSTEM RESET max_wal_size")
                admin.execute("SELECT pg_reload_conf()")
    finally:
        assert daemon.stop() == 0
    with postgres.connect("cms_wal") as conn:
        conn.execute("SELECT pg_drop_replication_slot('walwatch')")


def test_the_first_build_counts_every_file_it_wrote(tmp_path: Path, postgres: Postgres) -> None:
    cms = Cms(postgres, "cms_first_build")
    cms.add(["one", "two"], f"'{SNAPSHOT_TIME}'")
    site = logical_site(tmp_path, cms.dsn)
    # The snapshot is published by the build's first batch, the stream read after it by
    # a second that writes nothing: the summary counts both.
    built = site.cli("build")
    assert_valid(site.out)
    files = [site.out / "sitemap.xml", site.out / "sitemap-1.xml"]
    size = sum(path.stat().st_size for path in files)
    assert built.stdout.startswith(
        f"2 new, 0 updated, 0 gone, 0 invalid; wrote 2 files ({size} bytes), removed 0 in "
    ), built.stdout
    assert f"wrote 2 files ({size} bytes)" in built.stderr
    assert set(published(site.out)) == {BASE + "one", BASE + "two"}
