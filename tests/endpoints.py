"""A real HTTP server on 127.0.0.1 standing in for WebSub hubs and IndexNow endpoints.

It records every request and answers from a script per path (status and headers), so
tests can make it refuse, throttle or fail, and stop it to play an outage.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: bytes
    status: int
    at: float = field(default_factory=time.monotonic)

    def json(self) -> dict[str, object]:
        data = json.loads(self.body)
        assert isinstance(data, dict)
        return data

    def form(self) -> dict[str, list[str]]:
        return parse_qs(self.body.decode(), strict_parsing=True)


class Endpoint:
    """The server: `requests` seen, `script[path]` = answers to give, then `default`."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[Request] = []
        self.script: dict[str, list[tuple[int, dict[str, str]]]] = {}
        self.default = 202
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.port = port
        self.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self) -> None:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with endpoint._lock:
                    answers = endpoint.script.get(self.path) or []
                    status, headers = answers.pop(0) if answers else (endpoint.default, {})
                    endpoint.requests.append(Request(self.path, dict(self.headers), body, status))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def seen(self, path: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def wait(self, path: str, count: int, timeout: float = 30.0) -> list[Request]:
        """Wait until `count` requests for `path` arrived; fail listing what came."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.seen(path)) >= count:
                return self.seen(path)
            time.sleep(0.05)
        raise AssertionError(f"{count} requests to {path} expected, got {self.seen(path)}")


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    server = Endpoint()
    yield server
    server.stop()
