"""Benchmark: sitemapd and npm `sitemap` side by side on the same generated URL list.

    python bench/bench_build.py [--urls 1000000] [--big 10000000] [--gzip]

sitemapd phases: cold build, no-change rebuild, rebuild after `touch`, one line changed
in the list, and one URL changed through the engine (what the daemon does when one file
changes); then a cold build of `--big` URLs (0 skips it). The peer: npm `sitemap` (the
most used generator), installed into a temporary folder with npm, rebuilding everything
from the same list with its SitemapAndIndexStream, 50,000 URLs a file, as its README
shows. Every build runs as its own process, so peak RSS is that of a real run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "work"
SITEMAPD = [sys.executable, "-m", "sitemapd"]
_WROTE = re.compile(r"wrote (\d+) files? \((\d+) bytes\)")
PEER = "sitemap@9"
# The peer's documented way for more than 50,000 URLs, given the list's datetimes.
PEER_SCRIPT = """
const { createReadStream, createWriteStream, mkdirSync } = require('fs');
const { resolve } = require('path');
const { Transform } = require('stream');
const { SitemapAndIndexStream, SitemapStream, lineSeparatedURLsToSitemapOptions } =
  require('sitemap');
const [list, out, base, gzip] = process.argv.slice(2);
const { createGzip } = require('zlib');
mkdirSync(out, { recursive: true });
const sms = new SitemapAndIndexStream({
  limit: 50000,
  getSitemapStream: (i) => {
    const stream = new SitemapStream({ hostname: base });
    const name = `sitemap-${i}.xml` + (gzip === 'true' ? '.gz' : '');
    const sink = gzip === 'true' ? stream.pipe(createGzip()) : stream;
    const ws = sink.pipe(createWriteStream(resolve(out, name)));
    return [new URL(name, base).toString(), stream, ws];
  },
});
lineSeparatedURLsToSitemapOptions(createReadStream(list))
  .pipe(new Transform({ objectMode: true, transform(line, _, done) {
    const tab = line.indexOf('\\t');
    done(null, tab < 0 ? { url: line } : { url: line.slice(0, tab), lastmod: line.slice(tab + 1) });
  } }))
  .pipe(sms)
  .pipe(createWriteStream(resolve(out, 'sitemap-index.xml')));
"""


def write_list(path: Path, count: int) -> None:
    """Write `count` URLs with datetimes, as a CMS export would."""
    sections = ("news", "sport", "culture", "tech", "business", "opinion", "world")
    with path.open("w") as handle:
        for start in range(0, count, 10_000):
            handle.write(
                "".join(
                    f"https://news.example.com/{sections[n % 7]}/{n // 5000}/story-{n}.html\t"
                    + time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(1_600_000_000 + n * 97))
                    + "\n"
                    for n in range(start, min(start + 10_000, count))
                )
            )


def timed(command: Sequence[str], cwd: Path | None = None) -> tuple[float, str, float]:
    """Run `command`; return seconds, its stdout and its peak RSS in MiB (children too)."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=cwd)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    if status:
        raise SystemExit(f"{' '.join(command)} failed: {out}")
    return seconds, out, usage.ru_maxrss / 1024


def run_build(config: Path) -> tuple[float, int, int, float]:
    """Run one `sitemapd build`; return seconds, files written, bytes written, peak RSS MiB."""
    seconds, out, rss = timed([*SITEMAPD, "--log-level", "warning", "build", "-c", str(config)])
    match = _WROTE.search(out)
    assert match, out
    return seconds, int(match.group(1)), int(match.group(2)), rss


def change_one_line(path: Path, target: int) -> str:
    """Give line `target` of the list a new datetime (streamed); return its URL."""
    changed = path.with_suffix(".new")
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    url = ""
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


def site(folder: Path, listing: Path, gzip: bool) -> Path:
    """Write a sitemapd config over `listing` in `folder`; return its path."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "sitemapd.toml"
    config.write_text(
        '[site]\nbase_url = "https://news.example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        f"[sitemap]\ngzip = {'true' if gzip else 'false'}\n"
        f'[[source]]\ntype = "urllist"\npath = "{listing}"\nname = "list"\n'
    )
    return config


def peer(listing: Path, gzip: bool) -> tuple[str, tuple[float, int, int, float] | None]:
    """Install npm `sitemap` into a temporary folder and rebuild `listing` with it; return
    its version and (seconds, files, bytes, RSS MiB), or why it could not run."""
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        return "npm sitemap: not run (npm and node are not installed)", None
    folder = Path(tempfile.mkdtemp(prefix="sitemapd-bench-peer-"))
    try:
        install = subprocess.run(
            [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", PEER],
            capture_output=True,
            text=True,
        )
        if install.returncode:
            return f"npm sitemap: not run (npm install failed: {install.stderr[-200:]})", None
        package = folder / "node_modules" / "sitemap" / "package.json"
        version = re.search(r'"version":\s*"([^"]+)"', package.read_text())
        script = folder / "build.js"
        script.write_text(PEER_SCRIPT)
        out = folder / "out"
        base = "https://news.example.com/"
        seconds, _, rss = timed(
            [node, str(script), str(listing), str(out), base, str(gzip).lower()], cwd=folder
        )
        files = list(out.iterdir())
        size = sum(path.stat().st_size for path in files)
        return f"npm sitemap {version.group(1) if version else '?'}", (
            seconds,
            len(files),
            size,
            rss,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--big", type=int, default=10_000_000, help="0: no big cold build")
    parser.add_argument("--gzip", action="store_true", help="publish shards as .xml.gz")
    args = parser.parse_args()
    work = WORK / "build"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    listing = work / "urls.txt"
    write_list(listing, args.urls)
    config = site(work / "sitemapd", listing, args.gzip)

    peer_name, peer_cold = peer(listing, args.gzip)
    rows: list[tuple[str, tuple[float, int, int, float], tuple[float, int, int, float] | None]]
    rows = [("cold build", run_build(config), peer_cold)]
    rows.append(("no-change rebuild", run_build(config), peer_cold))
    os.utime(listing)
    rows.append(("rebuild after touch", run_build(config), peer_cold))
    url = change_one_line(listing, args.urls // 2)
    rows.append(("one line changed in the list", run_build(config), peer_cold))
    rows.append(("one URL changed via the engine", engine_one_change(config, url), None))
    big: tuple[float, int, int, float] | None = None
    if args.big:
        big_list = work / "big.txt"
        write_list(big_list, args.big)
        big = run_build(site(work / "big", big_list, args.gzip))
        big_list.unlink()

    print(f"\n{args.urls:,} URLs, gzip={'on' if args.gzip else 'off'}, {os.cpu_count()} cores")
    print(f"peer: {peer_name}, rebuilding everything every time\n")
    header = ("phase", "sitemapd s", "files", "bytes", "RSS MiB", "peer s", "RSS MiB", "ratio")
    widths = (30, 10, 5, 11, 7, 7, 7, 5)
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for name, (seconds, files, size, rss), other in rows:
        theirs = ("", "", "")
        if other is not None:
            theirs = (f"{other[0]:.3f}", f"{other[3]:.0f}", f"{seconds / other[0]:.2f}")
        print(
            f"| {name:<30} | {seconds:>10.3f} | {files:>5} | {size:>11,} | {rss:>7.0f} | "
            f"{theirs[0]:>7} | {theirs[1]:>7} | {theirs[2]:>5} |"
        )
    if big is not None:
        cold = rows[0][1][0]
        print(
            f"\ncold build of {args.big:,} URLs: {big[0]:.1f} s ({big[0] / cold:.1f}x the "
            f"{args.urls:,} cold build), {big[1]} files, {big[2]:,} bytes, "
            f"peak RSS {big[3]:.0f} MiB"
        )


if __name__ == "__main__":
    main()
