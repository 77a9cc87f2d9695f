"""Benchmark change-log sources under `sitemapd run` and print a table with targets.

    python bench/bench_changelog.py [--changes 30] [--backlog 100000] [--drain-only]
                                    [--sqlite-only]
                                    [--streams-only]
                                    [--only logical|table|binlog|sqlite ...]

Starts a throwaway PostgreSQL (tests/pg.py: Debian's binaries, run as `postgres`), installs
the DDL of `sitemapd changelog-sql` beside an `articles` table, and measures:
- commit -> published: the time from an INSERT's commit (autocommit, measured when the
  server acknowledged it) to the article's URL in a published shard, one article at a
  time. `poll_interval` is 600 s, so only LISTEN/NOTIFY (PostgreSQL) or the database
  file's writes (SQLite, in WAL mode) can wake the daemon.
- backlog drain: 100,000 articles committed before the daemon starts; the time from
  starting `sitemapd run` to all 100,000 URLs in the shards the index lists (the files
  stat'ed every 5 ms, their URLs counted when one changed), for
  PostgreSQL and for a SQLite change log (`--drain-only` measures these alone), with the
  daemon's CPU time, and the rate past start-up: the rows over the drain's time less the
  time the same daemon takes from start to ready on an empty change log.
- change streams (`mode = "logical"` on PostgreSQL, `mode = "binlog"` on a throwaway
  MariaDB from tests/mariadb.py), following an `articles` table without a change table:
  commit -> published for single-row commits (poll_interval is 600 s: only the stream's
  own wake-up can start a read), and
  the backlog committed while the daemon was stopped after its first snapshot, drained.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from argparse import ArgumentParser, Namespace
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NamedTuple

from bench_daemon import Daemon

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "changelog"
sys.path.insert(0, str(HERE.parent / "tests"))

from mariadb import MariaDB, start_mariadb  # noqa: E402
from pg import Postgres, start_postgres  # noqa: E402

NEWS = "https://example.com/news/"
ARTICLES = {
    "postgres": "CREATE TABLE articles (id bigserial PRIMARY KEY, slug text UNIQUE, "
    "title text, published_at timestamptz DEFAULT now())",
    "sqlite": "CREATE TABLE articles (id INTEGER PRIMARY KEY, slug TEXT UNIQUE, title TEXT, "
    "published_at TEXT)",
}
ROWS_PER_INSERT = 1000
# Rows a second from the start of `sitemapd run` to all of a queued change table published.
DRAIN_GOALS = {"PostgreSQL": 150_000, "SQLite": 50_000}
# What `--only` may name: PostgreSQL logical decoding, a PostgreSQL change table, a
# MariaDB binlog, an SQLite change table.
KINDS = ("logical", "table", "binlog", "sqlite")
_SHARD = re.compile(rb"<loc>[^<]*/([^/<]+)</loc>")


def changelog_sql(kind: str) -> str:
    """Return the change table and trigger template `sitemapd changelog-sql` prints."""
    return subprocess.run(
        [sys.executable, "-m", "sitemapd", "changelog-sql", f"--{kind}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def site(name: str, dsn: str, debounce: float, poll: float) -> Path:
    """Create a fresh site folder with one change-log source; return its config."""
    base = WORK / name
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir(parents=True)
    config = base / "sitemapd.toml"
    config.write_text(
        '[site]\nbase_url = "https://example.com/"\noutput_dir = "out"\nstate_dir = "state"\n'
        f"[daemon]\ndebounce = {debounce}\n"
        f'[[source]]\ntype = "changelog"\ndsn = "{dsn}"\npoll_interval = {poll}\n'
    )
    return config


def shards(out: Path) -> list[Path]:
    """Return the shards the published index names (none before the first publish)."""
    try:
        index = (out / "sitemap.xml").read_bytes()
    except FileNotFoundError:
        return []
    return [out / name.decode() for name in _SHARD.findall(index)]


def published_count(out: Path) -> int:
    return sum(shard.read_bytes().count(b"<loc>") for shard in shards(out))


class Published:
    """Whether `out` publishes `count` URLs yet, told by a stat of its files every poll
    and a count of their URLs only when one changed: polls a few milliseconds apart
    neither delay the figure nor take the daemon's CPU."""

    def __init__(self, out: Path, count: int) -> None:
        self.out = out
        self.count = count
        self.seen: list[tuple[int, int, int]] = []

    def __call__(self) -> bool:
        try:
            now = [(st.st_ino, st.st_size, st.st_mtime_ns) for st in self._stats()]
        except FileNotFoundError:  # replaced between the index's read and the stat
            return False
        if now == self.seen:
            return False
        self.seen = now
        return published_count(self.out) >= self.count

    def _stats(self) -> list[os.stat_result]:
        index = self.out / "sitemap.xml"
        if not index.exists():
            return []
        return [index.stat(), *(shard.stat() for shard in shards(self.out))]


def in_shards(out: Path, loc: str) -> bool:
    needle = f"<loc>{loc}</loc>".encode()
    return any(needle in shard.read_bytes() for shard in shards(out))


def pg_cms(server: Postgres, name: str) -> str:
    """Create database `name` with `articles` and the change log; return its DSN."""
    dsn = server.create_database(name)
    with server.connect(name) as conn:
        conn.execute(ARTICLES["postgres"])
        conn.execute(changelog_sql("postgres"))
    return dsn


def notify_latency(server: Postgres, debounce: float, changes: int) -> list[float]:
    """Insert `changes` articles one at a time; return commit -> in-shard seconds."""
    name = f"cms_latency_{round(debounce * 1000)}"
    config = site(name, pg_cms(server, name), debounce, 600)
    with server.connect(name) as conn:
        return latency(config, changes, partial(conn.execute, _PG_INSERT))


def sqlite_latency(debounce: float, changes: int) -> list[float]:
    """As notify_latency, for an SQLite change log in WAL mode."""
    name = f"sqlite_latency_{round(debounce * 1000)}"
    db = WORK / f"{name}.db"
    config = site(name, f"sqlite:///{db}", debounce, 600)
    conn = sqlite3.connect(db, isolation_level=None)  # autocommit: each INSERT commits
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(ARTICLES["sqlite"])
        conn.executescript(changelog_sql("sqlite"))
        return latency(config, changes, partial(conn.execute, _SQLITE_INSERT))
    finally:
        conn.close()


_PG_INSERT = "INSERT INTO articles (slug, title) VALUES (%s, %s)"
_SQLITE_INSERT = "INSERT INTO articles (slug, title) VALUES (?, ?)"


def latency(config: Path, changes: int, insert: Callable[[tuple[str, str]], object]) -> list[float]:
    """Start `sitemapd run` on `config`, commit `changes` articles with `insert` one at a
    time; return commit -> in-shard seconds."""
    out = config.parent / "out"
    daemon = Daemon(config)
    times = []
    try:
        daemon.wait(lambda: any("sitemapd.daemon: ready" in line for line in daemon.lines), 60)
        time.sleep(0.5)  # the listener connects (or watches) just after ready
        for n in range(changes):
            insert((f"a{n}", f"Story {n}"))
            committed = time.perf_counter()
            done = daemon.wait(partial(in_shards, out, f"{NEWS}a{n}"), 30, 0.002)
            times.append(done - committed)
            time.sleep(0.2)  # quiet between commits: each one is its own batch
    finally:
        daemon.stop()
    return times


def backlog_inserts(backlog: int) -> list[str]:
    """Return multi-row INSERTs of `backlog` articles."""
    return [
        "INSERT INTO articles (slug, title) VALUES "
        + ", ".join(
            f"('n{n}', 'Story {n}')" for n in range(start, min(start + ROWS_PER_INSERT, backlog))
        )
        for start in range(0, backlog, ROWS_PER_INSERT)
    ]


class Drain(NamedTuple):
    """A backlog drained: seconds from start to all published, publishes, the daemon's CPU
    seconds, and its start-up seconds on an empty change log."""

    seconds: float
    publishes: int
    cpu: float
    startup: float


def drain(config: Path, backlog: int, startup: float) -> Drain:
    """Start `sitemapd run` on a queued backlog; return the Drain, with `startup`."""
    out = config.parent / "out"
    daemon = Daemon(config)
    try:
        done = daemon.wait(Published(out, backlog), 1800, 0.005)
        publishes = daemon.publishes()
        cpu = daemon.cpu_seconds()
    finally:
        daemon.stop()
    return Drain(done - daemon.started, publishes, cpu, startup)


def ready_after(config: Path) -> float:
    """Start `sitemapd run` on `config` and stop it when ready; return the seconds that took."""
    daemon = Daemon(config)
    try:
        ready = daemon.wait(
            lambda: any("sitemapd.daemon: ready" in line for line in daemon.lines), 60
        )
    finally:
        daemon.stop()
    return ready - daemon.started


def pg_drain(server: Postgres, backlog: int) -> Drain:
    startup = ready_after(site("pg_empty", pg_cms(server, "cms_empty"), 0.5, 2))
    dsn = pg_cms(server, "cms_drain")
    with server.connect("cms_drain", autocommit=False) as conn:
        for statement in backlog_inserts(backlog):
            conn.execute(statement)
        conn.commit()
    return drain(site("pg_drain", dsn, 0.5, 2), backlog, startup)


def sqlite_drain(backlog: int) -> Drain:
    db = WORK / "cms.db"
    config = site("sqlite_drain", f"sqlite:///{db}", 0.5, 2)
    db.unlink(missing_ok=True)
    conn = sqlite3.connect(db)
    try:
        conn.execute(ARTICLES["sqlite"])
        conn.executescript(changelog_sql("sqlite"))
        startup = ready_after(site("sqlite_empty", f"sqlite:///{db}", 0.5, 2))
        with conn:
            for statement in backlog_inserts(backlog):
                conn.execute(statement)
    finally:
        conn.close()
    return drain(config, backlog, startup)


class Stream:
    """A CMS table on a server that a change-stream mode follows."""

    def __init__(self, kind: str, server: Postgres | MariaDB, name: str) -> None:
        self.kind, self.server, self.name = kind, server, name
        if isinstance(server, MariaDB):
            server.create_database(name)
            self.dsn = server.dsn(name) + "?ssl_disabled=true"  # loopback: no TLS tries
            self.run(
                "CREATE TABLE articles (id BIGINT PRIMARY KEY AUTO_INCREMENT, "
                "slug VARCHAR(190), title TEXT, body TEXT, status VARCHAR(20))"
            )
        else:
            self.dsn = server.create_database(name)
            self.run(
                "CREATE TABLE articles (id bigserial PRIMARY KEY, slug text, title text, "
                "body text, status text)"
            )
            self.run("ALTER TABLE articles REPLICA IDENTITY FULL")

    def run(self, statement: str) -> None:
        """Run `statement` in a transaction of its own, committed when this returns."""
        if isinstance(self.server, MariaDB):
            with self.server.connect(self.name) as conn, conn.cursor() as cur:
                cur.execute(statement)
        else:
            with self.server.connect(self.name) as conn:
                conn.execute(statement)  # type: ignore[arg-type]

    def insert(self, slugs: range | list[str]) -> None:
        self.run(
            "INSERT INTO articles (slug, title, body, status) VALUES "
            + ", ".join(f"('{slug}', 'Story {slug}', 'Body of {slug}', 'live')" for slug in slugs)
        )

    def config(self, label: str, debounce: float) -> Path:
        config = site(label, self.dsn, debounce, 600)
        config.write_text(
            config.read_text()
            + f'mode = "{self.kind}"\ntable = "articles"\nurl_template = "/news/{{slug}}"\n'
            'live = { status = "live" }\nfingerprint_columns = ["title", "body"]\n'
            'title = "title"\nbatch_size = 10000\n'
        )
        return config


def stream_latency(stream: Stream, debounce: float, changes: int) -> list[float]:
    """Insert `changes` articles one at a time; return commit -> in-shard seconds."""
    config = stream.config(f"{stream.kind}_latency_{round(debounce * 1000)}", debounce)
    out = config.parent / "out"
    daemon = Daemon(config)
    times = []
    try:
        daemon.wait(lambda: any("sitemapd.daemon: ready" in line for line in daemon.lines), 60)
        time.sleep(0.5)
        for n in range(changes):
            slug = f"l{round(debounce * 1000)}x{n}"
            stream.insert([slug])
            committed = time.perf_counter()
            done = daemon.wait(partial(in_shards, out, f"{NEWS}{slug}"), 30, 0.002)
            times.append(done - committed)
            time.sleep(0.2)
    finally:
        daemon.stop()
    return times


def stream_drain(stream: Stream, backlog: int) -> Drain:
    """Let the daemon take its snapshot and stop it, twice (the second start is the
    start-up on an empty stream); commit `backlog` rows; return the Drain of a restart."""
    config = stream.config(f"{stream.kind}_drain", 0.5)
    ready_after(config)
    startup = ready_after(config)
    for start in range(0, backlog, ROWS_PER_INSERT):
        stream.insert([f"n{n}" for n in range(start, min(start + ROWS_PER_INSERT, backlog))])
    return drain(config, backlog, startup)


def stream_rows(label: str, stream: Stream, args: Namespace, goal: int) -> list[Row]:
    """Return the table rows of one change stream's latency and drain."""
    rows: list[Row] = []
    for debounce in () if args.drain_only else (0.5, 0.05):
        rows.append(latency_row(label, debounce, stream_latency(stream, debounce, args.changes)))
    rows += drain_rows(
        f"{args.backlog:,} rows committed while stopped, drained ({label})",
        args.backlog,
        stream_drain(stream, args.backlog),
        goal,
    )
    return rows


def drain_rows(label: str, backlog: int, drained: Drain, goal: int) -> list[Row]:
    """Return the table rows of a drain: from start to published, and past start-up."""
    rate = backlog / drained.seconds
    past = backlog / max(drained.seconds - drained.startup, 1e-3)
    return [
        (
            label,
            f"{rate:,.0f} rows/s ({drained.seconds:.2f} s, {drained.publishes} publishes, "
            f"{drained.cpu:.2f} CPU s; {rate / goal:.2f}x the target)",
            f">= {goal:,} rows/s",
            "yes" if rate >= goal else "no",
        ),
        (
            "  the same, past start-up (start to ready on an empty log)",
            f"{past:,.0f} rows/s (start-up {drained.startup:.2f} s)",
            "",
            "",
        ),
    ]


Row = tuple[str, str, str, str]


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main() -> None:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=30)
    parser.add_argument("--backlog", type=int, default=100_000)
    parser.add_argument("--drain-only", action="store_true", help="measure the drains only")
    parser.add_argument(
        "--sqlite-only", action="store_true", help="measure SQLite commit -> published only"
    )
    parser.add_argument("--streams-only", action="store_true", help="measure the streams only")
    parser.add_argument(
        "--only",
        action="append",
        choices=KINDS,
        help="measure this change log alone (may be given again for another)",
    )
    args = parser.parse_args()
    kinds = set(args.only or KINDS)
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    rows: list[Row] = []
    for debounce in (
        () if args.drain_only or args.streams_only or "sqlite" not in kinds else (0.5, 0.1)
    ):
        rows.append(
            latency_row("SQLite file written", debounce, sqlite_latency(debounce, args.changes))
        )
    if args.sqlite_only:
        print_table(args.changes, rows)
        return
    drains = []
    if kinds & {"logical", "table"}:
        server = start_postgres()
        try:
            if "logical" in kinds:
                stream = Stream("logical", server, "cms_logical")
                rows += stream_rows("PostgreSQL logical", stream, args, 50_000)
            if "table" in kinds:
                for debounce in () if args.drain_only or args.streams_only else (0.5, 0.05):
                    times = notify_latency(server, debounce, args.changes)
                    rows.append(latency_row("PostgreSQL NOTIFY", debounce, times))
                if not args.streams_only:
                    drains.append(("PostgreSQL", pg_drain(server, args.backlog)))
        finally:
            server.destroy()
    if "binlog" in kinds:
        maria = start_mariadb()
        try:
            stream = Stream("binlog", maria, "cms_binlog")
            rows += stream_rows("MariaDB binlog", stream, args, 20_000)
        finally:
            maria.destroy()
    if "sqlite" in kinds and not args.streams_only:
        drains.append(("SQLite", sqlite_drain(args.backlog)))
    for label, drained in drains:
        rows += drain_rows(
            f"{args.backlog:,} queued rows drained ({label}), start to published",
            args.backlog,
            drained,
            DRAIN_GOALS[label],
        )

    print_table(args.changes, rows)


def latency_row(how: str, debounce: float, times: list[float]) -> Row:
    """Return the table row of commit -> published `times` woken by `how`."""
    target = debounce + 0.3
    return (
        f"commit -> published ({how}), debounce {debounce} s",
        f"p50 {pct(times, 50):.3f} s, p95 {pct(times, 95):.3f} s",
        f"p95 <= {target:.2f} s",
        "yes" if pct(times, 95) <= target else "no",
    )


def print_table(changes: int, rows: list[Row]) -> None:
    print(f"\nchange-log sources, {changes} commits per run, {os.cpu_count()} cores\n")
    header = ("measure", "result", "target", "met")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(4)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


if __name__ == "__main__":
    main()
