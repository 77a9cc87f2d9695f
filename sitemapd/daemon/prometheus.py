"""Prometheus metrics of one daemon, in a registry of its own: what `/metrics` serves.

Loaded only where `[http]` listens: prometheus_client brings http.server, email and
urllib.request, which a daemon without an endpoint need not wait for at start.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from sitemapd.daemon.metrics import Metrics
from sitemapd.engine.engine import BuildResult
from sitemapd.status.report import STATES, url_counts


class _LedgerCollector(Collector):
    """URLs by state, read at scrape time through a read-only connection."""

    def __init__(self, ledger_path: Path) -> None:
        self.ledger_path = ledger_path

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("sitemapd_urls", "URLs in the ledger by state", labels=["state"])
        counts = dict.fromkeys(STATES, 0)
        try:
            conn = sqlite3.connect(f"{self.ledger_path.as_uri()}?mode=ro", uri=True)
            try:
                counts = url_counts(conn)
            finally:
                conn.close()
        except sqlite3.Error:
            pass  # no ledger yet: report zeros
        for state, count in sorted(counts.items()):
            family.add_metric([state], count)
        yield family


class Exported(Metrics):
    """The counts kept for `/metrics`."""

    def __init__(
        self,
        ledger_path: Path,
        healthy: Callable[[], bool],
        depth: Callable[[], int],
        notifications_waiting: Callable[[], int] = lambda: 0,
        role: Callable[[], str | None] = lambda: None,
        removals_held: Callable[[], int] = lambda: 0,
        live: Callable[[], bool] = lambda: True,
    ) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_LedgerCollector(ledger_path))
        self.publishes = Counter(
            "sitemapd_publishes", "Publishes that wrote files", registry=self.registry
        )
        self.bytes_written = Counter(
            "sitemapd_bytes_written", "Bytes of output files written", registry=self.registry
        )
        self.batch_seconds = Histogram(
            "sitemapd_batch_seconds",
            "Time to apply and publish one batch",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=self.registry,
        )
        self.source_errors = Counter(
            "sitemapd_source_errors",
            "Items skipped as invalid or unreadable, and sources that could not be read",
            registry=self.registry,
        )
        self.batch_failures = Counter(
            "sitemapd_batch_failures",
            "Batches that failed and were retried",
            registry=self.registry,
        )
        self.last_publish = Gauge(
            "sitemapd_last_publish_timestamp_seconds",
            "Unix time of the last publish that wrote a file",
            registry=self.registry,
        )
        Gauge("sitemapd_healthy", "1 while healthy", registry=self.registry).set_function(
            lambda: float(healthy())
        )
        Gauge(
            "sitemapd_live", "1 while the daemon's loops turn (/livez)", registry=self.registry
        ).set_function(lambda: float(live()))
        Gauge(
            "sitemapd_queue_depth", "Paths and rescans waiting", registry=self.registry
        ).set_function(lambda: float(depth()))

        Gauge(
            "sitemapd_notifications_waiting",
            "IndexNow and WebSub requests queued or being retried",
            registry=self.registry,
        ).set_function(lambda: float(notifications_waiting()))
        Gauge(
            "sitemapd_publisher",
            "1 while this daemon publishes (holds the lease or needs none), 0 as a standby",
            registry=self.registry,
        ).set_function(lambda: float(role() != "standby"))
        Gauge(
            "sitemapd_removals_held",
            "Sources whose mass removal is held until confirmed or still seen after the grace",
            registry=self.registry,
        ).set_function(lambda: float(removals_held()))
        self.notifications = Counter(
            "sitemapd_notifications",
            "IndexNow and WebSub requests finished, by kind and outcome",
            ["kind", "outcome"],
            registry=self.registry,
        )
        self.source_read = Gauge(
            "sitemapd_source_last_read_timestamp_seconds",
            "Unix time a source was last read without error (lag = now - this)",
            ["source"],
            registry=self.registry,
        )
        self.source_failing = Gauge(
            "sitemapd_source_failing",
            "1 while a source's last read failed",
            ["source"],
            registry=self.registry,
        )
        self.backlog = Gauge(
            "sitemapd_changelog_backlog",
            "Change-log rows waiting to be read",
            ["source"],
            registry=self.registry,
        )
        self.wal_kept = Gauge(
            "sitemapd_changelog_retained_wal_bytes",
            "WAL a logical change log's replication slot keeps on its PostgreSQL server",
            ["source"],
            registry=self.registry,
        )
        self.backlog_since = Gauge(
            "sitemapd_changelog_waiting_since_timestamp_seconds",
            "Unix time since which change-log rows have been waiting (lag = now - this); "
            "0 when none waits",
            ["source"],
            registry=self.registry,
        )

    def batch(self, result: BuildResult) -> None:
        for name in result.scanned:
            self.source_read.labels(name).set_to_current_time()
            self.source_failing.labels(name).set(0)
        for name in result.failed:
            self.source_failing.labels(name).set(1)
        self.batch_seconds.observe(result.seconds)
        self.source_errors.inc(result.changes.rejected + len(result.failed))
        if result.report.written:
            self.last_publish.set_to_current_time()
            self.publishes.inc()
            self.bytes_written.inc(result.report.bytes_written)

    def batch_failed(self) -> None:
        self.batch_failures.inc()

    def changelog_backlog(self, source: str, waiting: int, since: float) -> None:
        self.backlog.labels(source).set(waiting)
        self.backlog_since.labels(source).set(since)

    def retained_wal(self, source: str, kept: int) -> None:
        self.wal_kept.labels(source).set(kept)

    def notification(self, kind: str, outcome: str) -> None:
        self.notifications.labels(kind, outcome).inc()

    def render(self) -> bytes:
        """Return the Prometheus text exposition."""
        return generate_latest(self.registry)
