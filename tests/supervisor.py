"""A fake systemd for tests: the `NOTIFY_SOCKET` end of sd_notify, and a daemon under it."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Site
from daemon_harness import RunningDaemon


class Supervisor:
    """A fake systemd: the NOTIFY_SOCKET end, collecting (time, fields) messages."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.1)
        self.messages: list[tuple[float, dict[str, str]]] = []

    def pump(self) -> None:
        while True:
            try:
                data = self.sock.recv(65536)
            except (TimeoutError, BlockingIOError):
                return
            fields = dict(line.split("=", 1) for line in data.decode().splitlines() if "=" in line)
            self.messages.append((time.monotonic(), fields))

    def wait_for(
        self, key: str, value: str | None = None, after: int = 0, timeout: float = 30
    ) -> int:
        """Return the index of the first message from `after` on that has `key` (= value)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump()
            for n, (_, fields) in enumerate(self.messages[after:], start=after):
                if key in fields and (value is None or fields[key] == value):
                    return n
        raise AssertionError(f"no {key}={value} after message {after}: {self.messages}")

    def count(self, key: str, since: float) -> int:
        self.pump()
        return sum(1 for at, fields in self.messages if at >= since and key in fields)


@pytest.fixture
def supervisor(tmp_path: Path) -> Iterator[Supervisor]:
    sup = Supervisor(tmp_path / "notify.sock")
    yield sup
    sup.sock.close()


def start_supervised(
    site: Site, sup: Supervisor, watchdog_usec: str = "1000000", session: bool = False, **env: str
) -> RunningDaemon:
    """Start `sitemapd run` as systemd would, with `NOTIFY_SOCKET` and `WATCHDOG_USEC`
    (in a session of its own with `session`)."""
    os.environ.update(NOTIFY_SOCKET=str(sup.path), WATCHDOG_USEC=watchdog_usec, **env)
    try:
        return RunningDaemon(site, session=session)
    finally:
        for key in ("NOTIFY_SOCKET", "WATCHDOG_USEC", *env):
            os.environ.pop(key, None)
