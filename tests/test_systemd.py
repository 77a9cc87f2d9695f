"""systemd integration: the unit files, and sd_notify as a supervisor sees it."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, Site, page, published
from supervisor import Supervisor, start_supervised

UNITS = REPO / "systemd"
ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(
    ANALYZE is None and not os.environ.get("CI"), reason="systemd-analyze is not installed"
)


def local_unit(tmp_path: Path, name: str) -> Path:
    """Copy a unit with ExecStart pointing at this test's interpreter."""
    text = (UNITS / name).read_text()
    text = text.replace(
        "ExecStart=/opt/sitemapd/bin/sitemapd", f"ExecStart={sys.executable} -m sitemapd"
    )
    path = tmp_path / name
    path.write_text(text)
    return path


@needs_analyze
@pytest.mark.parametrize("unit", ["sitemapd.service", "sitemapd@example.service"])
def test_units_verify_cleanly(tmp_path: Path, unit: str) -> None:
    local_unit(tmp_path, "sitemapd.service")
    local_unit(tmp_path, "sitemapd@.service")
    result = subprocess.run(
        [ANALYZE or "systemd-analyze", "verify", str(tmp_path / unit)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


@pytest.mark.parametrize("unit", ["sitemapd.service", "sitemapd@.service"])
def test_units_raise_the_open_files_limit(unit: str) -> None:
    # systemd's default soft limit, 1,024, is what a flood of slow clients exhausted.
    limits = re.findall(r"^LimitNOFILE=(\d+)$", (UNITS / unit).read_text(), re.MULTILINE)
    assert limits, f"{unit} sets no LimitNOFILE"
    assert int(limits[-1]) >= 65536


@needs_analyze
@pytest.mark.parametrize("unit", ["sitemapd.service", "sitemapd@example.service"])
def test_units_are_sandboxed(tmp_path: Path, unit: str) -> None:
    local_unit(tmp_path, "sitemapd.service")
    local_unit(tmp_path, "sitemapd@.service")
    command = [ANALYZE or "systemd-analyze", "security", "--offline=yes", "--threshold=20"]
    result = subprocess.run(
        [*command, str(tmp_path / unit)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    exposure = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert exposure is not None
    assert float(exposure.group(1)) <= 2.0


def test_sd_notify_lifecycle(site: Site, supervisor: Supervisor) -> None:
    site.configure(source="[daemon]\ndebounce = 0.1\n")
    site.write("index.html", page("Home"))
    daemon = start_supervised(site, supervisor)
    try:
        ready = supervisor.wait_for("READY", "1")
        # READY comes after the first publish: the sitemap is already there.
        assert set(published(site.out)) == {"https://example.com/"}
        fields = supervisor.messages[ready][1]
        assert fields["MAINPID"] == str(daemon.proc.pid)
        assert "1 URL live" in fields["STATUS"]

        # WATCHDOG_USEC=1s: a ping every half second while healthy.
        since = time.monotonic()
        time.sleep(2.6)
        assert supervisor.count("WATCHDOG", since) >= 4

        daemon.proc.send_signal(signal.SIGHUP)
        reloading = supervisor.wait_for("RELOADING", "1", after=ready + 1)
        stamp = int(supervisor.messages[reloading][1]["MONOTONIC_USEC"])
        assert abs(stamp - time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000) < 10_000_000
        again = supervisor.wait_for("READY", "1", after=reloading)
        assert "reload failed" not in supervisor.messages[again][1].get("STATUS", "")

        site.config.write_text(site.config.read_text() + "\nnot_a_key = 1\n")
        daemon.proc.send_signal(signal.SIGHUP)
        reloading = supervisor.wait_for("RELOADING", "1", after=again + 1)
        failed = supervisor.wait_for("READY", "1", after=reloading)
        status = supervisor.messages[failed][1]["STATUS"]
        assert "reload failed, running the previous configuration" in status
        assert "not_a_key" in status
        site.write("after.html", page("After"))
        daemon.wait_for_urls({"https://example.com/", "https://example.com/after.html"})

        daemon.proc.send_signal(signal.SIGTERM)
        supervisor.wait_for("STOPPING", "1", after=failed)
        assert daemon.proc.wait(30) == 0
    finally:
        if daemon.proc.poll() is None:
            daemon.kill()


def test_without_notify_socket_nothing_is_sent(site: Site) -> None:
    from sitemapd.daemon.systemd import Notifier

    notifier = Notifier({})
    assert not notifier.enabled
    assert notifier.watchdog_interval is None
    notifier.ready("ok")  # a no-op, not an error
    assert Notifier({"WATCHDOG_USEC": "4000000", "WATCHDOG_PID": "1"}).watchdog_interval is None
    assert Notifier({"WATCHDOG_USEC": "4000000"}).watchdog_interval == 2.0


def test_watchdog_pauses_while_a_watcher_is_down(site: Site, supervisor: Supervisor) -> None:
    from sitemapd.daemon.watch import FAIL_HOOK

    site.write("index.html", page("Home"))
    daemon = start_supervised(site, supervisor, **{FAIL_HOOK: "1"})
    try:
        ready = supervisor.wait_for("READY", "1")
        status = supervisor.messages[ready][1]["STATUS"]
        assert "UNHEALTHY" in status
        assert "watching disabled by SITEMAPD_TEST_FAIL_WATCHERS" in status
        since = time.monotonic()
        time.sleep(2.5)  # five watchdog periods
        assert supervisor.count("WATCHDOG", since) == 0
        assert daemon.proc.poll() is None
    finally:
        daemon.kill()


def test_a_database_outage_is_unhealthy_but_keeps_the_watchdog_fed(
    site: Site, supervisor: Supervisor
) -> None:
    # Restarting sitemapd cannot bring a database back: STATUS and /healthz say what is
    # wrong, and WATCHDOG=1 goes on.
    site.write("index.html", page("Home"))
    site.configure(
        extra='[[source]]\ntype = "changelog"\ndsn = "postgresql://nobody@127.0.0.1:9/cms"\n'
        "poll_interval = 0.2\n"
    )
    daemon = start_supervised(site, supervisor)
    try:
        supervisor.wait_for("READY", "1")
        daemon.wait_for_log("cannot read", 20)
        since = time.monotonic()
        time.sleep(2.5)
        assert supervisor.count("WATCHDOG", since) >= 3
        statuses = [f["STATUS"] for at, f in supervisor.messages if "STATUS" in f]
        assert any("last read failed" in s and "UNHEALTHY" in s for s in statuses)
        # One retry at a time with backoff, not a failed read every poll.
        assert daemon.log().count("cannot read") <= 3
    finally:
        assert daemon.stop() == 0
