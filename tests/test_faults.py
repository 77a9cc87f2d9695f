"""Faults `sitemapd run` must notice, report honestly and survive (issue 14, items 4-10).

Each fault is made for real: files replaced, folders deleted, a log that appears late,
descriptor limits lowered on the running daemon, file systems mounted read-only or full
in a private mount namespace.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Site, page, published, snapshot
from daemon_harness import RunningDaemon, http_port, request, start, u
from supervisor import Supervisor, start_supervised

DAEMON = "[daemon]\ndebounce = 0.2\nmax_delay = 2\n"
HTTP = '[http]\nlisten = "127.0.0.1:0"\n'
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


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
    problems = json.loads(site.cli("status", "--json").stdout)["crawl_problems"]
    return "\n".join(problem["message"] for problem in problems)


def _can_mount() -> bool:
    """True when a private mount namespace can mount a tmpfs here (root, util-linux)."""
    probe = ["unshare", "--mount", "mount", "-t", "tmpfs", "tmpfs", "/mnt"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30, check=False).returncode == 0
    except OSError:
        return False


# Skipped locally where impossible; under CI=true they run, and fail if they cannot.
_CI = os.environ.get("CI") == "true"
needs_mounts = pytest.mark.skipif(
    not _CI and not _can_mount(), reason="cannot mount file systems here"
)


def in_namespace(mount: str, command: str) -> list[str]:
    """Return the argv running the shell `command` in a private mount namespace (nothing
    leaks to the host's mounts) after the shell `mount`."""
    return ["unshare", "--mount", "sh", "-c", f"{mount} && exec {command}"]


def sitemapd(site: Site, command: str) -> str:
    """Return the shell command running `sitemapd COMMAND` on the site's config."""
    return f"{sys.executable} -m sitemapd {command} -c {site.config}"


def run_in_namespace(site: Site, mount: str, command: str) -> subprocess.CompletedProcess[str]:
    """Run `sitemapd COMMAND` after the shell `mount`, in a private mount namespace."""
    argv = in_namespace(mount, sitemapd(site, command))
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


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
    assert "no such database file" in site.cli("status").stdout
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


def test_a_root_swapped_for_a_link_to_a_release_is_watched_where_it_leads(
    site: Site, daemons: list
) -> None:
    # A deploy that moves the folder away and links a release in its place: the pages
    # written through the link after that are seen (the watch was on the link itself).
    site.configure(source=DAEMON)
    site.write("index.html", page("Home"))
    daemon = start(site)
    daemons.append(daemon)
    daemon.wait_for_urls(u(""))
    release = site.base / "releases" / "1"
    shutil.copytree(site.root, release)
    site.root.rename(site.base / "site.old")
    site.root.symlink_to(release)
    (site.root / "swapped.html").write_text(page("Swapped"))
    daemon.wait_for_urls(u("", "swapped.html"))
    (site.root / "later.html").write_text(page("Later"))
    daemon.wait_for_urls(u("", "swapped.html", "later.html"))
    # The link pointed at another release: watched there.
    other = site.base / "releases" / "2"
    shutil.copytree(release, other)
    (site.base / "next").symlink_to(other)
    (site.base / "next").rename(site.root)
    (site.root / "next.html").write_text(page("Next"))
    daemon.wait_for_urls(u("", "swapped.html", "later.html", "next.html"))
    assert daemon.stop() == 0


# 6. An access log that cannot be read for a while -----------------------------------------


def test_an_access_log_created_after_start_is_read_and_health_recovers(
    site: Site, daemons: list
) -> None:
    access_log = site.base / "access.log"  # nginx has not created it yet
    site.configure(
        source=DAEMON + HTTP,
        extra=f'[[source]]\nname = "nginx"\ntype = "accesslog"\npath = "{access_log}"\n'
        "poll_interval = 0.2\n",
    )
    site.write("index.html", page("Home"))
    site.write("a.html", page("A"))
    daemon = start(site)
    daemons.append(daemon)
    port = http_port(daemon)
    assert unhealthy(port, "nginx", "access.log")
    access_log.write_text(log_line("/a.html", 404))
    daemon.wait_until(lambda: health(port) == (200, "ok\n"), 30, "healthy once the log is read")
    daemon.wait_until(lambda: "a.html: googlebot got 404" in crawl_problems(site), 30)
    # Rotation leaves a gap: the log is gone for a while, then reading goes on.
    access_log.unlink()
    daemon.wait_until(lambda: unhealthy(port, "nginx"), 30, "the missing log reported")
    access_log.write_text(log_line("/", 503))
    daemon.wait_until(lambda: "/: googlebot got 503" in crawl_problems(site), 60)
    daemon.wait_until(lambda: health(port) == (200, "ok\n"), 30, "healthy again")
    assert daemon.stop() == 0


# 7. The state folder deleted under a running daemon --------------------------------------


def test_a_deleted_state_folder_stops_the_daemon_writing(site: Site, daemons: list) -> None:
    site.configure(source=DAEMON + HTTP)
    site.write("index.html", page("Home"))
    daemon = start(site)
    daemons.append(daemon)
    port = http_port(daemon)
    daemon.wait_for_urls(u(""))
    shutil.rmtree(site.state)
    daemon.wait_until(lambda: unhealthy(port, str(site.state)), 10, "the lost state reported")
    before = snapshot(site.out)
    site.write("a.html", page("A"))
    daemon.wait_for_log(r"not writing: the state folder", 30)
    assert snapshot(site.out) == before
    assert not site.state.exists()  # nothing wrote a new, empty ledger there
    # `build` is now the only writer; the daemon writes neither its ledger nor its output.
    assert site.build().returncode == 0
    built = snapshot(site.out)
    assert set(published(site.out)) == u("", "a.html")
    site.write("b.html", page("B"))
    daemon.wait_for_log(r"not writing: the state folder", 30, count=2)
    assert daemon.stop() == 0
    assert snapshot(site.out) == built


# 8. Transient read errors -----------------------------------------------------------------


def set_open_files(pid: int, soft: int) -> None:
    """Set the soft RLIMIT_NOFILE of a running process."""
    subprocess.run(["prlimit", f"--pid={pid}", f"--nofile={soft}:"], check=True)


@pytest.mark.skipif(not _CI and shutil.which("prlimit") is None, reason="no prlimit here")
def test_a_page_that_hits_emfile_is_retried_and_health_is_degraded_meanwhile(
    site: Site, supervisor: Supervisor
) -> None:
    site.configure(source=DAEMON)
    site.write("index.html", page("Home"))
    daemon = start_supervised(site, supervisor)
    try:
        supervisor.wait_for("READY", "1")
        daemon.wait_for_urls(u(""))
        set_open_files(daemon.proc.pid, 3)  # every descriptor the daemon opens fails now
        (site.root / "a.html").write_text(page("A"))
        found = supervisor.wait_for("STATUS", timeout=30)
        while "a.html: temporarily unreadable" not in supervisor.messages[found][1]["STATUS"]:
            found = supervisor.wait_for("STATUS", after=found + 1, timeout=30)
        assert "Too many open files" in supervisor.messages[found][1]["STATUS"]
        assert "skipped a.html" not in daemon.log()  # not counted as invalid
        set_open_files(daemon.proc.pid, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        # No event comes now: only the retry can publish it.
        daemon.wait_for_urls(u("", "a.html"), 60)
        healthy = supervisor.wait_for("STATUS", after=found + 1, timeout=30)
        while "UNHEALTHY" in supervisor.messages[healthy][1]["STATUS"]:
            healthy = supervisor.wait_for("STATUS", after=healthy + 1, timeout=30)
        assert daemon.stop() == 0
    finally:
        if daemon.proc.poll() is None:
            daemon.kill()


@needs_mounts
def test_a_page_that_gives_eio_fails_build_for_now_and_keeps_its_entry(site: Site) -> None:
    site.write("index.html", page("Home"))
    target = site.write("x.html", page("X"))
    site.build()
    before = published(site.out)
    target.write_text(page("X, edited"))
    # The build reads its own /proc/PID/mem there, at an address never mapped: EIO.
    result = run_in_namespace(site, f"mount --bind /proc/$$/mem {target}", "build")
    assert result.returncode == 1
    assert "x.html: unreadable for now (Input/output error)" in result.stderr
    assert "0 invalid" in result.stdout
    assert published(site.out) == before
    assert "1 updated" in site.build().stdout  # readable again


def built_list(site: Site) -> Path:
    """Build a site of a page and a URL list of one URL; return the list's path."""
    site.write("index.html", page("Home"))
    listing = site.base / "urls.txt"
    listing.write_text("https://example.com/listed\n")
    site.configure(extra='[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"\n')
    site.build()
    assert "https://example.com/listed" in published(site.out)
    return listing


def test_a_url_list_replaced_by_a_fifo_is_refused_at_once_and_keeps_its_urls(site: Site) -> None:
    listing = built_list(site)
    before = published(site.out)
    listing.unlink()
    os.mkfifo(listing)
    # Nobody writes the FIFO: reading it would hang the build, and its size (0) would
    # read as an empty list that removes every URL.
    result = site.cli("build", check=False)
    assert result.returncode == 1
    assert f"list: {listing} is not a regular file" in result.stderr
    assert published(site.out) == before


def test_a_url_list_emptied_in_place_is_an_outage_that_keeps_its_urls(site: Site) -> None:
    listing = built_list(site)
    before = published(site.out)
    # Truncated where it stands (`: > urls.txt`): its known chunks are gone, none is new.
    listing.write_bytes(b"")
    # Every build says so while it lasts (a cron job's every run fails), not the first
    # alone: the list is read again, and no build that follows ends as quiet.
    for _ in range(3):
        result = site.cli("build", check=False)
        assert result.returncode == 1, result.stderr
        assert "list: a full scan found nothing: treated as an outage" in result.stderr
        assert "Traceback" not in result.stderr
        assert published(site.out) == before


# 9. A damaged ledger, a read-only output, a full state file system ------------------------


def test_an_empty_ledger_file_is_refused_naming_it(site: Site) -> None:
    site.write("index.html", page("Home"))
    site.state.mkdir()
    ledger = site.state / "ledger.sqlite3"
    ledger.write_bytes(b"")
    for command in ("build", "run"):
        result = site.cli(command, check=False)
        assert result.returncode == 1
        assert result.stderr.count("\n") == 1, result.stderr
        assert str(ledger) in result.stderr
        assert "is empty" in result.stderr
        assert "delete it" in result.stderr
        assert ledger.stat().st_size == 0  # history is not silently started over


@needs_mounts
@pytest.mark.parametrize("command", ["build", "run"])
def test_a_full_state_file_system_is_one_clear_line(site: Site, command: str) -> None:
    site.write("index.html", page("Home"))
    site.state.mkdir()
    fill = f"dd if=/dev/zero of={site.state}/fill bs=4k count=64 2>/dev/null; true"
    result = run_in_namespace(
        site, f"mount -t tmpfs -o size=64k tmpfs {site.state} && {fill}", command
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "No space left on device" in result.stderr or "disk is full" in result.stderr
    assert str(site.state) in result.stderr


@needs_mounts
def test_a_read_only_output_file_system_is_one_clear_line(site: Site) -> None:
    site.write("index.html", page("Home"))
    site.out.mkdir()
    result = run_in_namespace(site, f"mount -t tmpfs -o ro tmpfs {site.out}", "build")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Read-only file system" in result.stderr
    assert str(site.out) in result.stderr


@needs_mounts
def test_a_read_only_output_at_start_keeps_the_daemon_retrying_not_ready(site: Site) -> None:
    site.configure(source=DAEMON)
    site.write("index.html", page("Home"))
    site.out.mkdir()
    proc = subprocess.Popen(
        in_namespace(f"mount -t tmpfs -o ro tmpfs {site.out}", sitemapd(site, "run")),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if "started, not ready" in line:
                break
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=30)
        log = "".join(lines) + rest
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "Traceback" not in log
    assert "Read-only file system" in log
    assert not re.search(r"daemon: ready", log)


# 10. Honest health --------------------------------------------------------------------------


def test_a_deleted_output_folder_is_published_again_at_once(site: Site, daemons: list) -> None:
    site.configure(source=DAEMON + HTTP)
    site.write("index.html", page("Home"))
    daemon = start(site)
    daemons.append(daemon)
    port = http_port(daemon)
    daemon.wait_for_urls(u(""))
    shutil.rmtree(site.out)
    # The daemon watches the output folder for its own files: no reconcile (a minute
    # away) is needed to publish them again.
    deadline = time.monotonic() + 5
    daemon.wait_for_urls(u(""), 30)
    assert time.monotonic() < deadline
    assert "was replaced or deleted under sitemapd: republishing" in daemon.log()
    daemon.wait_until(lambda: health(port) == (200, "ok\n"), 30, "healthy")
    assert daemon.stop() == 0


def test_status_names_the_daemon_its_health_and_last_error(site: Site, daemons: list) -> None:
    access_log = site.base / "access.log"
    site.configure(
        source=DAEMON,
        extra=f'[[source]]\nname = "nginx"\ntype = "accesslog"\npath = "{access_log}"\n',
    )
    site.write("index.html", page("Home"))
    daemon = start(site)
    daemons.append(daemon)

    def report() -> dict:
        return json.loads(site.cli("status", "--json").stdout)["daemon"]

    daemon.wait_until(lambda: report()["last_error"] is not None, 30, "the error in status")
    found = report()
    assert found["pid"] == daemon.proc.pid
    assert found["healthy"] is False
    assert any("nginx" in problem for problem in found["problems"])
    assert "access.log" in found["last_error"]
    # The source named once: "nginx: ...", never "nginx: nginx: ...".
    assert found["last_error"].startswith("nginx: ")
    assert found["last_error"].count("nginx") == 1
    text = site.cli("status").stdout
    assert f"daemon:       pid {daemon.proc.pid}, UNHEALTHY: nginx" in text
    assert re.search(r"last error: .*access\.log", text)
    access_log.write_text(log_line("/", 200))
    daemon.wait_until(lambda: report()["healthy"], 30, "healthy in status")
    assert daemon.stop() == 0
    assert json.loads(site.cli("status", "--json").stdout)["daemon"]["pid"] is None
    assert "daemon:       not running" in site.cli("status").stdout


def test_the_log_says_ready_only_after_a_first_publish_that_worked(
    site: Site, daemons: list
) -> None:
    site.configure(source=DAEMON)
    site.write("index.html", page("Home"))
    site.out.write_text("not a folder")  # publishing cannot succeed
    daemon = RunningDaemon(site)
    daemons.append(daemon)
    daemon.wait_for_log(r"first publish failed")
    daemon.wait_for_log(r"started, not ready")
    assert not re.search(r"sitemapd.daemon: ready", daemon.log())
    site.out.unlink()
    daemon.wait_ready(60)
    daemon.wait_for_urls(u(""))
    assert daemon.stop() == 0


def test_quiet_polls_move_neither_last_publish_nor_status(
    site: Site, supervisor: Supervisor
) -> None:
    access_log = site.base / "access.log"
    access_log.write_text(log_line("/", 200))
    site.configure(
        source="[daemon]\ndebounce = 0.05\n" + HTTP,
        extra=f'[[source]]\ntype = "accesslog"\npath = "{access_log}"\npoll_interval = 0.1\n',
    )
    site.write("index.html", page("Home"))
    daemon = start_supervised(site, supervisor)
    try:
        ready = supervisor.wait_for("READY", "1")
        port = http_port(daemon)
        last = metric(port, "sitemapd_last_publish_timestamp_seconds")
        batches = metric(port, "sitemapd_batch_seconds_count")
        daemon.wait_until(
            lambda: metric(port, "sitemapd_batch_seconds_count") >= batches + 20, 30, "20 polls"
        )
        assert metric(port, "sitemapd_last_publish_timestamp_seconds") == last
        supervisor.pump()
        statuses = [f for _, f in supervisor.messages[ready + 1 :] if "STATUS" in f]
        assert len(statuses) <= 1, statuses
    finally:
        assert daemon.stop() == 0


def test_watchdog_pings_come_at_half_the_interval(site: Site, supervisor: Supervisor) -> None:
    site.write("index.html", page("Home"))
    daemon = start_supervised(site, supervisor, watchdog_usec="4000000")
    try:
        ping = supervisor.wait_for("READY", "1")
        times = []
        for _ in range(3):
            ping = supervisor.wait_for("WATCHDOG", "1", after=ping + 1)
            times.append(supervisor.messages[ping][0])
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert all(1.5 < gap < 2.5 for gap in gaps), gaps  # WATCHDOG_USEC / 2
    finally:
        assert daemon.stop() == 0


def test_a_taken_http_port_is_an_error_naming_the_setting(site: Site) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        site.configure(extra=f'[http]\nlisten = "127.0.0.1:{port}"\n')
        site.write("index.html", page("Home"))
        result = site.cli("run", check=False)
    assert result.returncode == 1, result.stderr
    assert f"http.listen: cannot listen on 127.0.0.1:{port} (Address already in use)" in (
        result.stderr
    )
