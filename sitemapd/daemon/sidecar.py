"""The sidecar HTTP endpoint: `/livez`, `/readyz` (and its alias `/healthz`), `/metrics`
and, optionally, the output files. The probes answer from the daemon's state, never from
a request to a source or the store.

Only files the ledger records as published are served, by name, from the top of the output
directory (sitemapd writes no sub-folders), so no path can reach outside it and nothing
else sharing the folder is ever served. Each response streams from one open file
descriptor: a file replaced mid-response by an atomic rename is still sent whole, from the
version that was opened, with the ETag of that version.

Connections are kept alive (HTTP/1.1) and capped: at most a quarter of the process's open
files, so reading content never starves for descriptors. A client gets `HEAD_TIMEOUT`
seconds for each request head (and no longer idle between requests); when every slot is
taken, the connection waiting longest for its request is dropped for the new one, so a
flood of slow clients cannot keep `/healthz` from answering.
"""

from __future__ import annotations

import contextlib
import email.utils
import os
import re
import resource
import shutil
import socket
import sqlite3
import stat
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST

from sitemapd.config.daemon import parse_listen
from sitemapd.core import logs
from sitemapd.daemon.prometheus import Exported
from sitemapd.daemon.statuspage import PATHS as STATUS_PATHS
from sitemapd.daemon.statuspage import StatusPage
from sitemapd.ledger.ledger import is_published

log = logs.Logger("sitemapd.sidecar")

# Seconds a client may take to send a request head, counted from the connection or from
# the end of the previous response.
HEAD_TIMEOUT = 10.0
MAX_CONNECTIONS = 256
_METHODS = ("GET", "HEAD")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_ENTITY_TAG = re.compile(r'(?:W/)?("[^"]*")')
_TYPES = {
    ".xml": "application/xml; charset=utf-8",  # as the nginx example serves them
    ".gz": "application/gzip",  # a gzip file, as nginx serves it: no Content-Encoding
    ".txt": "text/plain; charset=utf-8",
}


def connection_cap() -> int:
    """Return how many connections the sidecar may hold open: a quarter of the open-files
    limit in force, at most MAX_CONNECTIONS."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(4, min(MAX_CONNECTIONS, soft // 4))


class _PublishedFiles:
    """Answers whether the ledger records a file as published, from any thread."""

    def __init__(self, ledger_path: Path) -> None:
        self._uri = f"{ledger_path.as_uri()}?mode=ro"
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def __call__(self, name: str) -> bool:
        """Return True when `name` is published. Raises sqlite3.Error."""
        with self._lock:
            if self._conn is None:
                self._conn = sqlite3.connect(self._uri, uri=True, check_same_thread=False)
            return is_published(self._conn, name)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _cut(connection: socket.socket) -> None:
    """Hang up on a connection; the thread reading it sees the end and closes it."""
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the listen backlog: bursts of crawler requests queue, not fail
    # The endpoint's state, set by Sidecar.
    output_dir: Path
    serve_files: bool
    problems: Callable[[], list[str]]
    metrics: Exported
    is_published: _PublishedFiles
    # Told of every file a GET received in full (name, status, User-Agent): crawler
    # fetches of feeds.
    on_served: Callable[[str, int, str], None]
    role: Callable[[], str | None]
    status_page: StatusPage | None
    stalls: Callable[[], list[str]]

    def __init__(self, address: tuple[str, int], max_connections: int) -> None:
        self.max_connections = max_connections
        self._open_lock = threading.Lock()
        # Every open connection, with the monotonic time its request head is due by, or
        # None while a request is being answered.
        self._open: dict[socket.socket, float | None] = {}
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            admitted = len(self._open) < self.max_connections or self._drop_slowest()
            if admitted:
                self._open[request] = time.monotonic() + HEAD_TIMEOUT
        if not admitted:
            log.debug("HTTP client %s: refused, every connection is busy", client_address)
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def _drop_slowest(self) -> bool:
        """Hang up on the connection waiting longest for its request head; return False
        when every connection is being answered."""
        waiting = [(due, conn) for conn, due in self._open.items() if due is not None]
        if not waiting:
            return False
        _, conn = min(waiting, key=lambda item: item[0])
        del self._open[conn]
        _cut(conn)
        return True

    def awaiting_request(self, connection: socket.socket) -> None:
        """Give `connection` HEAD_TIMEOUT seconds from now for its next request head."""
        with self._open_lock:
            if connection in self._open:
                self._open[connection] = time.monotonic() + HEAD_TIMEOUT

    def answering(self, connection: socket.socket) -> None:
        """Note that `connection` sent a whole request head."""
        with self._open_lock:
            if connection in self._open:
                self._open[connection] = None

    def service_actions(self) -> None:
        # Run by serve_forever between accepts: hang up on heads that are overdue.
        now = time.monotonic()
        with self._open_lock:
            late = [conn for conn, due in self._open.items() if due is not None and due < now]
            for conn in late:
                del self._open[conn]
                _cut(conn)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.pop(request, None)
        super().shutdown_request(request)

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that hangs up mid-response is routine, not a traceback on stderr.
        log.debug("HTTP client %s: connection error", client_address, exc_info=True)


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive
    timeout = 15  # seconds a slow client may take per read or write
    # Headers and body go out in separate writes: with Nagle's algorithm, a keep-alive
    # client's delayed ACK would hold the body back some 40 ms.
    disable_nagle_algorithm = True
    server_version = "sitemapd"

    def version_string(self) -> str:
        """Return the Server header: the base class appends a Python version after a
        space, which would leave a trailing space even when emptied."""
        return self.server_version

    def log_message(self, format: str, *args: object) -> None:
        log.debug("HTTP %s %s", self.client_address[0], format % args)

    def handle_one_request(self) -> None:
        self.server.awaiting_request(self.connection)
        super().handle_one_request()

    def parse_request(self) -> bool:
        """Read the request head; return False when it was answered already (an error)."""
        if not super().parse_request():
            return False
        self.server.answering(self.connection)
        if self.command not in _METHODS:
            # The body, if any, is not read: the connection cannot carry another request.
            self.close_connection = True
            self._send_bytes(
                HTTPStatus.METHOD_NOT_ALLOWED,
                b"method not allowed\n",
                "text/plain; charset=utf-8",
                head=False,
                extra={"Allow": ", ".join(_METHODS), "Connection": "close"},
            )
            return False
        if self.headers.get("Content-Length", "0").strip() != "0" or self.headers.get(
            "Transfer-Encoding"
        ):
            self.close_connection = True  # an unread body: no request may follow it
        return True

    def do_HEAD(self) -> None:
        self._respond(head=True)

    def do_GET(self) -> None:
        self._respond(head=False)

    def _respond(self, head: bool) -> None:
        path = urlsplit(self.path).path
        if path in ("/readyz", "/healthz"):
            role = self.server.role()
            self._probe(self.server.problems(), f"ok: {role}" if role else "ok", "unhealthy", head)
        elif path == "/livez":
            self._probe(self.server.stalls(), "ok", "stalled", head)
        elif path == "/metrics":
            self._send_bytes(HTTPStatus.OK, self.server.metrics.render(), CONTENT_TYPE_LATEST, head)
        elif path in STATUS_PATHS and self.server.status_page is not None:
            answer = self.server.status_page.answer(path, urlsplit(self.path).query)
            self._send_bytes(answer.status, answer.body, answer.kind, head, answer.headers)
        elif self.server.serve_files:
            self._send_file(unquote(path), head)
        else:
            self._not_found(head)

    def _probe(self, problems: list[str], ok: str, failing: str, head: bool) -> None:
        """Answer a probe: 200 and `ok`, or 503 and what is wrong."""
        body = (f"{failing}: " + "; ".join(problems) if problems else ok) + "\n"
        status = HTTPStatus.SERVICE_UNAVAILABLE if problems else HTTPStatus.OK
        self._send_bytes(status, body.encode(), "text/plain; charset=utf-8", head)

    def _send_bytes(
        self,
        status: HTTPStatus,
        body: bytes,
        kind: str,
        head: bool,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for header, value in (extra or {}).items():
            self.send_header(header, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _not_found(self, head: bool) -> None:
        self._send_bytes(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", head)

    def _published(self, name: str, head: bool) -> bool:
        """True when `name` is a file sitemapd published; otherwise answer and say False."""
        try:
            if _NAME.match(name) and self.server.is_published(name):
                return True
        except sqlite3.Error as exc:
            log.warning("cannot read the ledger to serve %s (%s)", name, exc)
            self._send_bytes(
                HTTPStatus.SERVICE_UNAVAILABLE,
                b"ledger unavailable\n",
                "text/plain; charset=utf-8",
                head,
                {"Retry-After": "10"},
            )
            return False
        self._not_found(head)
        return False

    def _send_file(self, path: str, head: bool) -> None:
        name = path.removeprefix("/")
        if not self._published(name, head):
            return
        try:
            fd = os.open(self.server.output_dir / name, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            self._not_found(head)
            return
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                self._not_found(head)
                return
            etag = f'"{st.st_ino:x}-{st.st_size:x}-{st.st_mtime_ns:x}"'
            modified = email.utils.formatdate(st.st_mtime, usegmt=True)
            agent = self.headers.get("User-Agent", "")
            if self._not_modified(etag, st.st_mtime):
                self.send_response(HTTPStatus.NOT_MODIFIED)
                self.send_header("ETag", etag)
                self.send_header("Last-Modified", modified)
                self.end_headers()
                if not head:
                    self.server.on_served(name, HTTPStatus.NOT_MODIFIED, agent)
                return
            self.send_response(HTTPStatus.OK)
            self.send_header(
                "Content-Type", _TYPES.get(Path(name).suffix, "application/octet-stream")
            )
            self.send_header("Content-Length", str(st.st_size))
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", modified)
            self.end_headers()
            if not head:
                shutil.copyfileobj(handle, self.wfile, 256 * 1024)
                # Only a complete answer to a GET gave the client the entries.
                self.server.on_served(name, HTTPStatus.OK, agent)

    def _not_modified(self, etag: str, mtime: float) -> bool:
        match = self.headers.get("If-None-Match")
        if match is not None:
            # Weak comparison (RFC 9110 13.1.2): a proxy that compressed the file on its
            # way sends the tag back as W/"...".
            return match.strip() == "*" or etag in _ENTITY_TAG.findall(match)
        since = self.headers.get("If-Modified-Since")
        if since:
            try:
                when = email.utils.parsedate_to_datetime(since).timestamp()
            except (TypeError, ValueError, OverflowError):
                return False
            return int(mtime) <= when
        return False


class Sidecar:
    """The HTTP endpoint in a thread of its own."""

    def __init__(
        self,
        listen: str,
        output_dir: Path,
        serve_files: bool,
        problems: Callable[[], list[str]],
        metrics: Exported,
        ledger_path: Path,
        on_served: Callable[[str, int, str], None] = lambda name, status, agent: None,
        role: Callable[[], str | None] = lambda: None,
        status_page: StatusPage | None = None,
        stalls: Callable[[], list[str]] = lambda: [],
    ) -> None:
        host, port = parse_listen(listen)
        self.server = (_Server6 if ":" in host else _Server)((host, port), connection_cap())
        self.server.output_dir = output_dir
        self.server.serve_files = serve_files
        self.server.problems = problems
        self.server.metrics = metrics
        self.server.is_published = _PublishedFiles(ledger_path)
        self.server.on_served = on_served
        # "publisher" or "standby" when daemons share a target; None otherwise.
        self.server.role = role
        self.server.status_page = status_page
        # Why the daemon's loops do not turn (/livez), empty while they do.
        self.server.stalls = stalls
        self.thread = threading.Thread(
            target=self.server.serve_forever, name="sitemapd-http", daemon=True
        )

    @property
    def address(self) -> tuple[str, int]:
        """Return the bound `(host, port)`."""
        host, port = self.server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self.thread.start()
        log.info(
            "HTTP endpoint on %s:%d (at most %d connections)",
            *self.address,
            self.server.max_connections,
        )

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.server.is_published.close()
        if self.server.status_page is not None:
            self.server.status_page.close()
