"""A real S3-compatible server on loopback (moto's standalone server) for the S3 tests,
and a crawler's view of a bucket: robots.txt, then the index, then its shards."""

from __future__ import annotations

import gzip
import json
import logging
import os
import secrets
import socket
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


class S3Server:
    """moto's server in a thread, on a fixed loopback port: stop() refuses connections
    (the socket is closed) and start() serves the same buckets again."""

    def __init__(self) -> None:
        try:
            from moto.server import ThreadedMotoServer
        except ImportError as exc:  # never skipped: the test extras install moto[server]
            raise AssertionError("moto[server] is missing: pip install -e '.[test]'") from exc
        self._factory = ThreadedMotoServer
        self.port = 0
        self._server: Any = None

    def start(self) -> None:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server = self._factory(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()
        self.port = self._server.get_host_and_port()[1]

    def stop(self) -> None:
        self._server.stop()
        self._server._server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self) -> Any:
        import boto3

        return boto3.client("s3", endpoint_url=self.url, region_name="us-east-1")

    def new_bucket(self) -> str:
        """Create a bucket anyone may read (as a CDN in front of it would)."""
        name = f"sitemaps-{secrets.token_hex(4)}"
        s3 = self.client()
        s3.create_bucket(Bucket=name)
        policy = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": "*",
                    "Action": "s3:GetObject",
                    "Resource": f"arn:aws:s3:::{name}/*",
                }
            ],
        }
        s3.put_bucket_policy(Bucket=name, Policy=json.dumps(policy))
        return name


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """A running S3-compatible server; the AWS chain of every subprocess finds test keys."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    server = S3Server()
    server.start()
    yield server
    server.stop()


def publish_table(server: S3Server, bucket: str, prefix: str = "", ttl: float = 3) -> str:
    """Return the `[publish]` table of a site published to `bucket`."""
    return (
        f'[publish]\ntarget = "s3://{bucket}/{prefix}"\nendpoint_url = "{server.url}"\n'
        f'region = "us-east-1"\ncache_control = "public, max-age=300"\nlease_ttl = {ttl}\n'
    )


def fetch(url: str) -> bytes:
    """GET `url` as a crawler would (plain HTTP, no S3 client)."""
    with urllib.request.urlopen(url, timeout=10) as response:
        data: bytes = response.read()
    return data


def objects(server: S3Server, bucket: str) -> dict[str, dict[str, Any]]:
    """Return `{key: {ETag, Size, ...}}` of every object in `bucket`."""
    pages = server.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {item["Key"]: item for page in pages for item in page.get("Contents", ())}


def crawl(server: S3Server, bucket: str, site_root: str) -> dict[str, str]:
    """Follow robots.txt -> each index -> its shards over plain HTTP; return
    `{loc: lastmod}` of every URL found (failing on a URL listed twice)."""
    base = f"{server.url}/{bucket}/"
    found: dict[str, str] = {}
    lines = fetch(base + "robots.txt").decode().splitlines()
    indexes = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Sitemap:")]
    assert indexes, "robots.txt names no sitemap"
    for index_url in indexes:
        index = etree.fromstring(fetch(base + index_url.removeprefix(site_root)))
        for loc in index.iter(f"{NS}loc"):
            data = fetch(base + (loc.text or "").removeprefix(site_root))
            if (loc.text or "").endswith(".gz"):
                data = gzip.decompress(data)
            for url in etree.fromstring(data).iter(f"{NS}url"):
                where = url.findtext(f"{NS}loc") or ""
                assert where not in found, f"{where} listed twice"
                found[where] = url.findtext(f"{NS}lastmod") or ""
    return found


def download(server: S3Server, bucket: str, folder: Path) -> Path:
    """Copy every public object of `bucket` into `folder` (for the XSD checks)."""
    folder.mkdir(parents=True, exist_ok=True)
    s3 = server.client()
    for key in objects(server, bucket):
        if "/" not in key:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            (folder / key).write_bytes(body)
    return folder


class SilentStore:
    """A store that accepts connections on `port` of 127.0.0.1 and never answers: a
    hung S3 endpoint. stop() closes it and every connection it took."""

    def __init__(self, port: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", port), reuse_port=False)
        self.taken: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            self.taken.append(conn)  # held open, never read from, never answered

    def stop(self) -> None:
        self.listener.close()
        self._thread.join(5)
        for conn in self.taken:
            conn.close()
