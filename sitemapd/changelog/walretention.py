"""How much WAL a logical replication slot keeps on its PostgreSQL server, and whether
that is a problem: a slot nobody reads keeps every WAL segment written since, until the
server's disk fills (unless max_slot_wal_keep_size bounds it)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from sitemapd.errors import SourceError

# The WAL from the slot's restart position to the server's current one, and PostgreSQL's
# own verdict on it: "reserved" (within max_wal_size), "extended" (beyond it, still
# kept), "unreserved" (beyond max_slot_wal_keep_size: lost at the next checkpoint),
# "lost".
QUERY = (
    "SELECT coalesce(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), 0)::bigint, "
    "coalesce(wal_status, 'reserved') FROM pg_replication_slots WHERE slot_name = %s"
)


@dataclass(frozen=True, slots=True)
class Retention:
    """The WAL one slot keeps: bytes, and the server's wal_status of the slot."""

    slot: str
    bytes: int
    status: str

    def problem(self) -> str | None:
        """Return why the retained WAL needs the operator, None while it is within
        max_wal_size."""
        if self.status == "reserved":
            return None
        kept = f"replication slot {self.slot} keeps {self.bytes / 2**20:.0f} MiB of WAL"
        if self.status == "lost":
            return f"{kept}: the slot was lost (max_slot_wal_keep_size); reading the table again"
        return (
            f"{kept}, more than max_wal_size (wal_status {self.status}): sitemapd is behind "
            "or was down; bound it on the server with max_slot_wal_keep_size"
        )

    def data(self) -> dict[str, Any]:
        """Return the measure as plain data (for `status --json`)."""
        return {"bytes": self.bytes, "wal_status": self.status, "problem": self.problem()}


def measure(row: tuple[Any, ...] | None, slot: str) -> Retention | None:
    """Return the retention of `slot` from the row of QUERY, None when there is no slot."""
    return None if row is None else Retention(slot, int(row[0]), str(row[1]))


def retention(reader: object) -> Retention | None:
    """Return the WAL the reader's replication slot keeps; None for a reader without a
    slot or a server that cannot be asked now (the reads report that)."""
    method = getattr(reader, "retention", None)
    if method is None:
        return None
    try:
        found: Retention | None = method()
    except SourceError:
        return None
    return found


class SlotWatch:
    """The WAL each change log's slot keeps, measured at most every MEASURE_EVERY s."""

    MEASURE_EVERY = 10.0

    def __init__(self) -> None:
        self._kept: dict[str, Retention] = {}
        self._at: dict[str, float] = {}

    def note(self, name: str, reader: object) -> Retention | None:
        """Measure the slot of source `name` (read by `reader`) when due; return the
        measure, None when not due or the reader has no slot."""
        now = time.monotonic()
        if now - self._at.get(name, -math.inf) < self.MEASURE_EVERY:
            return None
        self._at[name] = now
        found = retention(reader)
        if found is not None:
            self._kept[name] = found
        return found

    def problems(self) -> list[str]:
        """Return the last measures that need the operator, each named by its source."""
        return [f"{name}: {why}" for name, kept in self._kept.items() if (why := kept.problem())]
