"""Benchmark `sitemapd run` on a directory site and print a table.

    python bench/bench_daemon.py [--pages 100000] [--changes 50] [--idle 60] [--startup-only]

Measures: start-up (first full scan and publish), latency from a file write to its shard
being republished (p50 / p95, with the default 0.5 s debounce and with a 0.01 s one),
a 10,000-file deploy (time to converge, publishes), and CPU used while idle.
`--startup-only` measures the first scan alone.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "daemon"
PUBLISH = re.compile(r"published: .* wrote [1-9]\d* files")
TICKS = os.sysconf("SC_CLK_TCK")


def page(n: int, body: str = "") -> str:
    return (
        f"<!doctype html><html lang=en><head><title>Story {n}</title></head>"
        f"<body><h1>Story {n}</h1><p>{body or 'text ' * 40}</p></body></html>"
    )


def page_path(root: Path, n: int) -> Path:
    return root / f"section{n % 50}" / f"{n // 1000}" / f"story-{n}.html"


def make_site(root: Path, pages: int) -> None:
    made: set[Path] = set()
    for n in range(pages):
        path = page_path(root, n)
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        path.write_text(page(n))


class Daemon:
    def __init__(self, config: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sitemapd", "run", "-c", str(config)],
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.started = time.perf_counter()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def wait(self, predicate: Callable[[], bool], timeout: float, every: float = 0.002) -> float:
        """Poll until `predicate` holds; return when it did."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if predicate():
                return time.perf_counter()
            time.sleep(every)
        raise SystemExit("timed out:\n" + "".join(self.lines[-20:]))

    def publishes(self) -> int:
        return sum(bool(PUBLISH.search(line)) for line in list(self.lines))

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def write_config(base: Path, debounce: float) -> Path:
    config = base / "sitemapd.toml"
    config.write_text(
        '[site]\nbase_url = "https://news.example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[[source]]\ntype = "directory"\nroot = "site"\n'
        f"[daemon]\ndebounce = {debounce}\nmax_delay = 5\n"
    )
    return config


def latencies(base: Path, daemon: Daemon, pages: int, changes: int, seed: int) -> list[float]:
    """Change `changes` random pages one at a time; return write-to-publish seconds."""
    out = base / "out"
    rng = random.Random(seed)
    result = []
    for n in rng.sample(range(pages), changes):
        path = page_path(base / "site", n)
        before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
        started = time.perf_counter()
        path.write_text(page(n, f"changed {time.time()}"))

        def republished(before: dict[str, int] = before) -> bool:
            return any(
                p.name != "sitemap.xml" and p.stat().st_mtime_ns != before.get(p.name)
                for p in out.iterdir()
            )

        result.append(daemon.wait(republished, 60) - started)
        time.sleep(0.05)
    return result


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=50)
    parser.add_argument("--idle", type=float, default=60.0)
    parser.add_argument("--startup-only", action="store_true", help="measure the first scan only")
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    base = WORK
    (base / "site").mkdir(parents=True)
    make_site(base / "site", args.pages)
    # The site's pages (and any earlier benchmark's output) reach the disk before the
    # clock starts: their writeback is no part of the scan.
    os.sync()
    rows: list[tuple[str, str]] = []

    config = write_config(base, 0.5)
    daemon = Daemon(config)
    ready = daemon.wait(lambda: any("daemon: ready" in line for line in daemon.lines), 1800)
    rows.append(
        (f"start-up: scan and publish {args.pages:,} pages", f"{ready - daemon.started:.1f} s")
    )
    if args.startup_only:
        daemon.stop()
        print_table(args.pages, rows)
        return
    lat = latencies(base, daemon, args.pages, args.changes, seed=1)
    rows.append(
        (
            "write -> shard published, debounce 0.5 s",
            f"p50 {pct(lat, 50):.3f} s, p95 {pct(lat, 95):.3f} s",
        )
    )

    staging = base / "deploy"
    for n in range(10_000):
        path = staging / "deploy" / f"{n // 500}" / f"new-{n}.html"
        if n % 500 == 0:
            path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page(n))
    before = daemon.publishes()
    started = time.perf_counter()
    subprocess.run(["cp", "-r", str(staging / "deploy"), str(base / "site")], check=True)

    def deployed() -> bool:
        shards = (base / "out").glob("sitemap-*.xml")
        return sum(p.read_text().count("/deploy/") for p in shards) == 10_000

    finished = daemon.wait(deployed, 600, every=0.2)
    time.sleep(6)  # a straggling batch would show within max_delay
    rows.append(
        (
            "10,000-file deploy (cp -r) converged",
            f"{finished - started:.1f} s, {daemon.publishes() - before} publishes",
        )
    )

    cpu = daemon.cpu_seconds()
    time.sleep(args.idle)
    idle = (daemon.cpu_seconds() - cpu) / args.idle * 60
    rows.append((f"idle CPU over {args.idle:.0f} s", f"{idle:.2f} s per minute"))
    daemon.stop()

    config = write_config(base, 0.01)
    daemon = Daemon(config)
    daemon.wait(lambda: any("daemon: ready" in line for line in daemon.lines), 1800)
    lat = latencies(base, daemon, args.pages, args.changes, seed=2)
    rows.append(
        (
            "write -> shard published, debounce 0.01 s",
            f"p50 {pct(lat, 50):.3f} s, p95 {pct(lat, 95):.3f} s",
        )
    )
    daemon.stop()
    print_table(args.pages, rows)


def print_table(pages: int, rows: list[tuple[str, str]]) -> None:
    print(f"\nsitemapd run, {pages:,} pages, {os.cpu_count()} cores\n")
    width = max(len(name) for name, _ in rows)
    print(f"| {'measure':<{width}} | result |")
    print(f"|{'-' * (width + 2)}|--------|")
    for name, value in rows:
        print(f"| {name:<{width}} | {value} |")


if __name__ == "__main__":
    main()
