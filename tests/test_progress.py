"""Progress of a long first scan through the real CLI and daemon: a bar on a terminal,
STATUS= with counts under systemd, and SIGTERM during the scan stops it quickly, losing
nothing the next start does not redo."""

from __future__ import annotations

import io
import os
import pty
import signal
import subprocess
import sys
import time

import pytest
from conftest import Site, page, published, terminal_output
from daemon_harness import RunningDaemon
from supervisor import Supervisor, start_supervised

from sitemapd.cli.progressbar import ProgressBar

PAGES = 6000
# A first scan that lasts several STATUS= intervals (one second) even on a fast machine:
# worker processes read 6,000 small pages within the first.
LONG_SCAN = 24_000


def many_pages(site: Site, count: int = PAGES) -> None:
    text = page("Page", "words " * 40)
    for n in range(count):
        folder = site.root / f"s{n % 40}"
        folder.mkdir(exist_ok=True)
        (folder / f"p{n}.html").write_text(text.replace("Page", f"Page {n}"))


def test_a_terminal_shows_a_progress_bar(site: Site) -> None:
    many_pages(site)
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sitemapd", "build", "-c", str(site.config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=child,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    os.close(child)
    seen = terminal_output(main, 60)
    assert proc.wait(60) == 0
    os.close(main)
    text = seen.decode(errors="replace")
    assert "scanning (" in text
    assert " pages/s)  [" in text
    assert f"/{PAGES}" in text
    assert "#" in text
    assert len(published(site.out)) == PAGES


@pytest.mark.parametrize("stop", ["sigterm", "ctrl-c"])
def test_systemd_hears_counts_and_a_stop_ends_the_first_scan(
    site: Site, supervisor: Supervisor, stop: str
) -> None:
    many_pages(site, LONG_SCAN)
    daemon = start_supervised(site, supervisor, session=True)
    try:
        found = supervisor.wait_for("STATUS", timeout=60)
        while not supervisor.messages[found][1]["STATUS"].startswith("scanning: "):
            found = supervisor.wait_for("STATUS", after=found + 1, timeout=60)
        status = supervisor.messages[found][1]["STATUS"]
        assert " pages read (" in status
        assert int(status.split()[1]) > 0
        started = time.monotonic()
        if stop == "sigterm":
            daemon.proc.send_signal(signal.SIGTERM)
        else:
            # A terminal's ^C reaches the whole process group: the page readers too.
            os.killpg(daemon.proc.pid, signal.SIGINT)
        assert daemon.proc.wait(10) == 0
        daemon.stop()
        assert time.monotonic() - started < 10
    finally:
        if daemon.proc.poll() is None:
            daemon.kill()
    assert "stopped during the first scan" in daemon.log()
    assert "Aborted!" not in daemon.log()
    assert not (site.out / "sitemap.xml").exists()
    # The next start scans again and publishes every page.
    again = RunningDaemon(site)
    try:
        again.wait_ready(timeout=120)
        assert len(published(site.out)) == LONG_SCAN
    finally:
        assert again.stop() == 0


def test_the_bar_shows_share_count_rate_and_time_left_on_one_line() -> None:
    out = io.StringIO()
    bar = ProgressBar(6000, out)
    bar.draw(0, 0.0)
    bar.draw(1500, 125.0)
    # An estimate short of the pages found: the bar stays full, no time is left.
    bar.draw(7000, 3600.0)
    bar.close()
    drawn = out.getvalue().split("\r")[1:]
    assert drawn[0] == f"scanning (0 pages/s)  [{'-' * 36}]    0%  0/6000  --:--:--\x1b[K"
    assert (
        drawn[1]
        == f"scanning (125 pages/s)  [{'#' * 9}{'-' * 27}]   25%  1500/6000  00:00:36\x1b[K"
    )
    assert drawn[2] == f"scanning (3600 pages/s)  [{'#' * 36}]  100%  7000/6000  00:00:00\x1b[K\n"
    bar = ProgressBar(10_000, out)
    out.truncate(0)
    bar.draw(1, 1.0)
    assert out.getvalue().endswith("1/10000  02:46:39\x1b[K")
