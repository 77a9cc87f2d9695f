"""No helper process outlives the daemon, however it dies: SIGKILL of `sitemapd run`
during a first scan that reads pages in worker processes, or parses a big URL list in
its list worker, leaves none of its processes behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import Site, page, write_atomic


def group(pgid: int) -> dict[int, str]:
    """Return `{pid: command line}` of the live (not zombie) processes of group `pgid`."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # ended meanwhile
        # After "(comm)": state, ppid, pgrp.
        state, _, pgrp = stat.rpartition(")")[2].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            found[int(entry.name)] = cmdline
    return found


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def kill_when(site: Site, helper: str, helpers: int) -> None:
    """Start `sitemapd run` in a process group of its own; SIGKILL it once `helpers`
    processes whose command line holds `helper` run; then wait for its group to empty."""
    daemon = subprocess.Popen(
        [sys.executable, "-m", "sitemapd", "run", "-c", str(site.config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    pgid = daemon.pid
    try:
        wait_for(
            lambda: sum(helper in cmd for cmd in group(pgid).values()) >= helpers,
            120,
            f"{helpers} processes running {helper}",
        )
        assert daemon.poll() is None, "the first scan ended before the helpers were seen"
        daemon.send_signal(signal.SIGKILL)
        daemon.wait(30)
        left = group(pgid)
        try:
            wait_for(lambda: not group(pgid), 30, "the helpers to end")
        except AssertionError:
            raise AssertionError(f"left behind: {group(pgid)} (at the kill: {left})") from None
    finally:
        for pid in group(pgid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: no worker processes")
def test_page_workers_die_with_a_killed_daemon(site: Site) -> None:
    body = "word " * 400
    for n in range(12000):
        (site.root / f"p{n}.html").write_text(page(f"P{n}", f"{body} {n}"))
    # The forkserver's workers are the forkserver's children, not the daemon's.
    kill_when(site, "multiprocessing.forkserver", 3)


@pytest.mark.slow
def test_the_list_worker_dies_with_a_killed_daemon(site: Site) -> None:
    site.configure(extra='[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"\n')
    lines = "".join(f"https://example.com/item/{n}/of-a-big-list\n" for n in range(600_000))
    write_atomic(site.base / "urls.txt", lines)
    kill_when(site, "sitemapd.sources.listworker", 1)
