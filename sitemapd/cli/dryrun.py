"""`build --dry-run`: what a build would change, found by building on a copy of the ledger.

The copy is a consistent snapshot taken with SQLite's backup API (a daemon may be writing
the ledger meanwhile: no lock is taken); the build runs on it with a publisher that
writes no file, and the copy is deleted. Nothing is sent.
"""

from __future__ import annotations

import sqlite3
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sitemapd.config import Config
from sitemapd.engine.engine import Engine
from sitemapd.errors import LedgerError
from sitemapd.ledger.journal import ENTRIES_AFTER
from sitemapd.ledger.model import NEW, UPDATED
from sitemapd.ledger.schema import EXCLUDED, GONE
from sitemapd.notify.outbox import INDEXNOW, pending


@dataclass
class DryRun:
    """What a build would do: URLs by change, files, notifications, sources in trouble."""

    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    # URLs that would leave (or never enter) the sitemaps for a reason: {loc, reason}.
    excluded: list[dict[str, str]] = field(default_factory=list)
    invalid: int = 0
    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    indexnow: list[str] = field(default_factory=list)
    # {hub, topic} of each WebSub ping.
    websub: list[dict[str, str]] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    held: dict[str, str] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """Return the report as plain data."""
        return asdict(self)

    def render_text(self) -> str:
        """Return the report as lines for a terminal."""
        lines = ["dry run: nothing was written, recorded or sent"]
        for title, items in (
            ("new", self.new),
            ("updated", self.updated),
            ("gone", self.gone),
            ("newly excluded", [f"{e['loc']}  ({e['reason']})" for e in self.excluded]),
            ("files written", self.written),
            ("files removed", self.removed),
            ("IndexNow", self.indexnow),
            ("WebSub", [f"{w['topic']} via {w['hub']}" for w in self.websub]),
        ):
            lines.append(f"{title}: {len(items)}")
            lines += [f"  {item}" for item in items]
        if self.invalid:
            lines.append(f"invalid: {self.invalid} (see the log)")
        lines += [f"held: {name}: {reason}" for name, reason in self.held.items()]
        lines += [f"failed: {name}: {reason}" for name, reason in self.failed.items()]
        return "\n".join(lines)


def snapshot(ledger: Path, copy: Path) -> None:
    """Copy the ledger at `ledger` (if any) to `copy` as of one committed transaction.

    Raises LedgerError when it cannot be read.
    """
    target = sqlite3.connect(copy)
    try:
        if ledger.exists():
            # Read-write but query-only: a read-only connection to a WAL database leaves
            # its -wal and -shm files behind, and the state folder must stay as it was.
            source = sqlite3.connect(f"{ledger.as_uri()}?mode=rw", uri=True)
            try:
                source.execute("PRAGMA query_only = 1")
                source.backup(target)
            finally:
                source.close()
            # What each URL was before, to tell which ones the build would exclude.
            target.execute("CREATE TABLE dry_run_before AS SELECT id, status FROM urls")
        else:
            target.execute("CREATE TABLE dry_run_before (id INTEGER PRIMARY KEY, status TEXT)")
        target.commit()
    except sqlite3.Error as exc:
        raise LedgerError(f"{ledger}: cannot copy the ledger for a dry run ({exc})") from exc
    finally:
        target.close()


def dry_run(config: Config, confirm_removal: bool = False) -> DryRun:
    """Return what `build` (with `confirm_removal`) would do now; touches nothing.

    Raises SitemapdError as `build` would.
    """
    with tempfile.TemporaryDirectory(prefix="sitemapd-dry-run-") as folder:
        copy = Path(folder) / "ledger.sqlite3"
        snapshot(config.ledger_path, copy)
        engine = Engine(config, ledger_path=copy, dry_run=True)
        try:
            first_seq = engine.ledger.last_seq()
            result = engine.build(confirm_removal=confirm_removal)
            report = DryRun(
                invalid=result.changes.rejected,
                written=result.report.written,
                removed=result.report.removed,
                failed=result.failed,
                held=result.held,
            )
            _changed_urls(engine.ledger.conn, first_seq, report)
            _notifications(engine, report)
        finally:
            engine.close()
    return report


def _changed_urls(conn: sqlite3.Connection, first_seq: int, report: DryRun) -> None:
    """Fill the URLs of `report` from the journal the build wrote after `first_seq`."""
    lists = {NEW: report.new, UPDATED: report.updated, GONE: report.gone}
    # A URL's last change counts (SQLite takes bare columns from the max() row).
    for loc, kind, _ in conn.execute(
        # CROSS JOIN: from the entries out, not from every URL.
        f"SELECT u.loc, j.kind, max(j.seq) FROM ({ENTRIES_AFTER}) j "
        "CROSS JOIN urls u ON u.id = j.url_id GROUP BY u.id ORDER BY u.loc",
        (first_seq,),
    ):
        lists[kind].append(loc)
    # Excluded now and not before, whether it was live (journalled gone) or new.
    report.excluded = [
        {"loc": loc, "reason": reason}
        for loc, reason in conn.execute(
            "SELECT u.loc, u.reason FROM urls u LEFT JOIN dry_run_before b ON b.id = u.id "
            "WHERE u.status = ? AND b.status IS NOT ? ORDER BY u.loc",
            (EXCLUDED, EXCLUDED),
        )
    ]
    excluded = {item["loc"] for item in report.excluded}
    report.gone = [loc for loc in report.gone if loc not in excluded]


def _notifications(engine: Engine, report: DryRun) -> None:
    """Fill the notifications of `report`: everything owed after the build, as if each
    delivery succeeded (recorded in the copy only)."""
    while deliveries := pending(engine.ledger, engine.config):
        for delivery in deliveries:
            if delivery.kind == INDEXNOW:
                report.indexnow += delivery.urls
            else:
                report.websub.append({"hub": delivery.target, "topic": delivery.urls[0]})
            engine.ledger.set_cursor(delivery.cursor, delivery.value)
