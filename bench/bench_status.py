"""Benchmark the sidecar's `/status` and `/status.json` on a big ledger, idle and while
the daemon writes, and print a table.

    python bench/bench_status.py [--urls 1000000] [--changed 20000] [--rounds 4]

Builds a ledger of `--urls` listed URLs, starts `sitemapd run` with the status page, and
times requests of `/status`, `/status.json` and one URL's history: first idle, then while
the daemon applies and publishes rounds of `--changed` updated and `--changed` new URLs
(each round a rewrite of the list). Times are client-side, over one keep-alive
connection per path, on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import http.client
import re
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench_build import write_list

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "status"
PUBLISH = re.compile(r"published: .* wrote [1-9]\d* files")
PATHS = ("/status", "/status.json", "/status?url=https://news.example.com/news/0/story-0.html")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def configure(folder: Path, listing: Path, port: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "sitemapd.toml"
    config.write_text(
        '[site]\nbase_url = "https://news.example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        "[sitemap]\ngzip = false\n"
        f'[[source]]\ntype = "urllist"\npath = "{listing}"\nname = "list"\n'
        f'[daemon]\ndebounce = 0.2\n[http]\nlisten = "127.0.0.1:{port}"\n'
    )
    return config


def rewrite(listing: Path, urls: int, changed: int, round_: int) -> None:
    """Rewrite the list: `changed` URLs from the middle with later datetimes, and
    `changed` new URLs at its end (a CMS export after a busy hour)."""
    lines = listing.read_text().splitlines(keepends=True)[:urls]
    start = urls // 2
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(1_700_000_000 + round_ * 60))
    for n in range(start, min(start + changed, urls)):
        lines[n] = lines[n].split("\t")[0] + "\t" + stamp + "\n"
    lines += [
        f"https://news.example.com/new/{round_}/story-{n}.html\t{stamp}\n" for n in range(changed)
    ]
    temporary = listing.with_suffix(".tmp")
    temporary.write_text("".join(lines))
    temporary.replace(listing)


class Daemon:
    def __init__(self, config: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sitemapd", "run", "-c", str(config)],
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def wait_for(self, pattern: str, count: int, timeout: float) -> None:
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while sum(bool(regex.search(line)) for line in list(self.lines)) < count:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise SystemExit("timed out:\n" + "".join(self.lines[-20:]))
            time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(120)


class Timings:
    """Requests of each path in turn on keep-alive connections, timed."""

    def __init__(self, port: int) -> None:
        self.connections = {path: http.client.HTTPConnection("127.0.0.1", port) for path in PATHS}
        self.times: dict[str, list[float]] = {path: [] for path in PATHS}
        self.sizes: dict[str, int] = {}

    def once(self) -> None:
        for path, conn in self.connections.items():
            started = time.perf_counter()
            conn.request("GET", path)
            response = conn.getresponse()
            body = response.read()
            self.times[path].append(time.perf_counter() - started)
            if response.status != 200:
                raise SystemExit(f"{path}: {response.status} {body[:200]!r}")
            self.sizes[path] = len(body)

    def rows(self, label: str) -> list[str]:
        out = []
        for path, times in self.times.items():
            ms = sorted(t * 1000 for t in times)
            p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
            out.append(
                f"{label:<24} {path[:28]:<28} {len(ms):>5} {statistics.median(ms):>8.1f} "
                f"{p95:>8.1f} {ms[-1]:>8.1f} {self.sizes[path]:>9}"
            )
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--changed", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--idle", type=int, default=50, help="idle requests of each path")
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    listing = WORK / "urls.txt"
    write_list(listing, args.urls)
    port = free_port()
    config = configure(WORK / "site", listing, port)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "sitemapd", "--log-level", "warning", "build", "-c", str(config)],
        check=True,
    )
    print(f"ledger of {args.urls} URLs built in {time.perf_counter() - started:.1f}s")
    daemon = Daemon(config)
    try:
        daemon.wait_for(r"sitemapd.daemon: ready", 1, 600)
        idle = Timings(port)
        for _ in range(args.idle):
            idle.once()
        busy = Timings(port)
        publishes = sum(bool(PUBLISH.search(line)) for line in daemon.lines)
        writing = 0.0
        for round_ in range(1, args.rounds + 1):
            rewrite(listing, args.urls, args.changed, round_)
            began = time.perf_counter()
            # Requests go on until the daemon has applied and published the round.
            regex = PUBLISH
            while sum(bool(regex.search(line)) for line in list(daemon.lines)) < publishes + 1:
                busy.once()
                if daemon.proc.poll() is not None or time.perf_counter() - began > 600:
                    raise SystemExit("the daemon did not publish:\n" + "".join(daemon.lines[-20:]))
            writing += time.perf_counter() - began
            publishes += 1
        print(
            f"{args.rounds} rounds of {args.changed} updated + {args.changed} new URLs: "
            f"{writing:.1f}s writing in all"
        )
        print(
            f"{'':<24} {'path':<28} {'reqs':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} "
            f"{'bytes':>9}"
        )
        for line in idle.rows("idle") + busy.rows("while the daemon writes"):
            print(line)
    finally:
        daemon.stop()


if __name__ == "__main__":
    main()
