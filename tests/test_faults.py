"""Faults `sitemapd run` must notice, report honestly and survive (issue 14, items 4-10).

Each fault is made for real: files replaced, folders deleted, a log that appears late,
descriptor limits lowered on the running daemon, file systems mounted read-only or full
in a private mount namespace.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Site, page, published
from daemon_harness import RunningDaemon, http_port, request, start
from test_systemd import Supervisor

DAEMON = "[daemon]\ndebounce = 0.2\nmax_delay = 2\n"
HTTP = '[http]\nlisten = "127.0.0.1:0"\n'
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


def u(*paths: str) -> set[str]:
    return {f"https://example.com/{p}" for p in paths}


@pytest.fixture
def daemons() -> Iterator[list[RunningDaemon]]:
    """Daemons started by a test; killed at teardown if the test left them running."""
    running: list[RunningDaemon] = []
    yield running
    for daemon in running:
        if daemon.proc.poll() is None:
            daemon.kill()


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    sup = Supervisor(tmp_path / "notify.sock")
    yield sup
    sup.sock.close()


def health(port: int) -> tuple[int, str]:
    """Return the status and body of `/healthz`."""
    status, _, body = request(port, "/healthz")
    return status, body.decode()


def unhealthy(port: int, *words: str) -> bool:
    """True when `/healthz` answers 503 naming every one of `words`."""
    status, body = health(port)
    return status == 503 and all(word in body for word in words)


def metric(port: int, name: str) -> float:
    """Return the value of an unlabelled metric from `/metrics`."""
    _, _, body = request(port, "/metrics")
    found = re.search(rf"^{name} (\S+)$", body.decode(), re.MULTILINE)
    assert found is not None, name
    return float(found.group(1))


def log_line(target: str, status: int) -> str:
    """Return a combined-format line of Googlebot fetching `target` now."""
    stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime())
    return f'66.249.66.1 - - [{stamp}] "GET {target} HTTP/1.1" {status} 512 "-" "{GOOGLEBOT}"\n'


def crawl_problems(site: Site) -> str:
    return "\n".join(json.loads(site.cli("status", "--json").stdout)["crawl_problems"])


# 4. A replaced or deleted SQLite change log ----------------------------------------------


def write_change_log(path: Path, *urls: str) -> None:
    """Put a CMS database whose change log holds `urls` at `path`, as a restore does."""
    temp = path.with_name(path.name + ".restore")
    temp.unlink(missing_ok=True)
    conn = sqlite3.connect(temp)
    with conn:
        conn.execute(
            "CREATE TABLE sitemap_changes (id INTEGER PRIMARY KEY AUTOINCREMENT, "
            "url TEXT NOT NULL, op TEXT NOT NULL DEFAULT 'upsert', "
            "changed_at TEXT NOT NULL DEFAULT '2026-01-01T00:00:00Z')"
        )
        conn.executemany("INSERT INTO sitemap_changes (url) VALUES (?)", [(u,) for u in urls])
    conn.close()
    temp.replace(path)


def test_a_replaced_or_deleted_sqlite_change_log_is_reopened_and_reported(
    tmp_path: Path, daemons: list
) -> None:
    db = tmp_path / "cms.db"
    write_change_log(db, "/a")
    site = Site(tmp_path)
    site.config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        f'[daemon]\ndebounce = 0.1\n{HTTP}[[source]]\nname = "cms"\ntype = "changelog"\n'
        f'dsn = "sqlite:///{db}"\npoll_interval = 0.2\n'
    )
    daemon = start(site)
    daemons.append(daemon)
    port = http_port(daemon)
    daemon.wait_for_urls(u("a"))
    write_change_log(db, "/a", "/b")  # restored from a backup that holds one more row
    daemon.wait_for_urls(u("a", "b"))
    db.unlink()
    daemon.wait_until(lambda: unhealthy(port, "cms", str(db)), 30, "the missing file reported")
    assert set(published(site.out)) == u("a", "b")
    write_change_log(db, "/a", "/b", "/c")
    daemon.wait_for_urls(u("a", "b", "c"), 60)
    daemon.wait_until(lambda: health(port) == (200, "ok\n"), 30, "healthy again")
    assert daemon.stop() == 0


# 5. A watched root deleted and recreated ---------------------------------------------------


def test_files_written_into_a_recreated_root_are_seen(site: Site, daemons: list) -> None:
    site.configure(source=DAEMON)
    site.write("index.html", page("Home"))
    daemon = start(site)
    daemons.append(daemon)
    daemon.wait_for_urls(u(""))
    for round_ in range(3):
        # `rm -rf` and a deploy into a new folder of the same name, which often gets the
        # old folder's inode number back: only the watch itself can tell it is gone.
        shutil.rmtree(site.root)
        site.root.mkdir()
        (site.root / "index.html").write_text(page("Home"))
        (site.root / f"deploy{round_}.html").write_text(page("Deploy"))
        daemon.wait_for_urls(u("", f"deploy{round_}.html"))
        (site.root / f"later{round_}.html").write_text(page("Later"))
        daemon.wait_for_urls(u("", f"deploy{round_}.html", f"later{round_}.html"))
    assert daemon.stop() == 0
