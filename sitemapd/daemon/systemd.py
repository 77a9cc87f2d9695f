"""sd_notify without a dependency: tell systemd (or any supervisor) how the daemon is.

Everything is a no-op when `NOTIFY_SOCKET` is unset, as it is outside systemd.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time


class Notifier:
    """Sends `KEY=VALUE` datagrams to `$NOTIFY_SOCKET`."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        # A leading "@" names a socket in the abstract namespace.
        self.address = "\0" + address[1:] if address.startswith("@") else address
        self._socket: socket.socket | None = None
        if self.address:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        wanted = usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid()))
        # Ping at half the interval, as sd_watchdog_enabled(3) advises.
        self.watchdog_interval = int(usec) / 2e6 if wanted else None

    @property
    def enabled(self) -> bool:
        """True when a supervisor listens."""
        return self._socket is not None

    def send(self, **fields: str | int) -> None:
        """Send one message, e.g. `send(READY=1, STATUS="...")`; errors are ignored."""
        if self._socket is None:
            return
        message = "\n".join(f"{key}={value}" for key, value in fields.items())
        # A supervisor that went away must not take the daemon with it.
        with contextlib.suppress(OSError):
            self._socket.sendto(message.encode(), self.address)

    def ready(self, status: str) -> None:
        self.send(READY=1, STATUS=status, MAINPID=os.getpid())

    def reloading(self) -> None:
        usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.send(RELOADING=1, MONOTONIC_USEC=usec, STATUS="reloading the configuration")

    def extend_timeout(self, seconds: float, status: str) -> None:
        self.send(EXTEND_TIMEOUT_USEC=int(seconds * 1e6), STATUS=status)

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
