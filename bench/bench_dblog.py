"""Benchmark change-log sources with `sitemapd run` and print a table.

    python bench/bench_dblog.py [--changes 30] [--backlog 100000]

Starts a throwaway PostgreSQL (Debian's binaries, as in the tests) and measures the time
from a committed article to its URL in the published shard (LISTEN/NOTIFY wakes the
daemon; polling is set to 600 s so it cannot help), and how fast a backlog of queued
changes drains into published sitemaps, for PostgreSQL and for SQLite.
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from bench_daemon import Daemon

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "dblog"
sys.path.insert(0, str(HERE.parent / "tests"))

from pg import Postgres, start_postgres  # noqa: E402

BASE = "https://example.com/news/"
ARTICLES = (
    "CREATE TABLE articles (id bigserial PRIMARY KEY, slug text UNIQUE, title text, "
    "published_at timestamptz DEFAULT now())"
)


def ddl(kind: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "sitemapd", "changelog-sql", f"--{kind}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def site(name: str, dsn: str, debounce: float, poll: float) -> Path:
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


def published_count(out: Path) -> int:
    total = 0
    for shard in out.glob("sitemap-*.xml"):
        total += shard.read_bytes().count(b"<loc>")
    return total


def in_shard(out: Path, loc: str) -> bool:
    needle = f"<loc>{loc}</loc>".encode()
    return any(needle in shard.read_bytes() for shard in out.glob("sitemap-*.xml"))


def notify_latency(server: Postgres, debounce: float, changes: int) -> list[float]:
    name = f"cms_latency_{str(debounce).replace('.', '_')}"
    dsn = server.create_database(name)
    with server.connect(name) as conn:
        conn.execute(ARTICLES)
        conn.execute(ddl("postgres"))
    config = site(name, dsn, debounce, 600)
    daemon = Daemon(config)
    times = []
    try:
        daemon.wait(lambda: any("daemon: ready" in line for line in daemon.lines), 60)
        time.sleep(1)
        with server.connect(name) as conn:
            for n in range(changes):
                started = time.perf_counter()
                conn.execute("INSERT INTO articles (slug, title) VALUES (%s, 'x')", (f"a{n}",))
                done = daemon.wait(
                    lambda n=n: in_shard(config.parent / "out", f"{BASE}a{n}"), 30, 0.002
                )
                times.append(done - started)
                time.sleep(debounce + 0.2)
    finally:
        daemon.proc.terminate()
        daemon.proc.wait(60)
    return times


def drain(config: Path, backlog: int) -> float:
    daemon = Daemon(config)
    try:
        done = daemon.wait(lambda: published_count(config.parent / "out") >= backlog, 600, 0.05)
    finally:
        daemon.proc.terminate()
        daemon.proc.wait(60)
    return backlog / (done - daemon.started)


def pg_drain(server: Postgres, backlog: int) -> float:
    dsn = server.create_database("cms_drain")
    with server.connect("cms_drain") as conn:
        conn.execute(ARTICLES)
        conn.execute(ddl("postgres"))
        conn.execute(
            "INSERT INTO articles (slug, title) SELECT 'n' || g, 'x' FROM generate_series(1, %s) g",
            (backlog,),
        )
    return drain(site("pg_drain", dsn, 0.5, 2), backlog)


def sqlite_drain(backlog: int) -> float:
    config = site("sqlite_drain", "sqlite:///" + str(WORK / "cms.db"), 0.5, 2)
    db = WORK / "cms.db"
    db.unlink(missing_ok=True)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE articles (id INTEGER PRIMARY KEY, slug TEXT, title TEXT, "
            "published_at TEXT)"
        )
        conn.executescript(ddl("sqlite"))
        conn.executemany(
            "INSERT INTO articles (slug, title) VALUES (?, 'x')",
            ((f"n{n}",) for n in range(backlog)),
        )
    conn.close()
    return drain(config, backlog)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--changes", type=int, default=30)
    parser.add_argument("--backlog", type=int, default=100_000)
    args = parser.parse_args()
    server = start_postgres()
    rows = []
    try:
        for debounce in (0.5, 0.05):
            times = notify_latency(server, debounce, args.changes)
            p95 = pct(times, 0.95)
            rows.append(
                (
                    f"commit -> published (NOTIFY), debounce {debounce} s",
                    f"p50 {pct(times, 0.5):.3f} s, p95 {p95:.3f} s",
                    f"p95 < {debounce + 0.3:.2f} s",
                    "yes" if p95 < debounce + 0.3 else "no",
                )
            )
        for label, rate in (
            ("PostgreSQL", pg_drain(server, args.backlog)),
            ("SQLite", sqlite_drain(args.backlog)),
        ):
            rows.append(
                (
                    f"{args.backlog:,} queued changes drained ({label}), start to published",
                    f"{rate:,.0f} rows/s",
                    "> 20,000 rows/s",
                    "yes" if rate > 20_000 else "no",
                )
            )
    finally:
        server.destroy()
    print(f"\nchange-log sources, {args.changes} commits per run, 2 cores\n")
    print("| measure | result | target | met |\n|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
