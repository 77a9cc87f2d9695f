"""Benchmark: cold builds from 1,000 to 10,000,000 URLs, sitemapd beside npm `sitemap`.

    python bench/bench_curve.py [--sizes 1000,10000,100000,1000000,10000000] [--repeat 3]
                                [--peer-max 10000000] [--plot docs/img/build-curves.svg]

Each size's list is bench_build.py's (a CMS export with each URL's datetime), built from
nothing by sitemapd and by the peer given the same datetimes, in turn, `--repeat` times
below a million URLs and once from a million (the medians are compared). Prints a table
of seconds, seconds per million URLs and peak RSS with the ratio to the peer, and draws
both curves on log-log axes, with the line a build linear from the 1,000,000 one would
follow, into `--plot` (the SVG the README and docs/performance.md show). `--peer-max`
skips the peer above that size (0: never run it).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
from pathlib import Path
from typing import NamedTuple

from bench_build import WORK, Peer, run_build, site, write_list

HERE = Path(__file__).resolve().parent
DEFAULT_SIZES = "1000,10000,100000,1000000,10000000"
DEFAULT_PLOT = HERE.parent / "docs" / "img" / "build-curves.svg"
ONCE_FROM = 1_000_000  # builds this big and bigger run once: a 10M build is a minute


class Point(NamedTuple):
    """One size's median cold build for sitemapd and, when it ran, for the peer."""

    urls: int
    seconds: float
    rss: float
    peer_seconds: float | None
    peer_rss: float | None


def measure(urls: int, repeat: int, peer: Peer | None) -> Point:
    """Cold-build a list of `urls` with sitemapd and `peer` in turn; return the medians."""
    work = WORK / "curve"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    listing = work / "urls.txt"
    write_list(listing, urls)
    config = site(work / "sitemapd", listing, gzip=False)
    ours: list[tuple[float, float]] = []
    theirs: list[tuple[float, float]] = []
    for _ in range(1 if urls >= ONCE_FROM else repeat):
        if peer is not None:
            run = peer.build(listing, False, "datetimes")
            theirs.append((run[0], run[3]))
        for folder in ("out", "state"):
            shutil.rmtree(config.parent / folder, ignore_errors=True)
        run = run_build(config)
        ours.append((run[0], run[3]))
    shutil.rmtree(work, ignore_errors=True)
    seconds, rss = median(ours)
    if not theirs:
        return Point(urls, seconds, rss, None, None)
    peer_seconds, peer_rss = median(theirs)
    return Point(urls, seconds, rss, peer_seconds, peer_rss)


def median(runs: list[tuple[float, float]]) -> tuple[float, float]:
    """Return the median seconds of `runs` and the largest peak RSS among them."""
    return statistics.median(s for s, _ in runs), max(r for _, r in runs)


def print_table(points: list[Point], peer_name: str) -> None:
    """Print each size's figures beside the peer's, with the ratio."""
    print(f"\ncold builds, gzip off, {os.cpu_count()} cores; peer: {peer_name}\n")
    print("| URLs       | sitemapd s | s per 1M | RSS MiB | peer s  | s per 1M | RSS MiB | ratio |")
    print("|------------|------------|----------|---------|---------|----------|---------|-------|")
    for p in points:
        peer = ("", "", "", "")
        if p.peer_seconds is not None and p.peer_rss is not None:
            peer = (
                f"{p.peer_seconds:.3f}",
                f"{p.peer_seconds * 1e6 / p.urls:.2f}",
                f"{p.peer_rss:.0f}",
                f"{p.seconds / p.peer_seconds:.2f}",
            )
        print(
            f"| {p.urls:>10,} | {p.seconds:>10.3f} | {p.seconds * 1e6 / p.urls:>8.2f} | "
            f"{p.rss:>7.0f} | {peer[0]:>7} | {peer[1]:>8} | {peer[2]:>7} | {peer[3]:>5} |"
        )


def plot(points: list[Point], peer_name: str, path: Path) -> None:
    """Draw seconds and peak RSS against URLs on log axes into the SVG `path`."""
    import matplotlib

    matplotlib.use("svg")  # no display: the file is the output
    import matplotlib.pyplot as plt

    matplotlib.rcParams["svg.hashsalt"] = "sitemapd"  # the same figures give the same file
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, searchable
    figure, (times, memory) = plt.subplots(1, 2, figsize=(10, 4))
    urls = [p.urls for p in points]
    peer = [p for p in points if p.peer_seconds is not None]
    times.plot(urls, [p.seconds for p in points], "o-", label="sitemapd")
    memory.plot(urls, [p.rss for p in points], "o-", label="sitemapd")
    if peer:
        times.plot([p.urls for p in peer], [p.peer_seconds for p in peer], "s-", label=peer_name)
        memory.plot([p.urls for p in peer], [p.peer_rss for p in peer], "s-", label=peer_name)
    anchor = next((p for p in points if p.urls == ONCE_FROM), None)
    if anchor is not None:
        linear = [u for u in urls if u >= ONCE_FROM]
        times.plot(
            linear,
            [anchor.seconds * u / anchor.urls for u in linear],
            ":",
            color="grey",
            label="sitemapd, linear from 1M",
        )
    times.set(xscale="log", yscale="log", xlabel="URLs", ylabel="seconds, cold build")
    memory.set(xscale="log", xlabel="URLs", ylabel="peak RSS, MiB", ylim=(0, None))
    for axes in (times, memory):
        axes.grid(True, which="major", alpha=0.3)
        axes.legend()
    figure.suptitle(f"Cold builds from a URL list, {os.cpu_count()} cores")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, metadata={"Date": None})
    print(f"\nplot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated URL counts")
    parser.add_argument("--repeat", type=int, default=3, help="builds below 1M, medians")
    parser.add_argument("--peer-max", type=int, default=10_000_000, help="0: no peer")
    parser.add_argument("--plot", type=Path, default=DEFAULT_PLOT)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    installed = Peer.install() if args.peer_max else "npm sitemap: not run (--peer-max 0)"
    peer = installed if isinstance(installed, Peer) else None
    try:
        points = [
            measure(urls, args.repeat, peer if peer and urls <= args.peer_max else None)
            for urls in sizes
        ]
    finally:
        if peer is not None:
            peer.remove()
    peer_name = f"npm sitemap {peer.version}" if peer is not None else str(installed)
    print_table(points, peer_name)
    plot(points, peer_name, args.plot)


if __name__ == "__main__":
    main()
