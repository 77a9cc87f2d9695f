"""Benchmark the adoption of published lastmods by a new ledger, and print a table.

    python bench/bench_adoption.py [--urls 1000000]

Builds a URL list without times into a local folder (each URL dated by the list's file
time; the manifests are written beside the shards), deletes the state folder, touches
the list, and builds again: the second build dates every URL by the new file time, then
reads the manifests and gives each URL back its published lastmod. "adoption s" is the
engine's own time for that, from its log; "kept" how many lastmods it gave back.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "adoption"
BASE = "https://example.com/"
ADOPTED = re.compile(r"kept the published lastmod of (\d+) URLs \(.*\) in (\d+\.\d+)s")


def build(config: Path) -> tuple[float, str]:
    """Run `sitemapd build`; return (process seconds, its log)."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "sitemapd", "build", "-c", str(config)],
        capture_output=True,
        text=True,
        check=True,
    )
    return time.perf_counter() - started, result.stderr


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--urls", type=int, default=1_000_000)
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    listing = WORK / "urls.txt"
    listing.write_text("".join(f"{BASE}item/{n}\n" for n in range(args.urls)))
    os.utime(listing, (time.time() - 86400,) * 2)
    config = WORK / "sitemapd.toml"
    config.write_text(
        f'[site]\nbase_url = "{BASE}"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[[source]]\ntype = "urllist"\npath = "urls.txt"\n'
    )
    cold, _ = build(config)
    manifests = sum(p.stat().st_size for p in (WORK / "out" / ".sitemapd").rglob("*.gz"))
    shutil.rmtree(WORK / "state")
    later = time.time()
    os.utime(listing, (later, later))
    again, log = build(config)
    match = ADOPTED.search(log)
    kept, seconds = (int(match[1]), float(match[2])) if match else (-1, float("nan"))
    print(f"Adoption of published lastmods by a new ledger, {args.urls:,} URLs (local target)")
    print(
        f"{'cold build s':>12} {'lost-state build s':>18} {'adoption s':>10} "
        f"{'kept':>9} {'manifests bytes':>15}"
    )
    print(f"{cold:>12.2f} {again:>18.2f} {seconds:>10.2f} {kept:>9,} {manifests:>15,}")


if __name__ == "__main__":
    main()
