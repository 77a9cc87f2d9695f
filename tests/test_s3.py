"""Publishing to S3-compatible object storage, against a real S3 server on loopback:
what a crawler fetches from the bucket, what is uploaded when, and outages of the store."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import time

import pytest
from conftest import Site, page
from daemon_harness import RunningDaemon, http_port, request, u
from s3_harness import S3Server, crawl, objects, publish_table

from sitemapd import config
from sitemapd.core import w3c
from sitemapd.errors import ConfigError

ROOT = "https://example.com/"
LEASE = ".sitemapd/lease-sitemap.xml.json"


def public(server: S3Server, bucket: str) -> dict[str, tuple[str, object]]:
    """Return `{key: (ETag, LastModified)}` of the objects crawlers read."""
    return {
        key: (item["ETag"], item["LastModified"])
        for key, item in objects(server, bucket).items()
        if not key.startswith(".sitemapd/")
    }


def test_publish_change_no_change_and_removal(site: Site, s3: S3Server) -> None:
    bucket = s3.new_bucket()
    site.configure(sitemap="max_urls = 2", extra=publish_table(s3, bucket))
    for name in ("a", "b", "c"):
        site.write(f"{name}.html", page(name, f"text of {name}"))
    site.build()
    assert set(crawl(s3, bucket, ROOT)) == u("a.html", "b.html", "c.html")
    client = s3.client()
    for key, (etag, _) in public(s3, bucket).items():
        head = client.head_object(Bucket=bucket, Key=key)
        body = client.get_object(Bucket=bucket, Key=key)["Body"].read()
        # Single-part uploads: the ETag is the MD5 of the bytes, stable for conditional GETs.
        assert etag.strip('"') == hashlib.md5(body).hexdigest()
        assert head["CacheControl"] == "public, max-age=300"
        expected = "text/plain" if key == "robots.txt" else "application/xml"
        assert head["ContentType"].startswith(expected), key
    assert not (site.out).exists(), "an S3 target writes nothing locally"

    before = public(s3, bucket)
    time.sleep(1.1)  # LastModified counts seconds
    site.write("a.html", page("a", "new text of a"))
    site.build()
    after = public(s3, bucket)
    uploaded = {key for key in after if after[key] != before.get(key)}
    assert uploaded == {"sitemap-1.xml", "sitemap.xml"}

    result = site.build()
    assert "wrote 0 files" in result.stdout
    assert public(s3, bucket) == after, "a publish with no change uploads nothing"

    (site.root / "c.html").unlink()
    site.build()
    assert set(crawl(s3, bucket, ROOT)) == u("a.html", "b.html")
    keys = set(objects(s3, bucket))
    assert "sitemap-2.xml" not in keys
    assert ".sitemapd/manifest/sitemap-2.xml.tsv.gz" not in keys


@pytest.mark.slow
def test_store_outage_loses_nothing(site: Site, s3: S3Server, daemons: list[RunningDaemon]) -> None:
    bucket = s3.new_bucket()
    extra = publish_table(s3, bucket) + '[http]\nlisten = "127.0.0.1:0"\n'
    site.configure(extra=extra + "[daemon]\ndebounce = 0.2\nmax_delay = 1\n")
    site.write("a.html", page("a", "text"))
    daemon = RunningDaemon(site)
    daemons.append(daemon)
    daemon.wait_ready()
    port = http_port(daemon)
    assert request(port, "/healthz")[2] == b"ok: publisher\n"

    s3.stop()
    site.write("b.html", page("b", "written while the store is down"))
    daemon.wait_until(lambda: request(port, "/healthz")[0] == 503, 30, "unhealthy")
    body = request(port, "/healthz")[2]
    assert b"publish" in body
    assert b"sitemapd_publisher" in request(port, "/metrics")[2]

    s3.start()
    daemon.wait_until(
        lambda: set(crawl(s3, bucket, ROOT)) == u("a.html", "b.html"), 40, "owed change"
    )
    daemon.wait_until(lambda: request(port, "/healthz")[0] == 200, 30, "healthy again")


def test_config_rejects_bad_targets(site: Site) -> None:
    for table, words in (
        ('[publish]\ntarget = "http://bucket/x/"\n', "publish.target"),
        ('[publish]\ntarget = "s3://B_ad/"\n', "bucket name"),
        ('[publish]\ntarget = "s3://bucket/no-slash"\n', "must end in '/'"),
        ('[publish]\ntarget = "s3://bucket/a/../"\n', "'..'"),
        ('[publish]\ntarget = "s3://bucket/"\nlease_ttl = 0\n', "publish.lease_ttl"),
        ('[publish]\nregion = "eu-west-1"\n', "publish.region: unknown key"),
        (
            '[publish]\ntarget = "s3://bucket/"\n[http]\nlisten = "127.0.0.1:0"\n'
            "serve_files = true\n",
            "http.serve_files",
        ),
    ):
        site.configure(extra=table)
        with pytest.raises(ConfigError, match=r"sitemapd\.toml") as caught:
            config.load(site.config)
        assert words in str(caught.value), table
    for value in ("5/4", "0/4", "1/0", "a/b", "2"):
        site.configure(site=f'partition = "{value}"')
        with pytest.raises(ConfigError, match=r"site\.partition"):
            config.load(site.config)


def test_without_boto3_an_s3_target_says_what_to_install(site: Site) -> None:
    site.configure(extra='[publish]\ntarget = "s3://bucket/"\n')
    # boto3 made unimportable in a fresh interpreter: sitemapd itself still imports.
    code = (
        "import sys; sys.modules['boto3'] = None; import sitemapd.cli.app, "
        "sitemapd.engine.engine; "
        "sys.argv = ['sitemapd', 'check-config', '-c', sys.argv[1]]; sitemapd.cli.app.main()"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(site.config)], capture_output=True, text=True
    )
    assert result.returncode == 2, result.stderr
    assert "pip install 'sitemapd[s3]'" in result.stderr


def test_status_reads_news_feeds_and_the_lease_from_the_bucket(site: Site, s3: S3Server) -> None:
    bucket = s3.new_bucket()
    site.configure(
        extra='[news]\npublication_name = "The Example Times"\nlanguage = "en"\n'
        '[feed]\ntitle = "Example updates"\n' + publish_table(s3, bucket)
    )
    for name in ("a", "b"):
        ld = json.dumps({"@type": "NewsArticle", "headline": name, "datePublished": w3c.now()})
        site.write(
            f"{name}.html",
            f'<!doctype html><html lang="en"><head><title>{name}</title><script '
            f'type="application/ld+json">{ld}</script></head><body><article>text of {name}'
            "</article></body></html>",
        )
    site.build()
    assert not site.out.exists(), "nothing local to count: status must read the bucket"
    report = json.loads(site.cli("status", "--json").stdout)
    assert report["news_items"] == 2
    assert report["feed_entries"] == 2
    # The build released the lease when it ended.
    assert report["lease"]["released"] is True
    assert "lease:        released by" in site.cli("status").stdout

    s3.stop()
    try:
        stopped = site.cli("status").stdout
    finally:
        s3.start()
    assert "target:       CANNOT READ" in stopped


@pytest.mark.slow
def test_a_reload_switches_the_target_to_a_bucket(
    site: Site, s3: S3Server, daemons: list[RunningDaemon]
) -> None:
    daemon_table = "[daemon]\ndebounce = 0.2\nmax_delay = 1\n"
    site.configure(extra=daemon_table)
    for name in ("a", "b"):
        site.write(f"{name}.html", page(name, f"text of {name}"))
    daemon = RunningDaemon(site)
    daemons.append(daemon)
    daemon.wait_ready()
    assert set(daemon.wait_for_urls(u("a.html", "b.html"))) == u("a.html", "b.html")

    bucket = s3.new_bucket()
    site.configure(extra=daemon_table + publish_table(s3, bucket))
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_for_log("reloaded")
    # Everything is published to the bucket, without a restart; then changes follow it.
    daemon.wait_until(
        lambda: set(crawl(s3, bucket, ROOT)) == u("a.html", "b.html"), 30, "all in the bucket"
    )
    site.write("c.html", page("c", "after the switch"))
    daemon.wait_until(
        lambda: set(crawl(s3, bucket, ROOT)) == u("a.html", "b.html", "c.html"), 30, "the change"
    )
    # And back: the lease is released, and the folder gets everything again.
    site.configure(extra=daemon_table)
    daemon.proc.send_signal(signal.SIGHUP)
    daemon.wait_for_log("reloaded", count=2)
    site.write("d.html", page("d", "after switching back"))
    daemon.wait_for_urls(u("a.html", "b.html", "c.html", "d.html"))
    assert json.loads(s3.client().get_object(Bucket=bucket, Key=LEASE)["Body"].read())["released"]
    assert daemon.stop() == 0
