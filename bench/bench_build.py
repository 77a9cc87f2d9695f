"""Benchmark: sitemapd and npm `sitemap` side by side on the same generated URL list.

    python bench/bench_build.py [--urls 1000000] [--big 10000000] [--gzip]

sitemapd phases: cold build, no-change rebuild, rebuild after `touch`, one line changed
in the list, one URL changed through the engine (what the daemon does when one file
changes), and every line given a new datetime (once: a CMS exporting again); then the
start-up of `status`, `check-config` and `explain`, and a cold build of `--big` URLs (0
skips it). The peer: npm `sitemap` (the
most used generator), installed into a temporary folder with npm, rebuilding everything
from the same list with its SitemapAndIndexStream, 50,000 URLs a file, as its README
shows: given each URL's datetime, as sitemapd publishes them, and given the URLs alone
(faster; its files then have no <lastmod>). Cold builds run `--repeat` times each, in
turn, and the medians are compared; the small phases run `--repeat` times too (a
different line each time), and their medians are shown. Every build runs as its own
process; peak RSS is that of the process and its children together, CPU their user and
system seconds together.
"""

from __future__ import annotations

import argparse
import calendar
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

Run = tuple[float, int, int, float, float]  # seconds, files, bytes, peak RSS MiB, CPU s
HERE = Path(__file__).resolve().parent
WORK = HERE / "work"
SITEMAPD = [sys.executable, "-m", "sitemapd"]
_WROTE = re.compile(r"wrote (\d+) files? \((\d+) bytes\)")
PEER = "sitemap@9"
# The peer's documented way for more than 50,000 URLs; `given` is `datetimes` (each URL's
# lastmod, as sitemapd publishes them) or `urls` (URLs alone: faster, no <lastmod>).
PEER_SCRIPT = """
const { createReadStream, createWriteStream, mkdirSync } = require('fs');
const { resolve } = require('path');
const { Transform } = require('stream');
const { SitemapAndIndexStream, SitemapStream, lineSeparatedURLsToSitemapOptions } =
  require('sitemap');
const [list, out, base, gzip, given] = process.argv.slice(2);
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
    if (tab < 0) done(null, { url: line });
    else if (given === 'urls') done(null, { url: line.slice(0, tab) });
    else done(null, { url: line.slice(0, tab), lastmod: line.slice(tab + 1) });
  } }))
  .pipe(sms)
  .pipe(createWriteStream(resolve(out, 'sitemap-index.xml')));
"""


# A generated list's datetimes: from September 2020, over 5.7 years (`write_list`).
_DATED_FROM, _DATED_OVER = 1_600_000_000, 180_000_000


def write_list(path: Path, count: int) -> None:
    """Write `count` URLs with datetimes, as a CMS export would: all in the past (from
    September 2020 over 5.7 years, again from the start after the first 1,855,670 lines), so
    that a list of 10M lines is read as a list of 1M is, none capped at the build's time."""
    sections = ("news", "sport", "culture", "tech", "business", "opinion", "world")
    with path.open("w") as handle:
        for start in range(0, count, 10_000):
            handle.write(
                "".join(
                    f"https://news.example.com/{sections[n % 7]}/{n // 5000}/story-{n}.html\t"
                    + time.strftime(
                        "%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(_DATED_FROM + n * 97 % _DATED_OVER)
                    )
                    + "\n"
                    for n in range(start, min(start + 10_000, count))
                )
            )


def timed(command: Sequence[str], cwd: Path | None = None) -> tuple[float, str, float, float]:
    """Run `command`; return seconds, its stdout, its peak RSS in MiB (that of it and its
    child processes together, sampled every 10 ms, or of the largest if more) and its CPU
    seconds (user + system, with those of the children it waited for)."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=cwd)
    stdout = proc.stdout
    assert stdout is not None
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(stdout.read()))
    reader.start()
    peak = [0]
    ended = threading.Event()

    def sample() -> None:
        while not ended.wait(0.01):
            peak[0] = max(peak[0], tree_rss(proc.pid))

    # Sampled on a thread and waited for here, the end is seen when it comes: polling for
    # it every 10 ms added 5 ms on average to a 0.15 s build. Waited for without reaping
    # (WNOWAIT), the process keeps its pid while the sampler may still read it.
    sampler = threading.Thread(target=sample)
    sampler.start()
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    seconds = time.perf_counter() - started
    ended.set()
    sampler.join()
    _, status, usage = os.wait4(proc.pid, 0)
    reader.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(command)} failed: {out[0]}")
    cpu = usage.ru_utime + usage.ru_stime
    return seconds, out[0], max(peak[0], usage.ru_maxrss * 1024) / (1 << 20), cpu


def tree_rss(pid: int) -> int:
    """Return the resident bytes of process `pid` and its descendants (0 once gone)."""
    total = 0
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as children:
                total += sum(tree_rss(int(child)) for child in children.read().split())
    except OSError:  # gone meanwhile, or no /proc
        pass
    return total


def memory_before() -> str:
    """Return the free memory and the page cache's size from /proc/meminfo, or ""."""
    try:
        kib = {
            line.split(":")[0]: int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
        }
        return f"{kib['MemFree'] / 2**20:.1f} GiB free, {kib['Cached'] / 2**20:.1f} GiB cached"
    except (OSError, ValueError, IndexError, KeyError):  # not Linux
        return ""


def run_build(config: Path) -> Run:
    """Run one `sitemapd build`; return seconds, files written, bytes written, peak RSS MiB
    and CPU seconds."""
    seconds, out, rss, cpu = timed(
        [*SITEMAPD, "--log-level", "warning", "build", "-c", str(config)]
    )
    match = _WROTE.search(out)
    assert match, out
    return seconds, int(match.group(1)), int(match.group(2)), rss, cpu


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


def redate_every_line(path: Path) -> None:
    """Give every line of the list a datetime one second later (streamed), as a CMS
    exporting its URLs again with fresh times would."""
    changed = path.with_suffix(".new")
    with path.open() as src, changed.open("w") as dst:
        for line in src:
            url, _, stamp = line.rstrip("\n").partition("\t")
            later = time.gmtime(calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) + 1)
            dst.write(f"{url}\t{time.strftime('%Y-%m-%dT%H:%M:%S', later)}{stamp[19:]}\n")
    changed.replace(path)


def engine_one_change(config: Path, loc: str) -> Run:
    """Apply one changed URL through the engine and publish: seconds, files, bytes, RSS,
    CPU seconds (of the apply and publish alone)."""
    code = f"""
import resource
import time
from sitemapd import config
from sitemapd.core import w3c
from sitemapd.engine.engine import Engine
from sitemapd.core.observation import Observation
cfg = config.load({str(config)!r})
engine = Engine(cfg)
source = cfg.sources[0].name
time.sleep(1.1)  # past the second the list's changed line was given: a real change
started, cpu = time.perf_counter(), time.process_time()
now = w3c.now()
engine.ledger.apply([Observation({loc!r}, source, None, now)], now=now)
report = engine.publisher.publish(now)
seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(seconds, len(report.written), report.bytes_written, rss, cpu)
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    seconds, files, size, rss, cpu = out.stdout.split()
    return float(seconds), int(files), int(size), float(rss), float(cpu)


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


class Peer:
    """npm `sitemap`, installed into a temporary folder."""

    def __init__(self, folder: Path, node: str, version: str) -> None:
        self.folder, self.node, self.version = folder, node, version

    @classmethod
    def install(cls) -> Peer | str:
        """Return the installed peer, or why it cannot run."""
        npm, node = shutil.which("npm"), shutil.which("node")
        if npm is None or node is None:
            return "npm sitemap: not run (npm and node are not installed)"
        folder = Path(tempfile.mkdtemp(prefix="sitemapd-bench-peer-"))
        install = subprocess.run(
            [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", PEER],
            capture_output=True,
            text=True,
        )
        if install.returncode:
            shutil.rmtree(folder, ignore_errors=True)
            return f"npm sitemap: not run (npm install failed: {install.stderr[-200:]})"
        package = folder / "node_modules" / "sitemap" / "package.json"
        version = re.search(r'"version":\s*"([^"]+)"', package.read_text())
        (folder / "build.js").write_text(PEER_SCRIPT)
        return cls(folder, node, version.group(1) if version else "?")

    def build(self, listing: Path, gzip: bool, given: str) -> Run:
        """Rebuild `listing` from nothing, given `datetimes` or `urls`; return seconds,
        files, bytes, peak RSS MiB and CPU seconds."""
        out = self.folder / "out"
        shutil.rmtree(out, ignore_errors=True)
        base = "https://news.example.com/"
        command = [self.node, "build.js", str(listing), str(out), base, str(gzip).lower(), given]
        seconds, _, rss, cpu = timed(command, cwd=self.folder)
        files = list(out.iterdir())
        return seconds, len(files), sum(path.stat().st_size for path in files), rss, cpu

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


# The targets of each phase (issue 30): a ratio to the peer's time in the same run, or a
# limit in seconds; every build's peak RSS stays within RSS_LIMIT.
PEER_RATIO = {"cold build": 0.30}
SECONDS = {
    "no-change rebuild": 0.10,
    "rebuild after touch": 0.10,
    "one line changed in the list": 0.15,
}
RSS_LIMIT = 100.0  # MiB
BIG_RATIO = 10.5  # the --big cold build's time over the --urls one's
STARTUP = 0.12  # seconds of a `status`, `check-config` or `explain` process


def target(name: str, run: Run, peer: Run | None) -> str:
    """Return the target of phase `name` and whether `run` met it, e.g. `<= 0.30x: yes`."""
    seconds, rss = run[0], run[3]
    if name in PEER_RATIO and peer is not None:
        goal, met = f"<= {PEER_RATIO[name]:.2f}x", seconds / peer[0] <= PEER_RATIO[name]
    elif name in SECONDS:
        goal, met = f"<= {SECONDS[name]:.2f} s", seconds <= SECONDS[name]
    else:
        goal, met = "", True
    goal = f"{goal}, " if goal else ""
    return f"{goal}<= {RSS_LIMIT:.0f} MiB: {'yes' if met and rss <= RSS_LIMIT else 'no'}"


def median(runs: list[Run]) -> Run:
    """Return the run of median time."""
    return sorted(runs)[len(runs) // 2]


def repeated(times: int, phase: Callable[[int], Run]) -> Run:
    """Run `phase(n)` for n in range(times); return the run of median time."""
    return median([phase(n) for n in range(times)])


def startup(config: Path, page: Path, times: int = 7) -> list[tuple[str, list[float], float]]:
    """Time whole `status`, `check-config` and `explain` processes `times` times each, in
    turn; return each command's wall seconds and its median CPU seconds. `page` is a
    page's file under a directory source of `config`."""
    commands = {
        "status": ["status", "-c", str(config)],
        "check-config": ["check-config", "-c", str(config)],
        "explain": ["explain", "-c", str(config), str(page)],
    }
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(times):
        for name, arguments in commands.items():
            seconds, _, _, cpu = timed([*SITEMAPD, *arguments])
            walls[name].append(seconds)
            cpus[name].append(cpu)
    return [(name, walls[name], statistics.median(cpus[name])) for name in commands]


def startup_site(folder: Path) -> tuple[Path, Path]:
    """Write a site of a thousand listed URLs and one page under a directory source,
    built; return its config and the page's file."""
    listing = folder / "urls.txt"
    pages = folder / "pages"
    pages.mkdir(parents=True, exist_ok=True)
    page = pages / "story.html"
    page.write_text(
        "<html><head><title>A story</title></head><body><nav>Home</nav><main><h1>A story"
        "</h1><p>What happened, told in a few words.</p></main></body></html>"
    )
    write_list(listing, 1_000)
    config = site(folder, listing, False)
    with config.open("a") as handle:
        handle.write(f'[[source]]\ntype = "directory"\nroot = "{pages}"\nname = "pages"\n')
    run_build(config)
    return config, page


def cold_builds(
    config: Path, listing: Path, gzip: bool, peer: Peer | None, repeat: int
) -> tuple[Run, Run | None, Run | None]:
    """Cold-build `listing` `repeat` times with sitemapd and each peer mode in turn, so that
    the machine's drift falls on all alike; print every time; return the medians
    (sitemapd's last build's ledger stays for the phases after)."""
    ours: list[Run] = []
    dated: list[Run] = []
    bare: list[Run] = []
    for _ in range(repeat):
        if peer is not None:
            dated.append(peer.build(listing, gzip, "datetimes"))
            bare.append(peer.build(listing, gzip, "urls"))
        for folder in ("out", "state"):
            shutil.rmtree(config.parent / folder, ignore_errors=True)
        ours.append(run_build(config))
    print("cold builds, s:")
    print(f"  sitemapd                     {' '.join(f'{r[0]:.2f}' for r in ours)}")
    if peer is not None:
        print(f"  peer given datetimes         {' '.join(f'{r[0]:.2f}' for r in dated)}")
        print(f"  peer given URLs only         {' '.join(f'{r[0]:.2f}' for r in bare)}")
    return median(ours), median(dated) if dated else None, median(bare) if bare else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--big", type=int, default=10_000_000, help="0: no big cold build")
    parser.add_argument("--gzip", action="store_true", help="publish shards as .xml.gz")
    parser.add_argument("--repeat", type=int, default=3, help="cold builds of each, medians")
    args = parser.parse_args()
    work = WORK / "build"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    listing = work / "urls.txt"
    write_list(listing, args.urls)
    config = site(work / "sitemapd", listing, args.gzip)

    installed = Peer.install()
    peer = installed if isinstance(installed, Peer) else None
    try:
        cold, peer_cold, peer_bare = cold_builds(config, listing, args.gzip, peer, args.repeat)
    finally:
        if peer is not None:
            peer.remove()
    peer_name = f"npm sitemap {peer.version}" if peer is not None else str(installed)
    # The cold builds leave about 120 MB a run to be written back. Flushed in the
    # background, it would be timed with the small phases (their fsyncs wait behind it):
    # they are timed on a machine with nothing left to write, as a quiet one is.
    os.sync()
    rows: list[tuple[str, Run, Run | None]] = [("cold build", cold, peer_cold)]
    if peer_bare is not None:
        rows.append(("cold build, peer given URLs only", cold, peer_bare))
    rows.append(
        ("no-change rebuild", repeated(args.repeat, lambda n: run_build(config)), peer_cold)
    )

    def touched(n: int) -> Run:
        os.utime(listing)
        return run_build(config)

    rows.append(("rebuild after touch", repeated(args.repeat, touched), peer_cold))
    urls: list[str] = []

    def changed(n: int) -> Run:
        urls.append(change_one_line(listing, (args.urls // 2 + 7_919 * n) % args.urls))
        return run_build(config)

    rows.append(("one line changed in the list", repeated(args.repeat, changed), peer_cold))
    rows.append(("one URL changed via the engine", engine_one_change(config, urls[0]), None))
    redate_every_line(listing)
    rows.append(("every line re-dated", run_build(config), peer_cold))
    started = startup(*startup_site(work / "startup"))
    big: Run | None = None
    if args.big:
        big_list = work / "big.txt"
        write_list(big_list, args.big)
        memory = memory_before()
        big = run_build(site(work / "big", big_list, args.gzip))
        big_list.unlink()

    print(f"\n{args.urls:,} URLs, gzip={'on' if args.gzip else 'off'}, {os.cpu_count()} cores")
    print(
        f"peer: {peer_name}, rebuilding everything every time, given each URL's datetime "
        "(as sitemapd publishes them) but where it says URLs only\n"
    )
    header = (
        "phase",
        "sitemapd s",
        "files",
        "bytes",
        "RSS MiB",
        "CPU s",
        "peer s",
        "RSS MiB",
        "ratio",
        "target: met",
    )
    widths = (32, 10, 5, 11, 7, 6, 7, 7, 5, 31)
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for name, run, other in rows:
        seconds, files, size, rss, cpu = run
        theirs = ("", "", "")
        if other is not None:
            theirs = (f"{other[0]:.3f}", f"{other[3]:.0f}", f"{seconds / other[0]:.2f}")
        print(
            f"| {name:<32} | {seconds:>10.3f} | {files:>5} | {size:>11,} | {rss:>7.0f} | "
            f"{cpu:>6.2f} | {theirs[0]:>7} | {theirs[1]:>7} | {theirs[2]:>5} | "
            f"{target(name, run, other):<31} |"
        )
    print(f"\nstart-up (whole processes, {len(started[0][1])} of each in turn), s:")
    for name, walls, cpu in started:
        best, middle = min(walls), statistics.median(walls)
        print(
            f"  {name:<13} min {best:.3f}, median {middle:.3f}, CPU {cpu:.3f}; target <= "
            f"{STARTUP:.2f}: {'yes' if middle <= STARTUP else 'no'} ({middle / STARTUP:.2f}x)"
        )
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    if big is not None:
        cold = rows[0][1][0]
        ratio = big[0] / cold
        met = ratio <= BIG_RATIO and big[3] <= RSS_LIMIT
        print(
            f"\ncold build of {args.big:,} URLs: {big[0]:.1f} s ({ratio:.1f}x the "
            f"{args.urls:,} cold build; target <= {BIG_RATIO}x), {big[1]} files, "
            f"{big[2]:,} bytes, peak RSS {big[3]:.0f} MiB (target <= {RSS_LIMIT:.0f}): "
            f"{'yes' if met else 'no'}"
        )
        if memory:
            # A 10M build leaves about 6 GB in the page cache: where memory is short,
            # the kernel reclaims a page for each one written, and its time doubles.
            print(f"memory before it: {memory}")


if __name__ == "__main__":
    main()
