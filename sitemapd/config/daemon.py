"""`[daemon]`, `[http]` and `[crawlers]`: how `sitemapd run` batches, listens and counts crawls."""

# Annotations evaluated, not text: see core/observation.py.
import ipaddress
import re
from typing import NamedTuple

from sitemapd.config.table import Table

DEFAULT_CRAWLERS = (("googlebot", "Googlebot"), ("bingbot", "bingbot"))


BACKENDS = ("auto", "inotify", "polling")


class DaemonConfig(NamedTuple):
    """How `sitemapd run` batches events and how often it reconciles with the disk."""

    debounce: float = 0.5
    max_delay: float = 5.0
    reconcile_interval: float = 900.0
    # A batch running longer than this makes the daemon unhealthy.
    stuck_after: float = 600.0
    # Change-log rows waiting longer than this make the daemon unhealthy: a drain of a
    # large backlog takes seconds, a transaction left open holds every later row back.
    max_lag: float = 60.0


class HttpConfig(NamedTuple):
    """The sidecar endpoint; off while `listen` is empty."""

    listen: str = ""
    serve_files: bool = False
    # `/status` and `/status.json`: on by default only where the listener is loopback.
    status_page: bool = False


def read_crawlers(table: Table) -> tuple[tuple[str, re.Pattern[str]], ...]:
    crawlers = []
    for name in table.data:
        pattern = table.text(name, "")
        try:
            crawlers.append((name, re.compile(pattern)))
        except re.error as exc:
            raise table.error(name, f"not a valid regular expression ({exc})") from exc
        if not pattern:
            raise table.error(name, "must be a non-empty User-Agent pattern")
    table.done()
    return tuple(crawlers)


CRAWLER_PATTERNS = tuple((name, re.compile(pattern)) for name, pattern in DEFAULT_CRAWLERS)


def read_http(table: Table) -> HttpConfig:
    listen = table.text("listen", "")
    if listen:
        try:
            parse_listen(listen)
        except ValueError as exc:
            raise table.error("listen", str(exc)) from exc
    config = HttpConfig(
        listen=listen,
        serve_files=table.flag("serve_files", False),
        status_page=table.flag("status_page", bool(listen) and _loopback(listen)),
    )
    if config.serve_files and not listen:
        raise table.error("serve_files", "needs http.listen")
    if config.status_page and not listen:
        raise table.error("status_page", "needs http.listen")
    table.done()
    return config


def _loopback(listen: str) -> bool:
    """True when the listen address `listen` (already valid) only takes local clients."""
    host = parse_listen(listen)[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def read_daemon(table: Table) -> DaemonConfig:
    defaults = DaemonConfig()
    debounce = table.number("debounce", defaults.debounce, 0.01, 60)
    config = DaemonConfig(
        debounce=debounce,
        max_delay=table.number("max_delay", max(defaults.max_delay, debounce), debounce, 3600),
        reconcile_interval=table.number(
            "reconcile_interval", defaults.reconcile_interval, 1, 7 * 86400
        ),
        stuck_after=table.number("stuck_after", defaults.stuck_after, 1, 86400),
        max_lag=table.number("max_lag", defaults.max_lag, 1, 86400),
    )
    table.done()
    return config


def parse_listen(value: str) -> tuple[str, int]:
    """Return `(host, port)` of `host:port` or `[v6]:port`; raises ValueError."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535 or not host:
        raise ValueError(f"expected host:port, got {value!r}")
    return host.strip("[]"), int(port)
