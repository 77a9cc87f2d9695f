"""One writer per bucket, for real: against a real S3 server on loopback, two live
daemons keep one publisher for many lease periods, a third machine's build is refused, a
paused holder writes nothing once it wakes, a killed one is replaced, and a store that
never answers leaves the probes answering."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Site, page
from daemon_harness import RunningDaemon, http_port, request, touch_tree, u
from s3_harness import S3Server, SilentStore, crawl, objects, publish_table

from sitemapd.config.fleet import S3Target
from sitemapd.errors import PublishError
from sitemapd.publish.s3store import S3Store

ROOT = "https://example.com/"
TTL = 4
LEASE = ".sitemapd/lease-sitemap.xml.json"
WROTE = re.compile(r"published: .* wrote [1-9]\d* files?")


def lease(s3: S3Server, bucket: str) -> dict[str, object]:
    """Return the body of the lease object."""
    body = s3.client().get_object(Bucket=bucket, Key=LEASE)["Body"].read()
    found: dict[str, object] = json.loads(body)
    return found


def holder_pid(s3: S3Server, bucket: str) -> int:
    """Return the pid of the daemon the lease names."""
    return int(str(lease(s3, bucket)["holder"]).split(":")[1])


def probe(port: int, path: str = "/readyz") -> tuple[int, str]:
    """Return the status and body of a probe, failing unless it answers within 1 s."""
    status, _, body = request(port, path, timeout=1)
    return status, body.decode().strip()


# robots.txt of the build that outlasts its lease.
RULES = "User-agent: *\nDisallow: /p3.html\n"


def fleet_site(base: Path, s3: S3Server, bucket: str, days_ago: int, robots: bool = False) -> Site:
    """A site publishing to `bucket`, its copy of the pages dated `days_ago`; with
    `robots`, its robots.txt holds RULES."""
    base.mkdir()
    site = Site(base)
    if robots:
        (base / "robots.txt").write_text(RULES)
    site.configure(
        site='robots_txt = "robots.txt"' if robots else "",
        extra=publish_table(s3, bucket, ttl=TTL)
        + '[http]\nlisten = "127.0.0.1:0"\n[daemon]\ndebounce = 0.2\nmax_delay = 1\n',
    )
    for name in ("p1", "p2", "p3"):
        site.write(f"{name}.html", page(name, f"text of {name}"))
    touch_tree(site.root, time.time() - 86400 * days_ago)
    return site


def started(site: Site, daemons: list[RunningDaemon]) -> tuple[RunningDaemon, int]:
    daemon = RunningDaemon(site)
    daemons.append(daemon)
    daemon.wait_ready()
    return daemon, http_port(daemon)


def bucket_state(s3: S3Server, bucket: str) -> dict[str, str]:
    """Return `{key: ETag}` of every object but the lease (manifests included)."""
    return {key: item["ETag"] for key, item in objects(s3, bucket).items() if key != LEASE}


def settled_state(s3: S3Server, bucket: str, quiet: float = 1.5) -> dict[str, str]:
    """Return `bucket_state` once it has not changed for `quiet` seconds (within 30 s)."""
    deadline = time.monotonic() + 30
    state = bucket_state(s3, bucket)
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = bucket_state(s3, bucket)
        if now == state:
            return state
        state = now
    raise AssertionError(f"the bucket kept changing: {state}")


@pytest.mark.slow
def test_two_live_daemons_keep_one_publisher_and_refuse_a_third_build(
    tmp_path: Path, s3: S3Server, daemons: list[RunningDaemon]
) -> None:
    bucket = s3.new_bucket()
    sites = [fleet_site(tmp_path / name, s3, bucket, n + 1) for n, name in enumerate("ab")]
    first, first_port = started(sites[0], daemons)
    second, second_port = started(sites[1], daemons)
    assert holder_pid(s3, bucket) == first.proc.pid
    renewals = int(str(lease(s3, bucket)["renewal"]))

    deadline = time.monotonic() + 8 * TTL
    changes = 0
    third = sites[0].base.parent / "third"
    third.mkdir()
    third_site = fleet_site(third / "site", s3, bucket, 3)
    build = subprocess.Popen(
        [sys.executable, "-m", "sitemapd", "build", "-c", str(third_site.config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    while time.monotonic() < deadline:
        # The same daemon holds the lease throughout, and the other never says it
        # publishes (a slow renewal may make the holder doubt itself, never the other).
        assert holder_pid(s3, bucket) == first.proc.pid
        assert probe(second_port)[1] != "ok: publisher"
        if time.monotonic() > deadline - 6 * TTL + changes * TTL and changes < 4:
            changes += 1
            for site in sites:
                site.write(f"new{changes}.html", page(f"new {changes}", "a change"))
        time.sleep(0.25)
    assert probe(first_port)[1] == "ok: publisher"
    out, err = build.communicate(timeout=60)
    assert build.returncode != 0, out + err
    assert "another sitemapd publishes" in err
    assert holder_pid(s3, bucket) == first.proc.pid
    # Each renewal changed the lease (its ETag with it): about six per TTL.
    assert int(str(lease(s3, bucket)["renewal"])) > renewals + 8 * 3

    expected = u("p1.html", "p2.html", "p3.html", *(f"new{n}.html" for n in range(1, 5)))
    first.wait_until(lambda: set(crawl(s3, bucket, ROOT)) == expected, 30, "the changes")
    assert not WROTE.search(second.log()), "the standby wrote to the bucket"
    assert "took the publisher lease" not in second.log()


@pytest.mark.slow
def test_a_paused_holder_writes_nothing_and_a_killed_one_is_replaced(
    tmp_path: Path, s3: S3Server, daemons: list[RunningDaemon]
) -> None:
    bucket = s3.new_bucket()
    sites = [fleet_site(tmp_path / name, s3, bucket, n + 1) for n, name in enumerate("ab")]
    first, first_port = started(sites[0], daemons)
    second, second_port = started(sites[1], daemons)
    before = crawl(s3, bucket, ROOT)

    # Paused (SIGSTOP: a frozen VM, a long GC pause) past its lease: the standby takes over.
    first.proc.send_signal(signal.SIGSTOP)
    try:
        second.wait_until(
            lambda: probe(second_port)[1] == "ok: publisher", 3 * TTL + 10, "a takeover"
        )
        assert holder_pid(s3, bucket) == second.proc.pid
        for site in sites:
            site.write("during.html", page("during", "written while the holder slept"))
        expected = {*before, *u("during.html")}
        second.wait_until(lambda: set(crawl(s3, bucket, ROOT)) == expected, 30, "the change")
        # Shards land before the index, so the crawl can match while the publish goes on.
        settled = settled_state(s3, bucket)
        resumed_at = len(first.lines)
    finally:
        first.proc.send_signal(signal.SIGCONT)
    # It wakes with the change queued, finds the lease taken, and stands by.
    first.wait_for_log("another sitemapd took the publisher lease", 30)
    first.wait_until(lambda: probe(first_port)[1] == "ok: standby", 30, "standby")
    time.sleep(TTL)
    assert bucket_state(s3, bucket) == settled, "the old holder wrote after it woke"
    assert not any(WROTE.search(line) for line in first.lines[resumed_at:])
    assert {loc: crawl(s3, bucket, ROOT)[loc] for loc in before} == before

    # Killed: the other one takes over within a TTL and publishes what is owed.
    second.kill()
    for site in sites:
        site.write("after.html", page("after", "written after the kill"))
    expected |= u("after.html")
    first.wait_until(
        lambda: set(crawl(s3, bucket, ROOT)) == expected, 3 * TTL + 20, "takeover and publish"
    )
    assert holder_pid(s3, bucket) == first.proc.pid
    assert {loc: crawl(s3, bucket, ROOT)[loc] for loc in before} == before, "lastmods moved"


def test_a_write_lands_only_on_the_object_as_listed(s3: S3Server) -> None:
    bucket = s3.new_bucket()
    target = S3Target(bucket=bucket, prefix="", endpoint_url=s3.url, region="us-east-1")
    store = S3Store(target)
    store.prepare(write=True)
    store.put("sitemap.xml", b"<first/>", "application/xml")
    late = S3Store(target)
    late.prepare(write=True)  # a holder that listed, then slept
    store.put("sitemap.xml", b"<second/>", "application/xml")  # its successor wrote since
    with pytest.raises(PublishError, match="changed since it was listed"):
        late.put("sitemap.xml", b"<stale/>", "application/xml")
    # A file the sleeper did not see listed, created since: not overwritten either.
    store.put("new.xml", b"<y/>", "application/xml")
    with pytest.raises(PublishError, match="changed since it was listed"):
        late.put("new.xml", b"<x/>", "application/xml")
    body = s3.client().get_object(Bucket=bucket, Key="sitemap.xml")["Body"].read()
    assert body == b"<second/>"


@pytest.mark.slow
def test_a_store_that_never_answers_leaves_the_probes_answering(
    site: Site, s3: S3Server, daemons: list[RunningDaemon]
) -> None:
    bucket = s3.new_bucket()
    site.configure(
        extra=publish_table(s3, bucket, ttl=TTL)
        + '[http]\nlisten = "127.0.0.1:0"\n[daemon]\ndebounce = 0.2\nmax_delay = 1\n'
    )
    site.write("a.html", page("a", "text"))
    daemon, port = started(site, daemons)
    assert probe(port) == (200, "ok: publisher")

    s3.stop()
    silent = SilentStore(s3.port)
    try:
        site.write("b.html", page("b", "written while the store hangs"))
        readiness = set()
        deadline = time.monotonic() + 4 * TTL
        while time.monotonic() < deadline:
            # Each probe answers within a second, every time: no request to the store
            # sits between them and the daemon's state.
            assert probe(port, "/livez") == (200, "ok")
            readiness.add(probe(port, "/readyz")[0])
            assert probe(port, "/healthz")[0] in (200, 503)
            status, _, body = request(port, "/metrics", timeout=1)
            assert status == 200
            assert b"sitemapd_publisher" in body
            time.sleep(0.2)
        assert 503 in readiness, "the hung store was not reported"
        assert silent.taken, "the daemon never reached the silent store"
        # `status` hears it from the daemon's saved health, and reads the bucket itself.
        shown = site.cli("status").stdout
        assert "UNHEALTHY" in shown
        assert "target:       CANNOT READ" in shown
        # The batch that could not renew the lease failed to publish what it applied.
        assert "PUBLISH FAILED: at " in shown
        assert "(the daemon tries again with its next batch)" in shown
    finally:
        silent.stop()
    s3.start()
    daemon.wait_until(
        lambda: set(crawl(s3, bucket, ROOT)) == u("a.html", "b.html"), 60, "owed change"
    )
    daemon.wait_until(lambda: probe(port)[0] == 200, 30, "ready again")
    assert json.loads(site.cli("status", "--json").stdout)["publish_failed"] is None


@pytest.mark.slow
def test_a_build_longer_than_the_lease_keeps_it(
    tmp_path: Path, s3: S3Server, daemons: list[RunningDaemon]
) -> None:
    bucket = s3.new_bucket()
    builder = fleet_site(tmp_path / "builder", s3, bucket, 1)
    # The build waits on its robots.txt (a FIFO nobody writes yet): a build that reads
    # for longer than a TTL, as a slow scan does.
    rules = builder.base / "robots.txt"
    os.mkfifo(rules)
    builder.configure(site='robots_txt = "robots.txt"', extra=publish_table(s3, bucket, ttl=TTL))
    build = subprocess.Popen(
        [sys.executable, "-m", "sitemapd", "build", "-c", str(builder.config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not objects(s3, bucket).get(LEASE):
            assert time.monotonic() < deadline, "the build took no lease"
            time.sleep(0.1)
        assert holder_pid(s3, bucket) == build.pid
        # The standby publishes the same view once it takes over (the same rules), so
        # what the bucket holds after the build does not race the takeover.
        standby_site = fleet_site(tmp_path / "standby", s3, bucket, 2, robots=True)
        standby, port = started(standby_site, daemons)
        watched = time.monotonic() + 3 * TTL
        while time.monotonic() < watched:
            assert holder_pid(s3, bucket) == build.pid, "the lease was taken from the build"
            assert probe(port)[1] == "ok: standby"
            time.sleep(0.25)
    finally:
        fd = os.open(rules, os.O_WRONLY)
        os.write(fd, RULES.encode())
        os.close(fd)
    out, err = build.communicate(timeout=60)
    assert build.returncode == 0, out + err
    assert set(crawl(s3, bucket, ROOT)) == u("p1.html", "p2.html")
    # Released at the end: the daemon takes over at once.
    standby.wait_until(lambda: probe(port)[1] == "ok: publisher", 30, "the takeover")
