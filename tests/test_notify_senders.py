"""IndexNow and WebSub senders against real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import email.utils
import http.server
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sitemapd import __version__
from sitemapd.notify import Outcome, indexnow, post, websub
from sitemapd.notify.http import classify, retry_after
from sitemapd.render import keyfile

KEY = "0123456789abcdef-ABCDEF"


@dataclass
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Endpoint:
    """A live HTTP server that answers every request with `status`, `headers` and `text`."""

    url: str
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    text: bytes = b""
    received: list[Received] = field(default_factory=list)


def _handler(endpoint: Endpoint) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            endpoint.received.append(
                Received(self.command, self.path, dict(self.headers), self.rfile.read(length))
            )
            self.send_response(endpoint.status)
            for name, value in endpoint.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(endpoint.text)))
            self.end_headers()
            self.wfile.write(endpoint.text)

        do_POST = do_GET = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that stops reading a long body is what some tests want


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    """Return a recording server's endpoint; stopped after the test."""
    server = _QuietServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    ep = Endpoint(f"http://127.0.0.1:{server.server_address[1]}/indexnow")
    server.RequestHandlerClass = _handler(ep)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield ep
    server.shutdown()
    server.server_close()
    thread.join()


def _submit(ep: Endpoint, urls: list[str] | None = None) -> Outcome:
    if urls is None:
        urls = ["https://example.com/a"]
    return indexnow.submit(ep.url, "example.com", KEY, f"https://example.com/{KEY}.txt", urls)


def test_submit_sends_the_indexnow_json(endpoint: Endpoint) -> None:
    urls = ["https://example.com/a", "https://example.com/caf\u00e9?x=1&y=2"]
    outcome = _submit(endpoint, urls)
    assert outcome == Outcome("done", 200, "200 OK", None)
    (request,) = endpoint.received
    assert request.method == "POST"
    assert request.path == "/indexnow"
    assert request.headers["Content-Type"] == "application/json; charset=utf-8"
    assert request.headers["User-Agent"] == f"sitemapd/{__version__}"
    assert json.loads(request.body.decode("utf-8")) == {
        "host": "example.com",
        "key": KEY,
        "keyLocation": f"https://example.com/{KEY}.txt",
        "urlList": urls,
    }
    assert b" " not in request.body  # compact


def test_body_is_compact_utf8_json() -> None:
    data = indexnow.body(
        "example.com", KEY, "https://example.com/k.txt", ["https://example.com/\u00e9"]
    )
    assert (
        data
        == (
            '{"host":"example.com","key":"' + KEY + '","keyLocation":"https://example.com/k.txt",'
            '"urlList":["https://example.com/\u00e9"]}'
        ).encode()
    )


def test_requests_split_into_batches_of_ten_thousand() -> None:
    urls = [f"https://example.com/p{i}" for i in range(25_001)]
    batches = indexnow.requests(urls)
    assert [(host, len(group)) for host, group in batches] == [
        ("example.com", 10_000),
        ("example.com", 10_000),
        ("example.com", 5_001),
    ]
    assert [url for _, group in batches for url in group] == urls


def test_requests_group_by_host_and_drop_duplicates() -> None:
    urls = [
        "https://b.example/1",
        "https://A.example/1",
        "https://b.example/2",
        "https://b.example/1",
        "https://a.example/2",
        "https://a.example:8443/3",
        "https://A.example/1",
    ]
    assert indexnow.requests(urls) == [
        ("b.example", ["https://b.example/1", "https://b.example/2"]),
        ("a.example", ["https://A.example/1", "https://a.example/2"]),
        ("a.example:8443", ["https://a.example:8443/3"]),
    ]


def test_requests_refuse_a_url_without_host() -> None:
    with pytest.raises(ValueError, match="without a host"):
        indexnow.requests(["/relative/path"])


@given(
    st.lists(
        st.tuples(st.sampled_from(["a.example", "B.example", "c.example"]), st.integers(0, 30)),
        max_size=200,
    ),
    st.integers(1, 7),
)
def test_requests_partition_the_unique_urls(pairs: list[tuple[str, int]], size: int) -> None:
    urls = [f"https://{host}/{n}" for host, n in pairs]
    batches = indexnow.requests(urls, max_urls=size)
    flat = [url for _, group in batches for url in group]
    assert sorted(flat) == sorted(set(urls))
    assert all(1 <= len(group) <= size for _, group in batches)
    for host, group in batches:
        assert all(url.split("/")[2].lower() == host for url in group)
    for host in {host for host, _ in batches}:
        mine = [url for h, group in batches if h == host for url in group]
        assert mine == list(dict.fromkeys(u for u in urls if u.split("/")[2].lower() == host))


@pytest.mark.parametrize("status", [200, 202])
def test_success_is_done(endpoint: Endpoint, status: int) -> None:
    endpoint.status = status
    outcome = _submit(endpoint)
    assert (outcome.kind, outcome.status) == ("done", status)


@pytest.mark.parametrize("status", [400, 403, 422])
def test_client_errors_are_rejected_with_the_response_text(endpoint: Endpoint, status: int) -> None:
    endpoint.status = status
    endpoint.text = b"Key not valid\nfor this\thost"
    outcome = _submit(endpoint)
    assert (outcome.kind, outcome.status, outcome.retry_after) == ("rejected", status, None)
    assert outcome.detail.startswith(f"{status} ")
    assert outcome.detail.endswith(": Key not valid for this host")


def test_long_response_is_cut_to_one_short_line(endpoint: Endpoint) -> None:
    endpoint.status = 400
    endpoint.text = b"x" * 200 + b"\n" + b"y" * 200_000
    outcome = _submit(endpoint)
    assert "\n" not in outcome.detail
    assert 300 <= len(outcome.detail) <= 310


def test_body_is_read_no_further_than_64_kib() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        done = threading.Event()

        def endless_body() -> None:
            conn, _ = sock.accept()
            with conn:
                conn.recv(65536)
                # no Content-Length: the body ends only when the server closes, which it
                # does not do until the client gives up, so reading it all would time out
                conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n" + b"x" * 65_536 + b"y" * 65_536)
                done.wait(10)

        thread = threading.Thread(target=endless_body)
        thread.start()
        started = time.monotonic()
        outcome = post(f"http://127.0.0.1:{sock.getsockname()[1]}/", b"{}", "a/b", 3.0, "test")
        elapsed = time.monotonic() - started
        done.set()
        thread.join()
    assert (outcome.kind, outcome.status) == ("rejected", 400)
    assert outcome.detail.startswith("400 Bad Request: xxxx")
    assert elapsed < 2


def test_429_with_delta_seconds_is_retry(endpoint: Endpoint) -> None:
    endpoint.status = 429
    endpoint.headers = {"Retry-After": "7"}
    outcome = _submit(endpoint)
    assert (outcome.kind, outcome.status, outcome.retry_after) == ("retry", 429, 7.0)


def test_503_with_http_date_is_retry(endpoint: Endpoint) -> None:
    endpoint.status = 503
    endpoint.headers = {"Retry-After": email.utils.formatdate(time.time() + 120, usegmt=True)}
    outcome = _submit(endpoint)
    assert (outcome.kind, outcome.status) == ("retry", 503)
    assert outcome.retry_after is not None
    assert 117 <= outcome.retry_after <= 120


def test_invalid_retry_after_is_none(endpoint: Endpoint) -> None:
    endpoint.status = 500
    endpoint.headers = {"Retry-After": "soon"}
    assert _submit(endpoint) == Outcome("retry", 500, "500 Internal Server Error", None)


def test_redirect_is_rejected_and_not_followed(endpoint: Endpoint) -> None:
    endpoint.status = 301
    elsewhere = endpoint.url.replace("/indexnow", "/elsewhere")
    endpoint.headers = {"Location": elsewhere}
    outcome = _submit(endpoint)
    assert (outcome.kind, outcome.status) == ("rejected", 301)
    assert elsewhere in outcome.detail
    assert [r.path for r in endpoint.received] == ["/indexnow"]


def test_connection_refused_is_retry() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    outcome = post(f"http://127.0.0.1:{port}/", b"{}", "application/json", 5.0, "test")
    assert (outcome.kind, outcome.status, outcome.retry_after) == ("retry", None, None)
    assert "refused" in outcome.detail.lower()


def test_silent_server_times_out_as_retry() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()  # the kernel completes the handshake; nobody ever answers
        started = time.monotonic()
        outcome = post(f"http://127.0.0.1:{sock.getsockname()[1]}/", b"{}", "a/b", 0.5, "test")
        elapsed = time.monotonic() - started
    assert (outcome.kind, outcome.status) == ("retry", None)
    assert "timed out" in outcome.detail
    assert elapsed < 3


def test_server_that_hangs_up_is_retry() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()

        def hang_up() -> None:
            conn, _ = sock.accept()
            conn.recv(65536)
            conn.close()

        thread = threading.Thread(target=hang_up)
        thread.start()
        outcome = post(f"http://127.0.0.1:{sock.getsockname()[1]}/", b"{}", "a/b", 5.0, "test")
        thread.join()
    assert (outcome.kind, outcome.status) == ("retry", None)


@pytest.mark.parametrize(
    "url",
    ["ftp://example.com/", "file:///etc/passwd", "example.com/x", "http:///x", "http://h:99999/"],
)
def test_post_refuses_non_http_urls(url: str) -> None:
    with pytest.raises(ValueError, match="URL"):
        post(url, b"", "a/b", 1.0, "test")


def test_submit_refuses_bad_key_and_bad_batches(endpoint: Endpoint) -> None:
    with pytest.raises(ValueError, match="key"):
        indexnow.submit(endpoint.url, "example.com", "short", "", ["https://example.com/"])
    with pytest.raises(ValueError, match="batch"):
        _submit(endpoint, [])
    with pytest.raises(ValueError, match="batch"):
        indexnow.submit(
            endpoint.url,
            "example.com",
            KEY,
            "",
            [f"https://example.com/{i}" for i in range(10_001)],
        )
    assert endpoint.received == []


def test_websub_publish_is_form_encoded(endpoint: Endpoint) -> None:
    endpoint.status = 204
    topic = "https://example.com/feed.atom?lang=en&x=a b"
    outcome = websub.publish(endpoint.url, topic)
    assert outcome == Outcome("done", 204, "204 No Content", None)
    (request,) = endpoint.received
    assert request.method == "POST"
    assert request.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert request.headers["User-Agent"] == f"sitemapd/{__version__}"
    assert parse_qs(request.body.decode("ascii"), strict_parsing=True) == {
        "hub.mode": ["publish"],
        "hub.url": [topic],
    }


def test_websub_refuses_a_topic_that_is_not_a_url(endpoint: Endpoint) -> None:
    with pytest.raises(ValueError, match="topic"):
        websub.publish(endpoint.url, "feed.atom")
    assert endpoint.received == []


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("abcd1234", True),
        ("a" * 128, True),
        ("Ab-9" * 8, True),
        ("abc1234", False),
        ("a" * 129, False),
        ("abcd_1234", False),
        ("abcd1234\n", False),
        ("abcd 1234", False),
        ("abcd\u00e91234", False),
        ("", False),
    ],
)
def test_valid_key(key: str, valid: bool) -> None:
    assert keyfile.valid_key(key) is valid


def test_key_file() -> None:
    assert keyfile.key_file(KEY) == (f"{KEY}.txt", KEY.encode())
    with pytest.raises(ValueError, match="invalid IndexNow key"):
        keyfile.key_file("../../etc")


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("0", 0.0),
        (" 120 ", 120.0),
        ("Sun, 06 Nov 1994 08:49:37 GMT", 0.0),
        ("Thu, 01 Jan 2065 00:01:40 GMT", 100.0),
        ("Thu Jan  1 00:01:40 2065", 100.0),
        ("-5", None),
        ("1.5", None),
        ("tomorrow", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_values(value: str | None, seconds: float | None) -> None:
    assert retry_after(value, now=2_997_993_600.0) == seconds


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (201, "done"),
        (204, "done"),
        (404, "rejected"),
        (405, "rejected"),
        (410, "rejected"),
        (408, "retry"),
        (500, "retry"),
        (502, "retry"),
        (504, "retry"),
    ],
)
def test_classify(status: int, kind: str) -> None:
    assert classify(status) == kind
