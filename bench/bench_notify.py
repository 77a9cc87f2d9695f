"""Benchmark feeds and notifications and print a table.

    python bench/bench_notify.py [--changes 30]

Measures: rendering the Atom and RSS feeds with 1,000 entries; a rebuild of a 1,000-page
site with a feed after one page changed; and, with `sitemapd run`, the time from a page
write to the WebSub hub receiving its publish ping and to the IndexNow endpoint receiving
the URL, both on loopback (p50 / p95, with a 0.5 s and a 0.05 s debounce).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

from bench_daemon import Daemon

from sitemapd.render.feeds import FeedEntry, FeedPage, atom, rss

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "notify"
KEY = "0123456789abcdef"


class Receiver:
    """A hub and an IndexNow endpoint on 127.0.0.1 that note when each request came."""

    def __init__(self) -> None:
        self.hub: list[tuple[float, str]] = []
        self.indexnow: list[tuple[float, list[str]]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                now = time.perf_counter()
                if self.path == "/hub":
                    receiver.hub.append((now, parse_qs(body.decode())["hub.url"][0]))
                else:
                    receiver.indexnow.append((now, json.loads(body)["urlList"]))
                self.send_response(204 if self.path == "/hub" else 202)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def page(n: int, version: int) -> str:
    return (
        f"<!doctype html><html lang=en><head><title>Story {n}</title></head>"
        f"<body><p>version {version} {'text ' * 40}</p></body></html>"
    )


def write(path: Path, text: str) -> None:
    temp = path.with_name("." + path.name + ".tmp")
    temp.write_text(text)
    temp.replace(path)


def render_feeds(runs: int = 7) -> tuple[float, float]:
    entries = [
        FeedEntry(f"https://example.com/news/{n}.html", f"Story {n}", "2026-11-01T00:00:00+00:00")
        for n in range(1000)
    ]
    page_ = FeedPage(
        title="Updates",
        self_url="https://example.com/atom.xml",
        site_url="https://example.com/",
        entries=entries,
        updated="2026-11-01T00:00:00+00:00",
        hubs=("https://hub.example.net/",),
    )
    timings: dict[str, list[float]] = {"atom": [], "rss": []}
    for _ in range(runs):
        for name, render in (("atom", atom), ("rss", rss)):
            started = time.perf_counter()
            render(page_)
            timings[name].append(time.perf_counter() - started)
    return statistics.median(timings["atom"]), statistics.median(timings["rss"])


def make_site(base: Path, pages: int, receiver: Receiver, debounce: float) -> Path:
    shutil.rmtree(base, ignore_errors=True)
    root = base / "site"
    root.mkdir(parents=True)
    for n in range(pages):
        (root / f"{n}.html").write_text(page(n, 0))
    config = base / "sitemapd.toml"
    config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        f"[daemon]\ndebounce = {debounce}\n"
        '[feed]\ntitle = "Updates"\n'
        f'[websub]\nhubs = ["{receiver.url}/hub"]\n'
        f'[indexnow]\nkey = "{KEY}"\nendpoint = "{receiver.url}/indexnow"\n'
        '[[source]]\ntype = "directory"\nroot = "site"\n'
    )
    return config


def rebuild_after_one_change(receiver: Receiver) -> float:
    config = make_site(WORK / "build", 1000, receiver, 0.5)
    cli = [sys.executable, "-m", "sitemapd", "build", "-c", str(config)]
    subprocess.run(cli, check=True, capture_output=True)
    write(config.parent / "site" / "7.html", page(7, 1))
    started = time.perf_counter()
    subprocess.run(cli, check=True, capture_output=True)
    return time.perf_counter() - started


def latencies(receiver: Receiver, debounce: float, changes: int) -> tuple[list[float], list[float]]:
    config = make_site(WORK / f"run-{debounce}", 200, receiver, debounce)
    root = config.parent / "site"
    daemon = Daemon(config)
    hub_times, indexnow_times = [], []
    try:
        daemon.wait(lambda: any("daemon: ready" in line for line in daemon.lines), 60)
        daemon.wait(lambda: len(receiver.hub) >= 2, 30)  # the first publish's pings
        for n in range(changes):
            hub_before, indexnow_before = len(receiver.hub), len(receiver.indexnow)
            started = time.perf_counter()
            write(root / f"{n}.html", page(n, 1))
            atom_ping = daemon.wait(
                lambda b=hub_before: any(url.endswith("/atom.xml") for _, url in receiver.hub[b:]),
                30,
            )
            loc = f"https://example.com/{n}.html"
            daemon.wait(
                lambda b=indexnow_before, loc=loc: any(
                    loc in urls for _, urls in receiver.indexnow[b:]
                ),
                30,
            )
            at = next(t for t, urls in receiver.indexnow[indexnow_before:] if loc in urls)
            hub_times.append(atom_ping - started)
            indexnow_times.append(at - started)
            time.sleep(debounce + 0.3)  # let the burst end before the next write
    finally:
        daemon.proc.terminate()
        daemon.proc.wait(60)
    return hub_times, indexnow_times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--changes", type=int, default=30)
    args = parser.parse_args()
    receiver = Receiver()
    atom_s, rss_s = render_feeds()
    rows = [
        ("render Atom, 1,000 entries (median)", f"{atom_s * 1000:.1f} ms"),
        ("render RSS, 1,000 entries (median)", f"{rss_s * 1000:.1f} ms"),
        (
            "`sitemapd build`, 1,000 pages + feeds, one page changed",
            f"{rebuild_after_one_change(receiver):.2f} s",
        ),
    ]
    for debounce in (0.5, 0.05):
        hub, indexnow = latencies(receiver, debounce, args.changes)
        rows.append(
            (
                f"write -> hub ping received, debounce {debounce} s",
                f"p50 {pct(hub, 0.5):.3f} s, p95 {pct(hub, 0.95):.3f} s",
            )
        )
        rows.append(
            (
                f"write -> IndexNow received, debounce {debounce} s",
                f"p50 {pct(indexnow, 0.5):.3f} s, p95 {pct(indexnow, 0.95):.3f} s",
            )
        )
    print(f"\nfeeds and notifications, {args.changes} changes per run, 2 cores\n")
    print("| measure | result |\n|---|---|")
    for measure, result in rows:
        print(f"| {measure} | {result} |")


if __name__ == "__main__":
    main()
