"""The sidecar HTTP endpoint: health, metrics and the output files, as clients see them."""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Site, page, published
from daemon_harness import RunningDaemon, http_port, request
from lxml import etree

from sitemapd.daemon.sidecar import HEAD_TIMEOUT
from sitemapd.daemon.watch import FAIL_HOOK


@pytest.fixture
def served(site: Site) -> Iterator[tuple[Site, RunningDaemon, int]]:
    site.configure(
        sitemap="gzip = false",
        source='[daemon]\ndebounce = 0.05\n[http]\nlisten = "127.0.0.1:0"\nserve_files = true\n',
    )
    site.write("index.html", page("Home"))
    site.write("a.html", page("A"))
    (site.base / "secret.txt").write_text("not for you")
    daemon = RunningDaemon(site)
    daemon.wait_ready()
    try:
        yield site, daemon, http_port(daemon)
    finally:
        if daemon.proc.poll() is None:
            daemon.kill()


def test_health_and_metrics(served: tuple[Site, RunningDaemon, int]) -> None:
    _, _, port = served
    status, _, body = request(port, "/healthz")
    assert (status, body) == (200, b"ok\n")
    status, headers, body = request(port, "/metrics")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain")
    text = body.decode()
    assert 'sitemapd_urls{state="live"} 2.0' in text
    assert "sitemapd_publishes_total 1.0" in text
    assert "sitemapd_bytes_written_total" in text
    assert "sitemapd_batch_seconds_bucket" in text
    assert "sitemapd_source_errors_total 0.0" in text
    assert re.search(r"sitemapd_last_publish_timestamp_seconds \d", text)
    assert "sitemapd_healthy 1.0" in text


def test_files_with_etag_and_conditional_requests(served: tuple[Site, RunningDaemon, int]) -> None:
    site, _, port = served
    status, headers, body = request(port, "/sitemap.xml")
    assert status == 200
    assert headers["Content-Type"] == "application/xml; charset=utf-8"
    assert body == (site.out / "sitemap.xml").read_bytes()
    assert int(headers["Content-Length"]) == len(body)
    etag, modified = headers["ETag"], headers["Last-Modified"]
    assert request(port, "/sitemap.xml", {"If-None-Match": etag})[0] == 304
    assert request(port, "/sitemap.xml", {"If-None-Match": '"other", ' + etag})[0] == 304
    assert request(port, "/sitemap.xml", {"If-None-Match": '"other"'})[0] == 200
    assert request(port, "/sitemap.xml", {"If-Modified-Since": modified})[0] == 304
    earlier = email.utils.formatdate(time.time() - 86400 * 365, usegmt=True)
    assert request(port, "/sitemap.xml", {"If-Modified-Since": earlier})[0] == 200
    status, headers, body = request(port, "/sitemap-1.xml", method="HEAD")
    assert (status, body) == (200, b"")
    assert int(headers["Content-Length"]) == (site.out / "sitemap-1.xml").stat().st_size


@pytest.mark.parametrize(
    "path",
    [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/..%2fsecret.txt",
        "//etc/passwd",
        "/%2fetc%2fpasswd",
        "/etc/passwd",
        "/",
        "/nope.xml",
        "/.sitemapd-tmp-sitemap.xml-1",
        "/sitemap.xml/",
        "/%00sitemap.xml",
    ],
)
def test_nothing_outside_the_output_is_served(
    served: tuple[Site, RunningDaemon, int], path: str
) -> None:
    _, _, port = served
    status, _, body = request(port, path)
    assert status == 404
    assert b"secret" not in body
    assert b"root:" not in body


def test_gzip_files_are_served_as_gzip_files(site: Site) -> None:
    site.configure(
        sitemap="gzip = true",
        source='[http]\nlisten = "127.0.0.1:0"\nserve_files = true\n',
    )
    site.write("index.html", page("Home"))
    daemon = RunningDaemon(site)
    try:
        daemon.wait_ready()
        status, headers, body = request(http_port(daemon), "/sitemap-1.xml.gz")
        assert status == 200
        assert headers["Content-Type"] == "application/gzip"
        assert "Content-Encoding" not in headers
        assert body == (site.out / "sitemap-1.xml.gz").read_bytes()
    finally:
        daemon.kill()


def test_files_are_off_unless_asked_for(site: Site) -> None:
    site.configure(source='[http]\nlisten = "127.0.0.1:0"\n')
    site.write("index.html", page("Home"))
    daemon = RunningDaemon(site)
    try:
        daemon.wait_ready()
        port = http_port(daemon)
        assert request(port, "/sitemap.xml")[0] == 404
        assert request(port, "/healthz")[0] == 200
    finally:
        daemon.kill()


@pytest.mark.slow
def test_concurrent_clients_always_get_complete_files(
    served: tuple[Site, RunningDaemon, int],
) -> None:
    site, daemon, port = served
    for n in range(300):
        site.write(f"bulk/p{n}.html", page(f"P{n}", "words " * 50))
    # However the debounce splits them into publishes: all 302 pages are listed.
    daemon.wait_until(lambda: len(published(site.out)) == 302, 30, "302 URLs published")
    errors: list[str] = []
    stop = threading.Event()

    def publish_continuously() -> None:
        n = 0
        while not stop.is_set():
            site.write(f"bulk/p{n % 300}.html", page(f"P{n}", f"edit {n} " * 50))
            n += 1
            time.sleep(0.1)  # longer than the debounce: each edit is published

    start = threading.Barrier(200)

    def client() -> None:
        start.wait()  # all 200 requests at once
        try:
            status, headers, body = request(port, "/sitemap-1.xml")
            assert status == 200
            assert int(headers["Content-Length"]) == len(body)
            root = etree.fromstring(body)
            assert len(root) == 302
        except Exception as exc:  # every failure is reported, not just the first
            errors.append(repr(exc))

    before = daemon.publishes()
    writer = threading.Thread(target=publish_continuously)
    writer.start()
    for _round in range(3):  # three waves, spread over several publishes
        clients = [threading.Thread(target=client) for _ in range(200)]
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join()
        time.sleep(1.0)
    stop.set()
    writer.join()
    assert errors == []
    assert daemon.publishes() - before >= 2  # the files really changed under the clients


def test_a_failed_watcher_makes_the_daemon_unhealthy(site: Site, tmp_path: object) -> None:
    site.configure(source='[http]\nlisten = "127.0.0.1:0"\n')
    site.write("index.html", page("Home"))
    os.environ[FAIL_HOOK] = "1"
    try:
        daemon = RunningDaemon(site)
    finally:
        del os.environ[FAIL_HOOK]
    try:
        daemon.wait_ready()
        status, _, body = request(http_port(daemon), "/healthz")
        assert status == 503
        assert b"watching disabled by SITEMAPD_TEST_FAIL_WATCHERS" in body
        _, _, metrics = request(http_port(daemon), "/metrics")
        assert b"sitemapd_healthy 0.0" in metrics
    finally:
        daemon.kill()


def test_failing_publishes_make_the_daemon_unhealthy(
    served: tuple[Site, RunningDaemon, int],
) -> None:
    site, daemon, port = served
    shutil.rmtree(site.out)
    site.out.write_text("not a folder")
    site.write("x.html", page("X"))
    daemon.wait_for_log(r"batch failed")
    status, _, body = request(port, "/healthz")
    assert status == 503
    assert b"publishing failed: cannot create output directory" in body
    assert b"sitemapd_batch_failures_total 1.0" in request(port, "/metrics")[2]
    site.out.unlink()
    daemon.wait_until(lambda: request(port, "/healthz")[0] == 200, timeout=60)


def test_only_files_the_ledger_records_as_published_are_served(
    served: tuple[Site, RunningDaemon, int],
) -> None:
    site, _, port = served
    shard = (site.out / "sitemap-1.xml").read_bytes()
    # Names sitemapd could have written, put there by someone else.
    for name in ("sitemap-99.xml", "sitemap-2.xml.gz", "sitemap-3.xml"):
        (site.out / name).write_bytes(shard.replace(b"a.html", b"planted.html"))
        assert request(port, f"/{name}")[0] == 404, name
    assert request(port, "/sitemap-1.xml")[0] == 200


def test_a_weak_entity_tag_matches(served: tuple[Site, RunningDaemon, int]) -> None:
    _, _, port = served
    etag = request(port, "/sitemap.xml")[1]["ETag"]
    # A proxy that gzipped the file on its way gives the tag back weak (as nginx does).
    assert request(port, "/sitemap.xml", {"If-None-Match": f"W/{etag}"})[0] == 304
    assert request(port, "/sitemap.xml", {"If-None-Match": f'W/"x", W/{etag}'})[0] == 304
    assert request(port, "/sitemap.xml", {"If-None-Match": 'W/"x"'})[0] == 200


def test_connections_are_kept_alive(served: tuple[Site, RunningDaemon, int]) -> None:
    site, _, port = served
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        bodies = []
        for path in ("/sitemap.xml", "/healthz", "/missing.xml", "/sitemap-1.xml"):
            conn.request("GET", path)
            response = conn.getresponse()
            assert response.version == 11
            bodies.append(response.read())
            if path == "/sitemap.xml":
                first = conn.sock
            assert conn.sock is first, f"reconnected for {path}"
        assert bodies[-1] == (site.out / "sitemap-1.xml").read_bytes()
    finally:
        conn.close()


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "BREW"])
def test_other_methods_are_not_allowed(
    served: tuple[Site, RunningDaemon, int], method: str
) -> None:
    _, _, port = served
    status, headers, _ = request(port, "/sitemap.xml", method=method)
    assert status == 405
    assert headers["Allow"] == "GET, HEAD"


def _slow_client(port: int, head: bytes = b"GET /healthz HTTP/1.1\r\nHost: x\r\n") -> socket.socket:
    """Return a connection that has sent part of a request head (or was refused)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    with contextlib.suppress(OSError):  # the sidecar may hang up at once
        sock.sendall(head)
    return sock


@pytest.mark.slow
def test_a_slow_request_head_is_cut_off(served: tuple[Site, RunningDaemon, int]) -> None:
    _, _, port = served
    sock = _slow_client(port)
    start = time.monotonic()
    try:
        sock.settimeout(2)
        # One byte a second: each read is quick, the head never ends.
        while time.monotonic() - start < HEAD_TIMEOUT + 10:
            try:
                if sock.recv(1024) == b"":
                    break
            except TimeoutError:
                sock.sendall(b"X")
            except ConnectionResetError:
                break
        assert time.monotonic() - start < HEAD_TIMEOUT + 5
    finally:
        sock.close()


@pytest.mark.slow
def test_a_flood_of_slow_clients_starves_neither_health_nor_publishing(site: Site) -> None:
    site.configure(
        sitemap="gzip = false",
        source='[daemon]\ndebounce = 0.05\n[http]\nlisten = "127.0.0.1:0"\nserve_files = true\n',
    )
    site.write("index.html", page("Home"))
    # 128 descriptors, no way up: 400 slow clients would take them all.
    daemon = RunningDaemon(site, open_files=(128, 128))
    flooding = threading.Event()
    clients: list[socket.socket] = []
    try:
        daemon.wait_ready()
        port = http_port(daemon)

        def flood() -> None:
            while not flooding.is_set():
                try:
                    clients.append(_slow_client(port))
                except OSError:
                    time.sleep(0.01)
                if len(clients) > 400:
                    clients.pop(0).close()

        flooder = threading.Thread(target=flood, daemon=True)
        flooder.start()
        daemon.wait_until(lambda: len(clients) >= 400, 60, "400 slow clients")
        for _ in range(5):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/healthz")
            response = conn.getresponse()
            assert (response.status, response.read()) == (200, b"ok\n")
            conn.close()
        for n in range(20):
            site.write(f"p{n}.html", page(f"P{n}", "words " * 20))
        expected = {f"https://example.com/p{n}.html" for n in range(20)}
        daemon.wait_for_urls(expected | {"https://example.com/"})
        assert "cannot read" not in daemon.log()
        assert not re.search(r"[1-9]\d* invalid|Too many open files", daemon.log())
        status, _, body = request(port, "/sitemap-1.xml")
        assert status == 200
        assert b"p19.html" in body
    finally:
        flooding.set()
        for sock in list(clients):
            sock.close()
        daemon.kill()


def test_the_soft_open_files_limit_is_raised_at_start(site: Site) -> None:
    site.write("index.html", page("Home"))
    daemon = RunningDaemon(site, open_files=(256, 4096))
    try:
        daemon.wait_ready()
        limits = Path(f"/proc/{daemon.proc.pid}/limits").read_text()
        assert re.search(r"Max open files\s+4096\s+4096", limits), limits
    finally:
        daemon.kill()


def test_server_header_names_sitemapd_alone(served: tuple[Site, RunningDaemon, int]) -> None:
    _, _, port = served
    assert request(port, "/healthz")[1]["Server"] == "sitemapd"
