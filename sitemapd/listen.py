"""Listen addresses: `host:port` and `[v6]:port`."""

from __future__ import annotations


def parse_listen(value: str) -> tuple[str, int]:
    """Return `(host, port)` of `host:port` or `[v6]:port`; raises ValueError."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535 or not host:
        raise ValueError(f"expected host:port, got {value!r}")
    return host.strip("[]"), int(port)
