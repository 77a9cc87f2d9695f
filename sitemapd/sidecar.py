"""The sidecar HTTP endpoint: `/healthz`, `/metrics` and, optionally, the output files.

Files are served by name from the top of the output directory only (sitemapd writes no
sub-folders), so no path can reach outside it. Each response streams from one open file
descriptor: a file replaced mid-response by an atomic rename is still sent whole, from the
version that was opened, with the ETag of that version.
"""

from __future__ import annotations

import email.utils
import logging
import os
import re
import shutil
import socket
import stat
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST

from .listen import parse_listen
from .metrics import Metrics

log = logging.getLogger(__name__)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_TYPES = {
    ".xml": "application/xml",
    ".gz": "application/gzip",  # a gzip file, as nginx serves it: no Content-Encoding
    ".txt": "text/plain; charset=utf-8",
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the listen backlog: bursts of crawler requests queue, not fail
    # The endpoint's state, set by Sidecar.
    output_dir: Path
    serve_files: bool
    problems: Callable[[], list[str]]
    metrics: Metrics
    # Only files sitemapd writes are served, never whatever else shares the folder.
    is_output: Callable[[str], bool]
    # Told of every file a GET received in full (name, status, User-Agent): crawler
    # fetches of feeds.
    on_served: Callable[[str, int, str], None]

    def handle_error(self, request: object, client_address: object) -> None:
        # A client that hangs up mid-response is routine, not a traceback on stderr.
        log.debug("HTTP client %s: connection error", client_address, exc_info=True)


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 15  # seconds a slow client may take per read
    server_version = "sitemapd"
    sys_version = ""

    def log_message(self, format: str, *args: object) -> None:
        log.debug("HTTP %s %s", self.client_address[0], format % args)

    def do_HEAD(self) -> None:
        self._respond(head=True)

    def do_GET(self) -> None:
        self._respond(head=False)

    def _respond(self, head: bool) -> None:
        path = urlsplit(self.path).path
        if path == "/healthz":
            problems = self.server.problems()
            body = ("unhealthy: " + "; ".join(problems) if problems else "ok") + "\n"
            status = HTTPStatus.SERVICE_UNAVAILABLE if problems else HTTPStatus.OK
            self._send_bytes(status, body.encode(), "text/plain; charset=utf-8", head)
        elif path == "/metrics":
            self._send_bytes(HTTPStatus.OK, self.server.metrics.render(), CONTENT_TYPE_LATEST, head)
        elif self.server.serve_files:
            self._send_file(unquote(path), head)
        else:
            self._not_found(head)

    def _send_bytes(self, status: HTTPStatus, body: bytes, kind: str, head: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _not_found(self, head: bool) -> None:
        self._send_bytes(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8", head)

    def _send_file(self, path: str, head: bool) -> None:
        name = path.removeprefix("/")
        if not _NAME.match(name) or not self.server.is_output(name):
            self._not_found(head)
            return
        try:
            fd = os.open(self.server.output_dir / name, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            self._not_found(head)
            return
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or name.startswith(".sitemapd-tmp-"):
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
            return match.strip() == "*" or etag in {tag.strip() for tag in match.split(",")}
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
        metrics: Metrics,
        is_output: Callable[[str], bool],
        on_served: Callable[[str, int, str], None] = lambda name, status, agent: None,
    ) -> None:
        host, port = parse_listen(listen)
        self.server = (_Server6 if ":" in host else _Server)((host, port), _Handler)
        self.server.output_dir = output_dir
        self.server.serve_files = serve_files
        self.server.problems = problems
        self.server.metrics = metrics
        self.server.is_output = is_output
        self.server.on_served = on_served
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
        log.info("HTTP endpoint on %s:%d", *self.address)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
