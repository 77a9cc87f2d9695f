"""Several daemons, one bucket: one publisher elected by the lease, standbys that take
over without moving a lastmod; and a site split into partitions, one daemon each."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Site, assert_valid, page, published
from daemon_harness import RunningDaemon, http_port, request, touch_tree, u
from s3_harness import S3Server, crawl, download, fetch, publish_table

from sitemapd import config as config_module
from sitemapd.cli.verify import verify_all

ROOT = "https://example.com/"
TTL = 2


def role(port: int) -> str:
    """Return what `/healthz` says the daemon on `port` is."""
    status, _, body = request(port, "/healthz")
    return body.decode().strip() if status == 200 else "unhealthy"


@pytest.mark.slow
def test_one_publisher_takeover_keeps_lastmods(
    tmp_path: Path, s3: S3Server, daemons: list[RunningDaemon]
) -> None:
    bucket = s3.new_bucket()
    extra = (
        publish_table(s3, bucket, ttl=TTL)
        + '[http]\nlisten = "127.0.0.1:0"\n[daemon]\ndebounce = 0.2\nmax_delay = 1\n'
    )
    sites = []
    for n, name in enumerate("abc"):
        base = tmp_path / name
        base.mkdir()
        site = Site(base)
        site.configure(extra=extra)
        for page_name in ("p1", "p2", "p3"):
            site.write(f"{page_name}.html", page(page_name, f"text of {page_name}"))
        # Each web server got its copy at another time: left alone, each would date
        # the pages differently.
        touch_tree(site.root, time.time() - 86400 * (n + 1))
        sites.append(site)
    running = []
    for site in sites:
        daemon = RunningDaemon(site)
        daemons.append(daemon)
        daemon.wait_ready()
        running.append(daemon)
    ports = [http_port(daemon) for daemon in running]

    def publishers() -> list[int]:
        """Return the daemons still running that say they publish."""
        alive = [n for n, daemon in enumerate(running) if daemon.proc.poll() is None]
        return [n for n in alive if role(ports[n]) == "ok: publisher"]

    # One publisher, the others standing by (the first to start, unless a loaded machine
    # let its lease lapse: then another took it, as it should).
    running[0].wait_until(lambda: len(publishers()) == 1, 20, "one publisher")
    assert all(role(port) in ("ok: publisher", "ok: standby") for port in ports)
    (first,) = publishers()
    before = crawl(s3, bucket, ROOT)
    assert set(before) == u("p1.html", "p2.html", "p3.html")

    # A change everywhere, and the publisher killed while it publishes it.
    for site in sites:
        site.write("p4.html", page("p4", "new page"))
    time.sleep(0.3)
    running[first].proc.kill()
    running[first].proc.wait()
    survivors = [n for n in range(len(sites)) if n != first]
    for n in survivors:
        sites[n].write("p5.html", page("p5", "written during the handover"))

    deadline = time.monotonic() + 30
    seen: dict[str, str] = {}
    while time.monotonic() < deadline:
        # The published files stay whole and valid throughout the handover.
        seen = crawl(s3, bucket, ROOT)
        now = [role(ports[n]) for n in survivors]
        assert now.count("ok: publisher") <= 1, now
        if set(seen) == u("p1.html", "p2.html", "p3.html", "p4.html", "p5.html"):
            break
        time.sleep(0.2)
    else:
        logs = "\n".join(running[n].log() for n in survivors)
        raise AssertionError(f"no takeover: {seen}\n{logs}")
    running[survivors[0]].wait_until(lambda: len(publishers()) == 1, 20, "one publisher")
    assert {loc: seen[loc] for loc in before} == before, "a takeover moved lastmods"
    # Their own copies date the pages otherwise: the successor adopted the published ones.
    assert any("kept the published lastmod of" in running[n].log() for n in survivors)


URLS = 100_000
PARTS = 4


def build_together(configs: list[Path]) -> None:
    """Run `sitemapd build` of every config at once; fail with the output of any that
    fails."""
    builds = [
        subprocess.Popen(
            [sys.executable, "-m", "sitemapd", "build", "-c", str(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for config in configs
    ]
    for build in builds:
        output = build.communicate(timeout=240)[0]
        assert build.returncode == 0, output


@pytest.mark.slow
def test_four_partitions_publish_the_site_once(tmp_path: Path, s3: S3Server) -> None:
    bucket = s3.new_bucket()
    listing = tmp_path / "urls.txt"
    expected = {f"{ROOT}item/{n}" for n in range(URLS)}
    listing.write_text("".join(f"{url}\n" for url in sorted(expected)))
    configs = []
    for n in range(1, PARTS + 1):
        config = tmp_path / f"p{n}.toml"
        config.write_text(
            f'[site]\nbase_url = "{ROOT}"\noutput_dir = "out{n}"\nstate_dir = "state{n}"\n'
            f'partition = "{n}/{PARTS}"\n[sitemap]\ngzip = true\n'
            f'[[source]]\ntype = "urllist"\npath = "urls.txt"\n' + publish_table(s3, bucket)
        )
        configs.append(config)
    # Started together: no daemon's robots.txt line may be lost to another's edit.
    build_together(configs)

    found = crawl(s3, bucket, ROOT)  # fails on a URL listed twice
    assert set(found) == expected
    lines = fetch(f"{s3.url}/{bucket}/robots.txt").decode().splitlines()
    indexes = [f"Sitemap: {ROOT}sitemap-p{n}of{PARTS}.xml" for n in range(1, PARTS + 1)]
    assert sorted(line for line in lines if line.startswith("Sitemap:")) == indexes
    printed = subprocess.run(
        [sys.executable, "-m", "sitemapd", "robots", "-c", str(configs[2])],
        capture_output=True,
        text=True,
        check=True,
    )
    assert printed.stdout.splitlines() == indexes
    others = [arg for config in configs[1:] for arg in ("--partition", str(config))]
    checked = subprocess.run(
        [sys.executable, "-m", "sitemapd", "verify", "-c", str(configs[0]), *others],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    loaded = [config_module.load(path) for path in configs]
    assert verify_all(loaded[0], loaded[1:2]) == [
        "partitions given: [1, 2]; a site of 4 partitions needs each once"
    ]
    folder = download(s3, bucket, tmp_path / "bucket")
    for n in range(1, PARTS + 1):
        assert_valid(folder, f"sitemap-p{n}of{PARTS}.xml")


def test_partitions_started_together_share_a_local_robots_txt(tmp_path: Path) -> None:
    listing = tmp_path / "urls.txt"
    listing.write_text("".join(f"{ROOT}page/{n}\n" for n in range(400)))
    robots_txt = tmp_path / "robots.txt"
    robots_txt.write_text("User-agent: *\nDisallow: /private/\n")
    configs = []
    for n in range(1, PARTS + 1):
        config = tmp_path / f"p{n}.toml"
        config.write_text(
            f'[site]\nbase_url = "{ROOT}"\noutput_dir = "out"\nstate_dir = "state{n}"\n'
            f'robots_txt = "robots.txt"\npartition = "{n}/{PARTS}"\n'
            '[[source]]\ntype = "urllist"\npath = "urls.txt"\n'
        )
        configs.append(config)
    build_together(configs)
    lines = robots_txt.read_text().splitlines()
    assert lines[:2] == ["User-agent: *", "Disallow: /private/"]
    indexes = [f"Sitemap: {ROOT}sitemap-p{n}of{PARTS}.xml" for n in range(1, PARTS + 1)]
    assert sorted(lines[2:]) == indexes
    found: dict[str, str] = {}
    for n in range(1, PARTS + 1):
        part = published(tmp_path / "out", f"sitemap-p{n}of{PARTS}.xml")
        assert not set(part) & set(found)
        found.update(part)
    assert len(found) == 400
