"""Benchmark publishing to S3-compatible object storage, and print a table.

    python bench/bench_s3.py [--urls 100000]

Starts moto's S3 server on loopback, then times `sitemapd build` of a URL list published
to a bucket: cold (every shard, the index and robots.txt uploaded), after one URL's
lastmod changed (one shard and the index uploaded), and with no change (nothing
uploaded). "apply+publish" is the engine's own time from its log; "process" adds the
interpreter start, the scan of the list and taking the publisher lease.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import boto3
from moto.server import ThreadedMotoServer

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "s3"
BASE = "https://example.com/"
ENGINE_TIME = re.compile(r"in (\d+\.\d+)s$", re.MULTILINE)


def build(config: Path) -> tuple[float, float, str]:
    """Run `sitemapd build`; return (process seconds, engine seconds, summary line)."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "sitemapd", "build", "-c", str(config)],
        capture_output=True,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - started
    match = ENGINE_TIME.search(result.stdout)
    return seconds, float(match[1]) if match else float("nan"), result.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--urls", type=int, default=100_000)
    args = parser.parse_args()
    os.environ.update(
        AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench", AWS_DEFAULT_REGION="us-east-1"
    )
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    endpoint = "http://{}:{}".format(*server.get_host_and_port())
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket="bench-sitemaps")
    shutil.rmtree(WORK, ignore_errors=True)
    s3 = (
        f'[publish]\ntarget = "s3://bench-sitemaps/"\nendpoint_url = "{endpoint}"\n'
        'region = "us-east-1"\n'
    )
    rows = [(*row, "s3") for row in builds(WORK / "s3", args.urls, s3)]
    # The same builds into the local output folder: what the bucket adds.
    rows += [(*row, "local") for row in builds(WORK / "local", args.urls, "")]
    server.stop()
    print(f"S3 publish of {args.urls:,} URLs to a loopback S3 server (moto), and local")
    print(f"{'target':<6} {'build':<11} {'process s':>10} {'apply+publish s':>16}  summary")
    for name, process, engine, summary, target in rows:
        print(f"{target:<6} {name:<11} {process:>10.2f} {engine:>16.2f}  {summary}")


def builds(folder: Path, urls: int, publish: str) -> list[tuple[str, float, float, str]]:
    """Build a URL list cold, after one URL changed, and unchanged; return the timings."""
    folder.mkdir(parents=True)
    listing = folder / "urls.txt"
    lines = [f"{BASE}item/{n}\t2024-01-01T00:00:00+00:00\n" for n in range(urls)]
    listing.write_text("".join(lines))
    config = folder / "sitemapd.toml"
    config.write_text(
        f'[site]\nbase_url = "{BASE}"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[[source]]\ntype = "urllist"\npath = "urls.txt"\n' + publish
    )
    rows = [("cold", *build(config))]
    lines[urls // 2] = f"{BASE}item/{urls // 2}\t2025-06-01T00:00:00+00:00\n"
    listing.write_text("".join(lines))
    rows.append(("one change", *build(config)))
    rows.append(("no change", *build(config)))
    return rows


if __name__ == "__main__":
    main()
