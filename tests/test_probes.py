"""The sidecar's probes: /livez says whether the daemon's loops turn (the systemd
watchdog's heartbeat), /readyz (and /healthz) whether what is published is current."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import pytest
from conftest import Site, page, write_atomic
from daemon_harness import RunningDaemon, http_port, request, u

LIST = "https://example.com/listed\n"
ROBOTS = "User-agent: *\nDisallow: /private/\n"


def probe(port: int, path: str) -> tuple[int, str]:
    """Return the status and body of a probe, failing unless it answers within 1 s."""
    status, _, body = request(port, path, timeout=1)
    return status, body.decode().strip()


def open_writer(path: Path) -> int:
    """Return the writer end of the FIFO at `path`, opened once a reader has it open."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:  # ENXIO: no reader yet
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.mark.slow
def test_livez_fails_only_when_the_loops_stall(site: Site, daemons: list[RunningDaemon]) -> None:
    site.configure(
        site='robots_txt = "robots.txt"',
        extra='[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"\n'
        '[http]\nlisten = "127.0.0.1:0"\n'
        "[daemon]\ndebounce = 0.2\nmax_delay = 1\nstuck_after = 1\n",
    )
    write_atomic(site.base / "urls.txt", LIST)
    write_atomic(site.base / "robots.txt", ROBOTS)
    site.write("a.html", page("a", "text"))
    daemon = RunningDaemon(site)
    daemons.append(daemon)
    daemon.wait_ready()
    port = http_port(daemon)
    assert probe(port, "/livez") == (200, "ok")
    assert probe(port, "/readyz") == (200, "ok")
    assert b"sitemapd_live 1.0" in request(port, "/metrics", timeout=1)[2]

    # A source outage (its folder gone): not ready, but alive; a restart would not help.
    site.root.rename(site.base / "away")
    daemon.wait_until(lambda: probe(port, "/readyz")[0] == 503, 30, "not ready")
    assert probe(port, "/healthz")[0] == 503
    for _ in range(10):
        assert probe(port, "/livez") == (200, "ok")
        time.sleep(0.2)
    (site.base / "away").rename(site.root)
    daemon.wait_until(lambda: probe(port, "/readyz")[0] == 200, 30, "ready again")

    # The writer blocks for good in one read (a hung file system: here robots.txt
    # replaced by a FIFO nobody writes): the loops stop turning, and /livez says so
    # after `stuck_after`.
    rules = site.base / "robots.txt"
    fifo = site.base / "robots.fifo"
    os.mkfifo(fifo)
    fifo.replace(rules)
    try:
        daemon.wait_until(lambda: probe(port, "/livez")[0] == 503, 30, "stalled")
        _, body = probe(port, "/livez")
        assert body.startswith("stalled: writer stuck in one batch"), body
        assert probe(port, "/readyz")[0] == 503
        assert b"sitemapd_live 0.0" in request(port, "/metrics", timeout=1)[2]
    finally:
        # The FIFO's writer end frees the read; robots.txt is a file again before the
        # reader gets its bytes, so the batch's publish edits a file, not the FIFO.
        writer = open_writer(rules)
        try:
            write_atomic(rules, ROBOTS)
            os.write(writer, ROBOTS.encode())
        finally:
            os.close(writer)
    daemon.wait_until(lambda: probe(port, "/livez") == (200, "ok"), 30, "turning again")
    write_atomic(site.base / "urls.txt", LIST + "https://example.com/more\n")
    daemon.wait_for_urls(u("a.html", "listed", "more"))
    assert daemon.stop() == 0


@pytest.mark.slow
def test_livez_stays_up_through_a_database_outage(site: Site, daemons: list[RunningDaemon]) -> None:
    # A change-log database that is down: not ready, and nothing a restart would cure.
    site.write("index.html", page("Home"))
    site.configure(
        extra='[[source]]\ntype = "changelog"\ndsn = "postgresql://nobody@127.0.0.1:9/cms"\n'
        'poll_interval = 0.2\n[http]\nlisten = "127.0.0.1:0"\n'
    )
    daemon = RunningDaemon(site)
    daemons.append(daemon)
    daemon.wait_ready()
    port = http_port(daemon)
    daemon.wait_until(lambda: probe(port, "/readyz")[0] == 503, 30, "not ready")
    assert "last read failed" in probe(port, "/readyz")[1]
    for _ in range(10):
        assert probe(port, "/livez") == (200, "ok")
        time.sleep(0.2)
    assert daemon.stop() == 0
