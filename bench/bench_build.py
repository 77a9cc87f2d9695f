"""Benchmark: build sitemaps for a synthetic URL list and print a table.

    python bench/bench_build.py [--urls 1000000] [--gzip]

Phases: cold build, no-change rebuild, rebuild after `touch`, one URL changed in the list
(a full re-read of the list), and one URL changed through the engine (what the daemon does
when one file changes). Each `sitemapd build` runs as its own process, so peak RSS is
that of a real run.
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
WORK = HERE / "work"
SITEMAPD = [sys.executable, "-m", "sitemapd"]
_WROTE = re.compile(r"wrote (\d+) files \((\d+) bytes\)")


def write_list(path: Path, count: int) -> None:
    """Write `count` URLs with datetimes, as a CMS export would."""
    sections = ("news", "sport", "culture", "tech", "business", "opinion", "world")
    with path.open("w") as handle:
        for n in range(count):
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(1_600_000_000 + n * 97))
            section = sections[n % len(sections)]
            handle.write(
                f"https://news.example.com/{section}/{n // 5000}/story-{n}.html\t{stamp}\n"
            )


def run_build(config: Path) -> tuple[float, int, int, float]:
    """Run one `sitemapd build`; return seconds, files written, bytes written, peak RSS MiB."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [*SITEMAPD, "--log-level", "warning", "build", "-c", str(config)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if status:
        raise SystemExit(f"build failed: {out}")
    match = _WROTE.search(out)
    assert match, out
    return seconds, int(match.group(1)), int(match.group(2)), usage.ru_maxrss / 1024


def change_one_line(path: Path, target: int) -> str:
    """Give line `target` of the list a new datetime (streamed); return its URL."""
    changed = path.with_suffix(".new")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    with path.open() as src, changed.open("w") as dst:
        for n, line in enumerate(src):
            if n == target:
                url = line.partition("\t")[0]
                line = f"{url}\t{stamp}\n"
            dst.write(line)
    changed.replace(path)
    return url


def engine_one_change(config: Path, loc: str) -> tuple[float, int, int, float]:
    """Apply one changed URL through the engine and publish: seconds, files, bytes, RSS."""
    code = f"""
import time
from sitemapd import config, w3c
from sitemapd.engine import Engine
from sitemapd.observation import Observation
cfg = config.load({str(config)!r})
engine = Engine(cfg)
source = cfg.sources[0].name
started = time.perf_counter()
now = w3c.now()
engine.ledger.apply([Observation({loc!r}, source, None, now)], now=now)
report = engine.publisher.publish(now)
import resource
seconds = time.perf_counter() - started
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(seconds, len(report.written), report.bytes_written, rss)
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    seconds, files, size, rss = out.stdout.split()
    return float(seconds), int(files), int(size), float(rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--gzip", action="store_true", help="publish shards as .xml.gz")
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    listing = WORK / "urls.txt"
    write_list(listing, args.urls)
    config = WORK / "sitemapd.toml"
    config.write_text(
        '[site]\nbase_url = "https://news.example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        f"[sitemap]\ngzip = {'true' if args.gzip else 'false'}\n"
        '[[source]]\ntype = "urllist"\npath = "urls.txt"\n'
    )
    rows = []
    rows.append(("cold build", *run_build(config)))
    rows.append(("no-change rebuild", *run_build(config)))
    os.utime(listing)
    rows.append(("rebuild after touch (list re-read)", *run_build(config)))
    url = change_one_line(listing, args.urls // 2)
    rows.append(("one URL changed in the list", *run_build(config)))
    rows.append(("one URL changed via the engine", *engine_one_change(config, url)))
    print(f"\n{args.urls:,} URLs, gzip={'on' if args.gzip else 'off'}, {os.cpu_count()} cores\n")
    header = ("phase", "seconds", "files written", "bytes written", "peak RSS MiB")
    widths = (36, 8, 13, 13, 12)
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for name, seconds, files, size, rss in rows:
        print(f"| {name:<36} | {seconds:>8.3f} | {files:>13} | {size:>13,} | {rss:>12.0f} |")


if __name__ == "__main__":
    main()
