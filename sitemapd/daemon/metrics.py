"""What the daemon counts as it works: the counts' interface.

`Metrics` takes every count and keeps none: a daemon without an HTTP endpoint has no one
to show them to, and starts without prometheus_client. `prometheus.Exported` keeps them
for `/metrics`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sitemapd.engine.engine import BuildResult


class Metrics:
    """The counts of a daemon without `/metrics`: each is dropped."""

    def batch(self, result: BuildResult) -> None:
        """Record one successful apply-and-publish."""

    def batch_failed(self) -> None:
        """Record a batch that failed and will be retried."""

    def changelog_backlog(self, source: str, waiting: int, since: float) -> None:
        """Record the rows of change log `source` waiting, and since when (Unix time, 0
        when none waits)."""

    def retained_wal(self, source: str, kept: int) -> None:
        """Record the bytes of WAL the replication slot of `source` keeps."""

    def notification(self, kind: str, outcome: str) -> None:
        """Record an IndexNow or WebSub request finished with `outcome`."""
