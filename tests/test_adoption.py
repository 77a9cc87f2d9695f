"""The published output is the memory a new ledger starts from: with its state folder
lost (or on a new machine), a site redeployed with the same content under later file
times keeps every published lastmod, on a local target and on a bucket; pages whose
content changed meanwhile move, and only those."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import time

import pytest
from conftest import Site, page, published, shard_members, snapshot
from daemon_harness import RunningDaemon, touch_tree, u
from s3_harness import S3Server, crawl, publish_table

from sitemapd.core import w3c

ROOT = "https://example.com/"
PAGES = [f"p{n}.html" for n in range(20)]
DAY = 86400.0


def deploy(site: Site, changed: str = "") -> None:
    """Write the site's pages (`changed` with new text), all dated a month ago."""
    for name in PAGES:
        text = "edited while the state was lost" if name == changed else f"text of {name}"
        site.write(name, page(name, text))
    touch_tree(site.root, time.time() - 30 * DAY)


def redeploy(site: Site, changed: str) -> float:
    """Lose the state folder; deploy the pages again, `changed` edited, all with file
    times of an hour ago; return that time."""
    shutil.rmtree(site.state)
    shutil.rmtree(site.root)
    site.root.mkdir()
    deploy(site, changed)
    later = time.time() - 3600
    touch_tree(site.root, later)
    return later


def moved(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {loc for loc in before if after.get(loc) != before[loc]}


def test_a_lost_state_folder_moves_only_what_changed(site: Site) -> None:
    site.configure(sitemap="max_urls = 5")
    deploy(site)
    site.build()
    files = snapshot(site.out)
    before = published(site.out)
    assert len(before) == len(PAGES)
    manifest = gzip.decompress((site.out / ".sitemapd/manifest/sitemap-1.xml.tsv.gz").read_bytes())
    assert len(manifest.decode().splitlines()) == 1 + 5
    assert manifest.decode().splitlines()[0] == "sitemapd-manifest 1"

    later = redeploy(site, changed="p3.html")
    result = site.build()
    after = published(site.out)
    assert set(after) == set(before)
    assert moved(before, after) == u("p3.html")
    assert after[f"{ROOT}p3.html"] == w3c.format_epoch(int(later))
    # Only the shard of the changed page and the index were written again.
    rewritten = {name for name, kept in snapshot(site.out).items() if files.get(name) != kept}
    (shard,) = {
        name for name, members in shard_members(site.out).items() if f"{ROOT}p3.html" in members
    }
    assert rewritten == {shard, "sitemap.xml"}
    assert f"kept the published lastmod of {len(PAGES) - 1} URLs" in result.stderr
    report = json.loads(site.cli("status", "--json").stdout)
    assert report["adopted"]["lastmods"] == len(PAGES) - 1
    assert f"{len(PAGES) - 1} published lastmods kept" in site.cli("status").stdout

    # Nothing more to adopt: the next build is quiet.
    again = site.build()
    assert "wrote 0 files" in again.stdout
    assert published(site.out) == after


def test_a_lost_state_folder_on_a_bucket_moves_only_what_changed(site: Site, s3: S3Server) -> None:
    bucket = s3.new_bucket()
    site.configure(extra=publish_table(s3, bucket))
    deploy(site)
    site.build()
    before = crawl(s3, bucket, ROOT)
    assert len(before) == len(PAGES)
    redeploy(site, changed="p7.html")
    site.build()
    after = crawl(s3, bucket, ROOT)
    assert set(after) == set(before)
    assert moved(before, after) == u("p7.html")


@pytest.mark.slow
def test_a_new_daemon_on_a_published_bucket_keeps_its_lastmods(
    site: Site, s3: S3Server, daemons: list[RunningDaemon]
) -> None:
    bucket = s3.new_bucket()
    site.configure(extra=publish_table(s3, bucket) + "[daemon]\ndebounce = 0.2\nmax_delay = 1\n")
    deploy(site)
    site.build()  # an earlier deployment
    before = crawl(s3, bucket, ROOT)

    # A new pod: empty state folder, the same content under later file times.
    redeploy(site, changed="p11.html")
    daemon = RunningDaemon(site)
    daemons.append(daemon)
    daemon.wait_ready()
    after = crawl(s3, bucket, ROOT)
    assert moved(before, after) == u("p11.html")
    assert "kept the published lastmod of 19 URLs" in daemon.log()
    assert daemon.stop() == 0


def test_shards_published_before_manifests_get_theirs_once(site: Site) -> None:
    """After an upgrade from a release that wrote no local manifests, every shard gets its
    manifest at the next publish, changed or not; then the state may be lost safely."""
    site.configure(sitemap="max_urls = 5")
    deploy(site)
    site.build()
    before = published(site.out)
    # As an earlier release left it: no manifests, and no note that they were written.
    shutil.rmtree(site.out / ".sitemapd")
    with sqlite3.connect(site.state / "ledger.sqlite3") as conn:
        conn.execute("DELETE FROM cursors WHERE name = 'manifests_written'")
    assert "wrote 0 files" in site.build().stdout
    assert len(list((site.out / ".sitemapd" / "manifest").iterdir())) == len(PAGES) // 5

    redeploy(site, changed="p12.html")
    site.build()
    assert moved(before, published(site.out)) == u("p12.html")


@pytest.mark.parametrize(
    ("header", "kept"),
    [("", True), ("sitemapd-manifest 1\n", True), ("sitemapd-manifest 2\n", False)],
    ids=["version 0", "version 1", "a later version"],
)
def test_manifest_versions(site: Site, header: str, kept: bool) -> None:
    """Version 0 (no first line, as earlier releases wrote on buckets) and 1 are read; a
    later version is skipped with a warning, as a damaged file is."""
    deploy(site)
    site.build()
    before = published(site.out)
    path = site.out / ".sitemapd" / "manifest" / "sitemap-1.xml.tsv.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()[1:]
    if not header:  # version 0 had no file hash
        lines = [line.rsplit("\t", 1)[0] for line in lines]
    path.write_bytes(gzip.compress((header + "".join(f"{line}\n" for line in lines)).encode()))
    redeploy(site, changed="")
    result = site.build()
    after = published(site.out)
    assert (moved(before, after) == set()) is kept
    if not kept:
        assert "manifest sitemapd-manifest 2 skipped" in result.stderr
        assert moved(before, after) == set(before)

    (site.out / ".sitemapd" / "manifest" / "sitemap-1.xml.tsv.gz").write_bytes(b"not gzip")
    redeploy(site, changed="")
    assert "unreadable manifest skipped" in site.build().stderr


def test_changed_fingerprint_settings_and_a_lost_state_folder_move_no_lastmod(
    site: Site,
) -> None:
    """Files read byte for byte as published keep their lastmods even when the
    fingerprint settings changed while the state was lost; edited ones move."""
    deploy(site)
    site.build()
    before = published(site.out)
    site.configure(source='fingerprint = "page"')
    redeploy(site, changed="p5.html")
    site.build()
    assert moved(before, published(site.out)) == u("p5.html")
