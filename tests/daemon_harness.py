"""A running `sitemapd run` subprocess for tests, with its log and deadlines."""

from __future__ import annotations

import functools
import http.client
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import Site, published
from lxml import etree

PUBLISH = re.compile(r"published: .* wrote [1-9]\d* files?")


class RunningDaemon:
    """`sitemapd run -c <site config>` with its stderr collected line by line."""

    def __init__(
        self,
        site: Site,
        *args: str,
        open_files: tuple[int, int] | None = None,
        executable: tuple[str, ...] = (sys.executable, "-m", "sitemapd"),
        session: bool = False,
    ) -> None:
        """Start the daemon (`executable`, by default this checkout's); `open_files` sets
        its (soft, hard) RLIMIT_NOFILE; `session` starts it in a session (and process
        group) of its own, as a terminal's shell does."""
        self.site = site
        limit = None
        if open_files is not None:
            limit = functools.partial(resource.setrlimit, resource.RLIMIT_NOFILE, open_files)
        self.proc = subprocess.Popen(
            [*executable, *args, "run", "-c", str(site.config)],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=limit,
            start_new_session=session,
        )
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    def log(self) -> str:
        with self._lock:
            return "\n".join(self.lines)

    def wait_for_log(self, pattern: str, timeout: float = 30.0, count: int = 1) -> None:
        """Wait until `count` log lines match `pattern`; fail with the log otherwise."""
        regex = re.compile(pattern)
        self.wait_until(
            lambda: sum(bool(regex.search(line)) for line in list(self.lines)) >= count,
            timeout,
            f"log line {pattern!r} x{count}",
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        self.wait_for_log(r"sitemapd.daemon: ready", timeout)

    def wait_until(
        self, predicate: Callable[[], bool], timeout: float = 30.0, what: str = ""
    ) -> None:
        """Poll `predicate` until it holds or `timeout` s pass (then fail with the log)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if predicate():
                    return
            except (OSError, etree.XMLSyntaxError, AssertionError):
                pass  # output not there yet
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(
            f"timed out waiting for {what or predicate} (exit {self.proc.poll()})\n{self.log()}"
        )

    def wait_for_urls(self, expected: set[str], timeout: float = 30.0) -> dict[str, str]:
        self.wait_until(lambda: set(published(self.site.out)) == expected, timeout, f"{expected}")
        return published(self.site.out)

    def publishes(self) -> int:
        with self._lock:
            return sum(bool(PUBLISH.search(line)) for line in self.lines)

    def wait_for_publishes(self, count: int, timeout: float = 30.0) -> None:
        """Wait until `count` publishes are logged: files appear before the log line."""
        self.wait_until(lambda: self.publishes() >= count, timeout, f"{count} publishes")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        self._reader.join(timeout)
        return code

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(30)


def start(site: Site, *args: str) -> RunningDaemon:
    daemon = RunningDaemon(site, *args)
    daemon.wait_ready()
    return daemon


def urls(site: Site, *paths: str) -> set[str]:
    return {f"https://example.com/{p}" for p in paths}


def touch_tree(root: Path, when: float) -> None:
    for path in root.rglob("*"):
        os.utime(path, (when, when))


def request(
    port: int,
    path: str,
    headers: dict[str, str] | None = None,
    method: str = "GET",
    timeout: float = 30,
) -> tuple[int, dict[str, str], bytes]:
    """Return (status, headers, body) of one request to the sidecar on `port`; raises
    OSError (TimeoutError) when it takes longer than `timeout` s."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def http_port(daemon: RunningDaemon) -> int:
    """Return the port the daemon's sidecar listens on (from its log)."""
    daemon.wait_for_log(r"HTTP endpoint on 127\.0\.0\.1:\d+")
    match = re.search(r"HTTP endpoint on 127\.0\.0\.1:(\d+)", daemon.log())
    assert match is not None
    return int(match.group(1))


def u(*paths: str) -> set[str]:
    """Return the site URLs of `paths`."""
    return {f"https://example.com/{p}" for p in paths}


@pytest.fixture
def daemons() -> Iterator[list[RunningDaemon]]:
    """Daemons started by a test; killed at teardown if the test left them running."""
    running: list[RunningDaemon] = []
    yield running
    for daemon in running:
        if daemon.proc.poll() is None:
            daemon.kill()
