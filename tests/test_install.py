"""The documented Debian install, end to end: `make install` into a fresh prefix (a venv of
its own, as Debian 12 requires), units that run what it installed and verify cleanly, and
the unit's own ExecStart command line starting the daemon."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, Site, page, published
from daemon_harness import RunningDaemon

ANALYZE = shutil.which("systemd-analyze")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run `make install` as docs/systemd.md says, into a temporary prefix; return its root."""
    root = tmp_path_factory.mktemp("install")
    subprocess.run(
        [
            "make",
            "--no-print-directory",
            "install",
            f"PYTHON={sys.base_prefix}/bin/python3",
            f"PREFIX={root}/opt/sitemapd",
            f"UNITDIR={root}/units",
            f"SYSUSERSDIR={root}/sysusers.d",
            f"TMPFILESDIR={root}/tmpfiles.d",
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=600,
    )
    return root


def exec_start(unit: Path) -> list[str]:
    (line,) = [x for x in unit.read_text().splitlines() if x.startswith("ExecStart=")]
    return shlex.split(line.removeprefix("ExecStart="))


def test_units_run_the_installed_sitemapd(installed: Path) -> None:
    for name in ("sitemapd.service", "sitemapd@.service"):
        argv = exec_start(installed / "units" / name)
        assert argv[0] == f"{installed}/opt/sitemapd/bin/sitemapd"
    version = subprocess.run(
        [f"{installed}/opt/sitemapd/bin/sitemapd", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert version.stdout.startswith("sitemapd, version")
    assert (installed / "sysusers.d" / "sitemapd.conf").is_file()
    assert (installed / "tmpfiles.d" / "sitemapd.conf").is_file()


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")
@pytest.mark.parametrize("unit", ["sitemapd.service", "sitemapd@example.service"])
def test_installed_units_verify(installed: Path, unit: str) -> None:
    result = subprocess.run(
        [ANALYZE or "systemd-analyze", "verify", str(installed / "units" / unit)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_the_units_command_line_starts_the_daemon(installed: Path, site: Site) -> None:
    site.write("index.html", page("Home"))
    argv = exec_start(installed / "units" / "sitemapd.service")
    assert argv[1:] == ["run", "-c", "/etc/sitemapd/sitemapd.toml"]
    daemon = RunningDaemon(site, executable=(argv[0],))
    try:
        daemon.wait_ready()
        assert set(published(site.out)) == {"https://example.com/"}
    finally:
        assert daemon.stop() == 0
