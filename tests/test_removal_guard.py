"""The mass-removal guard through the real CLI and daemon: a scan that takes most of a
source's pages away is held (nothing removed, nothing announced) until confirmed or seen
again after the grace period; small removals and additions go through at once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from conftest import Site, page
from daemon_harness import RunningDaemon, http_port, request
from endpoints import Endpoint

KEY = "0123456789abcdef"
PAGES = 100


def guarded_site(
    site: Site, endpoint: Endpoint, grace: str = "15m", extra: str = "", window: str = "10m"
) -> None:
    site.configure(
        site=f'removal_grace = "{grace}"\nremoval_window = "{window}"',
        extra=f'[indexnow]\nkey = "{KEY}"\nendpoint = "{endpoint.url("/indexnow")}"\n{extra}',
    )
    for n in range(PAGES):
        site.write(f"p{n}.html", page(f"Page {n}", f"text {n}"))


def announced(endpoint: Endpoint) -> list[str]:
    """Return every URL sent to IndexNow, in order."""
    return [url for r in endpoint.seen("/indexnow") for url in r.json()["urlList"]]  # type: ignore[union-attr]


def delete(site: Site, numbers: range) -> set[str]:
    """Delete pages `numbers`; return their URLs."""
    for n in numbers:
        (site.root / f"p{n}.html").unlink()
    return {f"https://example.com/p{n}.html" for n in numbers}


@contextmanager
def held_removal(
    site: Site, endpoint: Endpoint, grace: str
) -> Iterator[tuple[RunningDaemon, int, set[str]]]:
    """Run the daemon on a guarded site with a sidecar, delete 90 of its pages and wait
    until the held removal makes it unhealthy; yield the daemon, its port and the URLs
    deleted. The daemon must stop cleanly."""
    guarded_site(
        site,
        endpoint,
        grace=grace,
        extra='[http]\nlisten = "127.0.0.1:0"\n[daemon]\ndebounce = 0.1\n',
    )
    daemon = RunningDaemon(site)
    try:
        daemon.wait_ready()
        port = http_port(daemon)
        assert request(port, "/healthz")[0] == 200
        gone = delete(site, range(90))
        daemon.wait_until(lambda: request(port, "/healthz")[0] == 503, 20, "unhealthy")
        yield daemon, port, gone
    finally:
        assert daemon.stop() == 0


def test_mass_removal_is_held_until_confirmed(site: Site, endpoint: Endpoint) -> None:
    guarded_site(site, endpoint)
    site.build()
    before = site.urls()
    assert len(before) == PAGES
    gone = delete(site, range(90))
    site.write("new.html", page("New", "added in the same deploy"))
    site.write("p95.html", page("Page 95", "edited in the same deploy"))
    result = site.cli("build", check=False)
    assert result.returncode == 1
    # Counted among the live URLs, the addition of the same scan included.
    assert "removal held: a scan would remove 90 of 101 live URLs (89%)" in result.stderr
    assert "--confirm-removal" in result.stderr
    # Nothing removed, nothing announced of the removal; the addition and edit went out.
    urls = site.urls()
    assert set(urls) == set(before) | {"https://example.com/new.html"}
    assert sorted(announced(endpoint)) == [
        "https://example.com/new.html",
        "https://example.com/p95.html",
    ]
    status = site.cli("status").stdout
    assert "removal held" in status
    assert json.loads(site.cli("status", "--json").stdout)["removals_held"][0]["removing"] == 90
    # Held again by the next build (the grace period has not passed).
    assert site.cli("build", check=False).returncode == 1
    assert set(site.urls()) == set(urls)

    confirmed = site.cli("build", "--confirm-removal")
    assert "90 gone" in confirmed.stdout
    assert set(site.urls()) == set(urls) - gone
    assert sorted(announced(endpoint)[2:]) == sorted(gone)
    # Published once: a later build has nothing left to hold or announce.
    site.build()
    assert len(announced(endpoint)) == 2 + len(gone)
    assert "removal held" not in site.cli("status").stdout


def test_small_removals_go_through(site: Site, endpoint: Endpoint) -> None:
    # Each scan judged alone (no window): removals under half go through one by one.
    guarded_site(site, endpoint, window="0")
    site.build()
    gone = delete(site, range(10))
    assert "10 gone" in site.build().stdout
    assert not set(site.urls()) & gone
    # Removals under half go through, one after another.
    delete(site, range(10, 50))
    assert "40 gone" in site.build().stdout
    delete(site, range(50, 70))
    assert "20 gone" in site.build().stdout
    # A small site may lose most of its pages: up to the floor nothing is held.
    delete(site, range(70, 90))
    assert "20 gone" in site.build().stdout
    assert len(site.urls()) == 10


def test_removal_seen_again_after_grace_goes_ahead(
    site: Site, endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    guarded_site(site, endpoint, grace="10m")
    monkeypatch.setenv("SITEMAPD_TEST_NOW", "2026-11-20T10:00:00+00:00")
    site.build()
    delete(site, range(60))
    assert site.cli("build", check=False).returncode == 1
    monkeypatch.setenv("SITEMAPD_TEST_NOW", "2026-11-20T10:09:00+00:00")
    assert site.cli("build", check=False).returncode == 1
    assert len(site.urls()) == PAGES
    monkeypatch.setenv("SITEMAPD_TEST_NOW", "2026-11-20T10:10:00+00:00")
    assert "60 gone" in site.build().stdout
    assert len(site.urls()) == PAGES - 60


def test_a_different_removal_starts_the_grace_again(
    site: Site, endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    guarded_site(site, endpoint, grace="10m")
    monkeypatch.setenv("SITEMAPD_TEST_NOW", "2026-11-20T10:00:00+00:00")
    site.build()
    delete(site, range(60))
    assert site.cli("build", check=False).returncode == 1
    # The rsync goes on deleting: a removal not seen before.
    delete(site, range(60, 70))
    monkeypatch.setenv("SITEMAPD_TEST_NOW", "2026-11-20T10:10:00+00:00")
    assert site.cli("build", check=False).returncode == 1
    # The rsync finished and put everything back: the hold is lifted, nothing is lost.
    for n in range(70):
        site.write(f"p{n}.html", page(f"Page {n}", f"text {n}"))
    site.build()
    assert len(site.urls()) == PAGES
    assert "removal held" not in site.cli("status").stdout
    assert announced(endpoint) == []


def test_url_list_is_read_again_while_held(site: Site, endpoint: Endpoint) -> None:
    lines = "".join(f"https://example.com/l{n}\n" for n in range(PAGES))
    listing = site.base / "urls.txt"
    listing.write_text(lines)
    site.configure(
        site='removal_grace = "15m"',
        extra='[[source]]\ntype = "urllist"\npath = "urls.txt"\nname = "list"\n',
    )
    site.build()
    listing.write_text(lines.split("\n", 1)[0] + "\n")
    result = site.cli("build", check=False)
    assert "list: removal held: a scan would remove 99 of 100" in result.stderr
    assert len(site.urls()) == PAGES
    # The unchanged list is not skipped as already read: the confirmation applies it.
    site.cli("build", "--confirm-removal")
    assert set(site.urls()) == {"https://example.com/l0"}


def test_config_refuses_a_bad_share(site: Site) -> None:
    site.configure(site="max_removal = 1.5")
    result = site.cli("check-config", check=False)
    assert result.returncode == 2
    assert "site.max_removal" in result.stderr
    site.configure(site='max_removal = "90%"')
    site.cli("check-config")


def test_daemon_is_unhealthy_while_a_removal_is_held(site: Site, endpoint: Endpoint) -> None:
    with held_removal(site, endpoint, grace="4s") as (daemon, port, gone):
        assert b"removal held" in request(port, "/healthz")[2]
        assert len(site.urls()) == PAGES
        assert announced(endpoint) == []
        # Still missing after the grace period: published, announced once, healthy again.
        daemon.wait_until(lambda: request(port, "/healthz")[0] == 200, 30, "healthy")
        assert not set(site.urls()) & gone
        endpoint.wait("/indexnow", 1)
        assert sorted(announced(endpoint)) == sorted(gone)


def test_confirming_beside_a_running_daemon(site: Site, endpoint: Endpoint) -> None:
    with held_removal(site, endpoint, grace="1h") as (daemon, port, gone):
        # The daemon holds the state directory: the confirmation is left for it.
        result = site.cli("build", "--confirm-removal")
        assert "left the confirmation" in result.stdout
        daemon.wait_until(lambda: request(port, "/healthz")[0] == 200, 20, "healthy")
        assert not set(site.urls()) & gone
        endpoint.wait("/indexnow", 1)
        assert sorted(announced(endpoint)) == sorted(gone)
        assert not (site.state / "confirm-removal").exists()
        # The request is used up; what follows is judged afresh (under the floor: at once).
        delete(site, range(90, 100))
        site.write("x.html", page("X"))
        daemon.wait_for_urls({"https://example.com/x.html"})
        endpoint.wait("/indexnow", 2)
        assert len(announced(endpoint)) == len(gone) + 11


def test_a_hold_lifts_when_the_pages_come_back(site: Site, endpoint: Endpoint) -> None:
    with held_removal(site, endpoint, grace="1h") as (daemon, port, _):
        # The half-finished copy completes: the same pages are back.
        for n in range(90):
            site.write(f"p{n}.html", page(f"Page {n}", f"text {n}"))
        daemon.wait_until(lambda: request(port, "/healthz")[0] == 200, 20, "healthy")
        assert len(site.urls()) == PAGES
        assert "removal held" not in site.cli("status").stdout
    assert announced(endpoint) == []


@pytest.mark.slow
def test_a_slow_mass_removal_is_held_once_the_window_passes_the_share(
    site: Site, endpoint: Endpoint
) -> None:
    """A slow `rsync --delete`: 80 of 100 pages deleted 4 at a time, each batch far under
    the share, is held once the removals within the window pass it."""
    guarded_site(site, endpoint, extra='[http]\nlisten = "127.0.0.1:0"\n[daemon]\ndebounce = 0.1\n')
    daemon = RunningDaemon(site)
    try:
        daemon.wait_ready()
        port = http_port(daemon)
        gone: set[str] = set()
        for start in range(0, 80, 4):
            gone |= delete(site, range(start, start + 4))
            # Each batch is published (or held) before the next deletion.
            daemon.wait_until(
                lambda removed=frozenset(gone): (
                    set(site.urls()).isdisjoint(removed) or request(port, "/readyz")[0] == 503
                ),
                20,
                "the batch",
            )
        status, _, body = request(port, "/readyz")
        assert status == 503
        assert b"removed within removal_window" in body
        # Half of the pages at most went; the rest of the removal is held, and said so.
        assert len(site.urls()) >= PAGES // 2
        assert "removal held" in site.cli("status").stdout
        assert "removed within removal_window" in daemon.log()
        result = site.cli("build", "--confirm-removal")
        assert "left the confirmation" in result.stdout
        daemon.wait_until(lambda: set(site.urls()).isdisjoint(gone), 30, "the confirmed removal")
        assert len(site.urls()) == PAGES - 80
    finally:
        assert daemon.stop() == 0
