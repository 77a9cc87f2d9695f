"""IndexNow and WebSub through the real daemon and CLI, against HTTP servers on
127.0.0.1: at least once, once per change, retries that honour Retry-After, refusals
that are not retried, and nothing sent for an unchanged rebuild."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time

from conftest import Site, page, run_cli
from daemon_harness import start
from endpoints import Endpoint

KEY = "0123456789abcdef"
ATOM = "https://example.com/atom.xml"
RSS = "https://example.com/rss.xml"


def notify_site(site: Site, server: Endpoint, feed: bool = True) -> None:
    extra = f'[indexnow]\nkey = "{KEY}"\nendpoint = "{server.url("/indexnow")}"\n' + (
        f'[feed]\ntitle = "Updates"\n[websub]\nhubs = ["{server.url("/hub")}"]\n' if feed else ""
    )
    site.configure(extra=extra + "[daemon]\ndebounce = 0.1\n")


def submitted(server: Endpoint) -> list[str]:
    """Return every URL IndexNow accepted, in order."""
    return [
        url
        for request in server.seen("/indexnow")
        if request.status in (200, 202)
        for url in request.json()["urlList"]  # type: ignore[union-attr]
    ]


def test_changes_reach_indexnow_and_hubs_once(site: Site, endpoint: Endpoint) -> None:
    notify_site(site, endpoint)
    site.write("a.html", page("A", "1"))
    site.write("b.html", page("B", "1"))
    daemon = start(site)
    try:
        # The first publish tells each hub about each feed; the existing site is not
        # announced to IndexNow.
        hub = endpoint.wait("/hub", 2)
        assert sorted(r.form()["hub.url"][0] for r in hub) == [ATOM, RSS]
        assert all(r.form()["hub.mode"] == ["publish"] for r in hub)
        assert endpoint.seen("/indexnow") == []
        assert (site.out / f"{KEY}.txt").read_text() == KEY

        site.write("a.html", page("A", "2"))
        (site.root / "b.html").unlink()
        site.write("c.html", page("C", "1"))
        endpoint.wait("/indexnow", 1)
        endpoint.wait("/hub", 4)
        time.sleep(1.0)
        body = endpoint.seen("/indexnow")[0].json()
        assert body["host"] == "example.com"
        assert body["key"] == KEY
        assert body["keyLocation"] == f"https://example.com/{KEY}.txt"
        assert sorted(submitted(endpoint)) == [
            "https://example.com/a.html",
            "https://example.com/b.html",
            "https://example.com/c.html",
        ]
        assert len(endpoint.seen("/hub")) == 4  # one ping per feed change
    finally:
        assert daemon.stop() == 0
    # Restart with nothing changed: nothing is sent again.
    daemon = start(site)
    try:
        time.sleep(1.5)
        assert len(endpoint.seen("/hub")) == 4
        assert len(endpoint.seen("/indexnow")) == 1
    finally:
        daemon.stop()


def test_throttled_then_refused(site: Site, endpoint: Endpoint) -> None:
    notify_site(site, endpoint, feed=False)
    site.write("a.html", page("A", "1"))
    daemon = start(site)
    try:
        endpoint.script["/indexnow"] = [(429, {"Retry-After": "2"})]
        site.write("a.html", page("A", "2"))
        first, second = endpoint.wait("/indexnow", 2, timeout=20)
        # Retried no sooner than Retry-After said.
        assert second.at - first.at >= 1.9
        assert submitted(endpoint) == ["https://example.com/a.html"]

        endpoint.script["/indexnow"] = [(422, {})]
        site.write("a.html", page("A", "3"))
        endpoint.wait("/indexnow", 3)
        site.write("b.html", page("B", "1"))
        requests = endpoint.wait("/indexnow", 4)
        # The refused batch was not sent again; the next change went out on its own.
        assert requests[3].json()["urlList"] == ["https://example.com/b.html"]
        time.sleep(1)
        assert len(endpoint.seen("/indexnow")) == 4
    finally:
        daemon.stop()


def test_forbidden_key_shows_in_status_and_health(site: Site, endpoint: Endpoint) -> None:
    notify_site(site, endpoint, feed=False)
    site.configure(
        extra=f'[indexnow]\nkey = "{KEY}"\nendpoint = "{endpoint.url("/indexnow")}"\n'
        '[http]\nlisten = "127.0.0.1:0"\n[daemon]\ndebounce = 0.1\n'
    )
    site.write("a.html", page("A", "1"))
    site.build()
    endpoint.default = 403
    site.write("a.html", page("A", "2"))
    site.build()
    report = json.loads(site.cli("status", "--json").stdout)
    assert "403" in report["notifications"]["indexnow_key_rejected"]
    assert "KEY REFUSED" in site.cli("status").stdout
    endpoint.default = 200
    site.write("a.html", page("A", "3"))
    site.build()
    report = json.loads(site.cli("status", "--json").stdout)
    assert report["notifications"]["indexnow_key_rejected"] is None


def test_a_hub_that_refuses_or_is_away_shows_in_status(site: Site, endpoint: Endpoint) -> None:
    notify_site(site, endpoint)
    hub = endpoint.url("/hub")
    site.write("a.html", page("A", "1"))
    endpoint.script["/hub"] = [(403, {}), (403, {})]  # both feeds
    site.build()
    text = site.cli("status").stdout.splitlines()
    assert any(line.startswith(f"websub:       {hub}: REFUSED at ") for line in text), text
    (told,) = json.loads(site.cli("status", "--json").stdout)["notifications"]["websub"]
    assert (told["hub"], told["owed"], told["last_answer"]["status"]) == (hub, [], 403)
    site.write("b.html", page("B", "1"))  # a new entry on the feeds: the hub is told
    site.build()
    assert "websub:" not in site.cli("status").stdout
    # A hub that cannot be reached: the feeds wait for it.
    away = "http://127.0.0.1:9/hub"
    site.configure(extra=f'[feed]\ntitle = "Updates"\n[websub]\nhubs = ["{away}"]\n')
    site.write("a.html", page("A", "3"))
    site.cli("build", check=False)
    assert f"websub:       {away}: not told of {ATOM}, {RSS} yet" in site.cli("status").stdout


def test_outage_and_restart_deliver_every_change_once(site: Site, endpoint: Endpoint) -> None:
    notify_site(site, endpoint)
    for name in "abc":
        site.write(f"{name}.html", page(name, "1"))
    daemon = start(site)
    endpoint.wait("/hub", 2)
    port = endpoint.port
    endpoint.stop()
    try:
        site.write("a.html", page("a", "2"))
        daemon.wait_for_log("indexnow .*retrying", 20)
        site.write("b.html", page("b", "2"))
        time.sleep(0.5)
    finally:
        assert daemon.stop() == 0
    # Changed while stopped, too.
    site.write("c.html", page("c", "2"))
    restarted = Endpoint(port)
    daemon = start(site)
    try:
        restarted.wait("/indexnow", 1)
        restarted.wait("/hub", 2)
        time.sleep(1.5)
        assert sorted(submitted(restarted)) == [
            "https://example.com/a.html",
            "https://example.com/b.html",
            "https://example.com/c.html",
        ]
        # The feeds changed while the hub was down: each topic is pinged once, now.
        assert sorted(r.form()["hub.url"][0] for r in restarted.seen("/hub")) == [ATOM, RSS]
    finally:
        daemon.stop()
        restarted.stop()


def test_build_splits_batches_at_10000_and_sends_nothing_when_unchanged(
    site: Site, endpoint: Endpoint
) -> None:
    listing = site.base / "urls.txt"
    listing.write_text("".join(f"https://example.com/u{n}\t2026-01-01\n" for n in range(25_000)))
    site.configure(
        extra=f'[[source]]\ntype = "urllist"\npath = "{listing}"\n'
        f'[indexnow]\nkey = "{KEY}"\nendpoint = "{endpoint.url("/indexnow")}"\n'
    )
    site.build()
    assert endpoint.seen("/indexnow") == []
    listing.write_text("".join(f"https://example.com/u{n}\t2026-01-02\n" for n in range(25_000)))
    site.build()
    sizes = [len(r.json()["urlList"]) for r in endpoint.seen("/indexnow")]  # type: ignore[arg-type]
    assert sizes == [10_000, 10_000, 5_000]
    assert len(set(submitted(endpoint))) == 25_000
    site.build()
    run_cli("build", "-c", str(site.config))
    assert len(endpoint.seen("/indexnow")) == 3


def test_a_feed_recorded_by_an_earlier_release_is_not_announced_again(
    site: Site, endpoint: Endpoint
) -> None:
    notify_site(site, endpoint)
    site.write("a.html", page("A", "1"))
    site.build()
    assert len(endpoint.seen("/hub")) == 2
    # As an earlier release left it: each file recorded by its SHA-256, which the hub
    # heard of too.
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        for name, digest in conn.execute("SELECT name, sha256 FROM published").fetchall():
            sha = hashlib.sha256((site.out / name).read_bytes()).hexdigest()
            conn.execute("UPDATE published SET sha256 = ? WHERE name = ?", (sha, name))
            conn.execute("UPDATE cursors SET value = ? WHERE value = ?", (sha, digest))
    conn.close()
    # The feeds' bytes unchanged, their mtimes not (a copy, a restore): stored again as
    # they are, they are no news to the hub.
    for name in ("atom.xml", "rss.xml"):
        os.utime(site.out / name, ns=(1_000_000_000, 1_000_000_000))
    site.build()
    assert len(endpoint.seen("/hub")) == 2
    # A new title: other feed bytes, whatever second the build runs in.
    site.write("a.html", page("A, again", "2"))
    site.build()
    assert len(endpoint.seen("/hub")) == 4
