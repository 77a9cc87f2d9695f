"""Benchmark the Atom/RSS feeds, WebSub and IndexNow, and print a table.

    python bench/bench_feeds.py [--entries 1000] [--changes 30]

Measures: rendering the Atom and RSS feeds of 1,000 entries (`sitemapd.render.feeds`,
median of 9 runs); `sitemapd build` of a 1,000-page site with a feed, cold and after one
page changed, and the same one-page change applied through the engine in-process; then,
with `sitemapd run`, the time from an atomic page write to a loopback WebSub hub receiving
the `hub.mode=publish` ping for the Atom feed, and to a loopback IndexNow endpoint
receiving the page's URL (p50 / p95, with a 0.5 s and a 0.05 s debounce).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

from bench_daemon import Daemon

from sitemapd.render.feedpage import FeedEntry, FeedPage
from sitemapd.render.feeds import atom, rss

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "feeds"
BASE = "https://example.com/"
ATOM_URL = BASE + "atom.xml"
KEY = "0123456789abcdef"


class Endpoints:
    """A WebSub hub (/hub, 204) and an IndexNow endpoint (/indexnow, 202) on 127.0.0.1
    that note when each POST arrived (perf_counter, after its body was read)."""

    def __init__(self) -> None:
        self.pings: list[tuple[float, str, str]] = []  # (at, hub.mode, hub.url)
        self.submissions: list[tuple[float, list[str]]] = []  # (at, urlList)
        self.lock = threading.Lock()
        endpoints = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                at = time.perf_counter()
                if self.path == "/hub":
                    form = parse_qs(body.decode())
                    with endpoints.lock:
                        endpoints.pings.append((at, form["hub.mode"][0], form["hub.url"][0]))
                    self.send_response(204)
                else:
                    with endpoints.lock:
                        endpoints.submissions.append((at, json.loads(body)["urlList"]))
                    self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def atom_ping(self, since: float) -> float | None:
        """Return when the first publish ping for the Atom feed after `since` came."""
        with self.lock:
            return next(
                (
                    at
                    for at, mode, url in self.pings
                    if at >= since and mode == "publish" and url == ATOM_URL
                ),
                None,
            )

    def submitted(self, loc: str, since: float) -> float | None:
        """Return when `loc` first reached the IndexNow endpoint after `since`."""
        with self.lock:
            return next((at for at, urls in self.submissions if at >= since and loc in urls), None)


def page(n: int, version: int) -> str:
    return (
        f"<!doctype html><html lang=en><head><title>Story {n}</title></head>"
        f"<body><h1>Story {n}</h1><p>version {version} {'text ' * 40}</p></body></html>"
    )


def write_atomic(path: Path, text: str) -> None:
    """Write `path` as an editor saves: a temp file beside it, renamed over it."""
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text)
    temp.replace(path)


def make_site(base: Path, pages: int, endpoints: Endpoints, debounce: float) -> Path:
    """Create `pages` pages and a config with feed, WebSub and IndexNow; return the config."""
    shutil.rmtree(base, ignore_errors=True)
    root = base / "site"
    root.mkdir(parents=True)
    for n in range(pages):
        (root / f"{n}.html").write_text(page(n, 0))
    config = base / "sitemapd.toml"
    config.write_text(
        f'[site]\nbase_url = "{BASE}"\noutput_dir = "out"\nstate_dir = "state"\n'
        '[[source]]\ntype = "directory"\nroot = "site"\nname = "pages"\n'
        f"[daemon]\ndebounce = {debounce}\n"
        '[feed]\ntitle = "Example updates"\n'
        f'[websub]\nhubs = ["{endpoints.url}/hub"]\n'
        f'[indexnow]\nkey = "{KEY}"\nendpoint = "{endpoints.url}/indexnow"\n'
    )
    return config


def render_feeds(entries: int, runs: int = 9) -> tuple[float, float, int, int]:
    """Return the median seconds of atom() and rss() over `runs`, and each one's bytes."""
    feed = FeedPage(
        title="Example updates",
        self_url=ATOM_URL,
        site_url=BASE,
        entries=[
            FeedEntry(
                f"{BASE}news/{n // 100}/story-{n}.html",
                f"Story {n}: a headline of ordinary length",
                time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(1_790_000_000 - n * 60)),
            )
            for n in range(entries)
        ],
        updated="2026-09-21T00:00:00+00:00",
        hubs=("https://pubsubhubbub.appspot.com/",),
    )
    timings: dict[str, list[float]] = {"atom": [], "rss": []}
    sizes = {}
    for _ in range(runs):
        for name, render in (("atom", atom), ("rss", rss)):
            started = time.perf_counter()
            data = render(feed)
            timings[name].append(time.perf_counter() - started)
            sizes[name] = len(data)
    return (
        statistics.median(timings["atom"]),
        statistics.median(timings["rss"]),
        sizes["atom"],
        sizes["rss"],
    )


def build(config: Path) -> float:
    """Run `sitemapd build` as its own process; return its wall-clock seconds."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "sitemapd", "--log-level", "warning", "build", "-c", str(config)],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def engine_changes(config: Path, changes: int) -> list[float]:
    """Change one page `changes` times and apply each through the engine (what the daemon's
    writer does for one event, publish included); return the seconds of each. Each change
    is a second apart on the engine's clock, so each one moves the feed."""
    code = f"""
import time
from pathlib import Path
from sitemapd import config
from sitemapd.core import w3c
from sitemapd.engine.engine import Engine
engine = Engine(config.load({str(config)!r}))
root = Path({str(config.parent / "site")!r})
for n in range({changes}):
    (root / "7.html").write_text({page(7, 0)!r}.replace("version 0", f"engine {{n}}"))
    started = time.perf_counter()
    now = w3c.format_epoch(time.time() + n + 1)
    result = engine.update({{"pages": {{"7.html"}}}}, set(), now=now)
    seconds = time.perf_counter() - started
    assert "atom.xml" in result.report.written, result.report.written
    print(seconds)
engine.close()
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return [float(line) for line in out.stdout.split()]


def feed_entries(out: Path) -> int:
    return (out / "atom.xml").read_bytes().count(b"<entry>")


def arrival(daemon: Daemon, probe: Callable[[], float | None], timeout: float = 30) -> float:
    """Wait until `probe` returns a time (the endpoint's clock) and return it."""
    found: list[float] = []

    def arrived() -> bool:
        at = probe()
        if at is not None:
            found.append(at)
        return bool(found)

    daemon.wait(arrived, timeout)
    return found[0]


def latencies(
    endpoints: Endpoints, pages: int, debounce: float, changes: int
) -> tuple[list[float], list[float]]:
    """Write `changes` pages one at a time under `sitemapd run`; return write -> Atom hub
    ping and write -> IndexNow submission seconds."""
    config = make_site(WORK / f"run-{debounce}", pages, endpoints, debounce)
    root = config.parent / "site"
    daemon = Daemon(config)
    hub, indexnow = [], []
    try:
        daemon.wait(lambda: any("sitemapd.daemon: ready" in line for line in daemon.lines), 120)
        # The first publish announces every page; let its pings land before measuring.
        daemon.wait(lambda: endpoints.atom_ping(daemon.started) is not None, 60)
        time.sleep(1.0)
        for n in range(changes):
            loc = f"{BASE}{n}.html"
            started = time.perf_counter()
            write_atomic(root / f"{n}.html", page(n, 1))
            hub.append(arrival(daemon, partial(endpoints.atom_ping, started)) - started)
            indexnow.append(arrival(daemon, partial(endpoints.submitted, loc, started)) - started)
            time.sleep(0.2)  # quiet between changes: each one is its own batch
    finally:
        daemon.stop()
    return hub, indexnow


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000, help="pages, so feed entries")
    parser.add_argument("--changes", type=int, default=30)
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    endpoints = Endpoints()
    rows: list[tuple[str, str]] = []

    atom_s, rss_s, atom_bytes, rss_bytes = render_feeds(args.entries)
    rows.append(
        (
            f"render Atom, {args.entries:,} entries (median of 9)",
            f"{atom_s * 1000:.1f} ms ({atom_bytes:,} bytes)",
        )
    )
    rows.append(
        (
            f"render RSS, {args.entries:,} entries (median of 9)",
            f"{rss_s * 1000:.1f} ms ({rss_bytes:,} bytes)",
        )
    )

    config = make_site(WORK / "build", args.entries, endpoints, 0.5)
    cold = build(config)
    entries = feed_entries(config.parent / "out")
    rows.append((f"`sitemapd build`, {args.entries:,} pages + feeds, cold", f"{cold:.2f} s"))
    write_atomic(config.parent / "site" / "7.html", page(7, 1))
    rows.append(
        (
            f"`sitemapd build` after one page changed ({entries:,} feed entries)",
            f"{build(config):.2f} s",
        )
    )
    engine = engine_changes(config, 9)
    rows.append(
        (
            "one page changed via the engine, publish with feeds (median of 9)",
            f"{statistics.median(engine) * 1000:.0f} ms",
        )
    )

    for debounce in (0.5, 0.05):
        hub, indexnow = latencies(endpoints, args.entries, debounce, args.changes)
        rows.append(
            (
                f"write -> WebSub hub got Atom ping, debounce {debounce} s",
                f"p50 {pct(hub, 50):.3f} s, p95 {pct(hub, 95):.3f} s",
            )
        )
        rows.append(
            (
                f"write -> IndexNow got the URL, debounce {debounce} s",
                f"p50 {pct(indexnow, 50):.3f} s, p95 {pct(indexnow, 95):.3f} s",
            )
        )

    print(
        f"\nfeeds and notifications, {args.entries:,} pages, {args.changes} changes per run, "
        f"{os.cpu_count()} cores\n"
    )
    width = max(len(name) for name, _ in rows)
    print(f"| {'measure':<{width}} | result |")
    print(f"|{'-' * (width + 2)}|--------|")
    for name, value in rows:
        print(f"| {name:<{width}} | {value} |")


if __name__ == "__main__":
    main()
