"""`build --dry-run` and `run --dry-run` through the real CLI: they list exactly what the
next real build does, and write, record and send nothing, even beside a running daemon."""

from __future__ import annotations

import json
import re
import time

from conftest import Site, page, snapshot
from daemon_harness import start
from endpoints import Endpoint

KEY = "0123456789abcdef"


def notifying(site: Site, endpoint: Endpoint) -> None:
    site.configure(
        site='robots_txt = "site/robots.txt"',
        extra=f'[indexnow]\nkey = "{KEY}"\nendpoint = "{endpoint.url("/indexnow")}"\n'
        f'[feed]\ntitle = "Updates"\n[websub]\nhubs = ["{endpoint.url("/hub")}"]\n'
        "[daemon]\ndebounce = 0.1\n",
    )
    site.write("robots.txt", "User-agent: *\nDisallow: /private/\n")
    for name in "abde":
        site.write(f"{name}.html", page(name.upper(), "first"))


def state(site: Site) -> dict[str, object]:
    """Return everything a dry run must leave alone: output files, ledger, robots.txt."""
    return {
        "out": snapshot(site.out),
        "state": snapshot(site.state),
        "robots": snapshot(site.root)["robots.txt"],
    }


def change(site: Site) -> None:
    site.write("a.html", page("A", "edited"))
    (site.root / "b.html").unlink()
    site.write("c.html", page("C", "new"))
    site.write("d.html", page("D", "first", robots="noindex"))
    site.write("private/p.html", page("P", "disallowed"))


def test_dry_run_lists_what_the_build_then_does(site: Site, endpoint: Endpoint) -> None:
    notifying(site, endpoint)
    site.build()
    requests = len(endpoint.requests)
    # An edit's lastmod is the clock of the build that sees it, to the second: in the
    # first build's second, the dry run would rightly find the index unchanged.
    time.sleep(1.1)
    change(site)
    before = state(site)

    report = json.loads(site.cli("build", "--dry-run", "--json").stdout)
    assert state(site) == before
    assert len(endpoint.requests) == requests
    url = "https://example.com/"
    assert report["new"] == [f"{url}c.html"]
    assert report["updated"] == [f"{url}a.html"]
    assert report["gone"] == [f"{url}b.html"]
    assert report["excluded"] == [
        {"loc": f"{url}d.html", "reason": "noindex"},
        {"loc": f"{url}private/p.html", "reason": "robots.txt"},
    ]
    assert report["held"] == report["failed"] == {}

    hubs = len(endpoint.seen("/hub"))
    result = site.build()
    assert "1 new, 1 updated, 2 gone" in result.stdout
    assert f"wrote {len(report['written'])} files" in result.stdout
    assert f"removed {len(report['removed'])}" in result.stdout
    changed = {n for n, v in snapshot(site.out).items() if before["out"].get(n) != v}  # type: ignore[attr-defined]
    assert changed == set(report["written"])
    indexnow = [u for r in endpoint.seen("/indexnow") for u in r.json()["urlList"]]  # type: ignore[union-attr]
    assert sorted(indexnow) == sorted(report["indexnow"])
    pinged = [r.form()["hub.url"][0] for r in endpoint.seen("/hub")[hubs:]]
    assert sorted(w["topic"] for w in report["websub"]) == sorted(pinged)
    assert pinged


def test_first_dry_run_creates_nothing(site: Site) -> None:
    site.write("a.html", page("A"))
    text = site.cli("build", "--dry-run").stdout
    assert "new: 1\n  https://example.com/a.html" in text
    assert re.search(r"files written: 2\n  sitemap-1.xml\n  sitemap.xml", text)
    assert not site.out.exists()
    assert not (site.state / "ledger.sqlite3").exists()


def test_dry_run_beside_a_daemon(site: Site, endpoint: Endpoint) -> None:
    notifying(site, endpoint)
    daemon = start(site)
    try:
        change(site)
        daemon.wait_for_urls({f"https://example.com/{n}.html" for n in "ace"})
        endpoint.wait("/indexnow", 1)
        # On a busy host the change's writes can reach the daemon in two batches: the
        # output is compared once it has published the last.
        settled = -1
        while settled != daemon.publishes():
            settled = daemon.publishes()
            time.sleep(0.5)
        before = state(site)["out"]
        # The daemon holds the state directory's lock; a dry run takes none, and finds
        # nothing left to do.
        text = site.cli("build", "--dry-run").stdout
        assert "new: 0\nupdated: 0\ngone: 0\nnewly excluded: 0" in text
        report = json.loads(site.cli("run", "--dry-run", "--json").stdout)
        assert [report[k] for k in ("new", "updated", "gone", "indexnow")] == [[], [], [], []]
        assert snapshot(site.out) == before
    finally:
        assert daemon.stop() == 0
