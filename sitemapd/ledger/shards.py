"""Shard membership: which shard a URL lives in, and keeping every shard within limits.

Membership is stable: a URL stays in its shard until it leaves the sitemap or its shard
overflows. New URLs fill the open shard (the highest-numbered one) and a new shard opens
when it is full, so a change touches one shard and the index, never a reshuffle.
"""

# Annotations evaluated, not text: see core/observation.py.
import sqlite3
from collections.abc import Callable, Sequence

from sitemapd.render.sitemap import SHARD_OVERHEAD


class ShardState:
    """A shard as the load fills it: its URLs, bytes and newest lastmod."""

    # A plain class: a dataclass costs every build's start-up its generated methods.
    __slots__ = ("bytes", "lastmod", "url_count")

    def __init__(self, url_count: int, bytes: int, lastmod: str) -> None:
        self.url_count = url_count
        self.bytes = bytes
        self.lastmod = lastmod


class Limits:
    """The most URLs and bytes a shard may hold."""

    __slots__ = ("max_bytes", "max_urls")

    max_urls: int
    max_bytes: int

    def __init__(self, max_urls: int, max_bytes: int) -> None:
        self.max_urls = max_urls
        self.max_bytes = max_bytes

    @property
    def entry_budget(self) -> int:
        """Return the bytes of `<url>` entries a shard may hold besides its envelope."""
        return self.max_bytes - SHARD_OVERHEAD


class Shards:
    """The shards table held in memory during one ledger transaction."""

    def __init__(self, conn: sqlite3.Connection, limits: Limits) -> None:
        self.conn = conn
        self.limits = limits
        self.states = {
            row[0]: ShardState(row[1], row[2], row[3])
            for row in conn.execute("SELECT id, url_count, bytes, lastmod FROM shards")
        }
        self.dirty: set[int] = set()
        self._shrunk: set[int] = set()

    def _fits(self, shard_id: int, size: int) -> bool:
        state = self.states[shard_id]
        return (
            state.url_count < self.limits.max_urls
            and state.bytes + size <= self.limits.entry_budget
        )

    def place(self, size: int, lastmod: str) -> int:
        """Return the shard a new member of `size` entry bytes joins, counting it in."""
        open_id = max(self.states, default=0)
        if not open_id or not self._fits(open_id, size):
            open_id += 1
            self.states[open_id] = ShardState(0, 0, lastmod)
        state = self.states[open_id]
        state.url_count += 1
        state.bytes += size
        if lastmod > state.lastmod:
            state.lastmod = lastmod
        self.dirty.add(open_id)
        return open_id

    def fill(
        self, sizes: Sequence[int], newest: Callable[[int, int], str]
    ) -> list[tuple[int, int]]:
        """Place new members of `sizes` entry bytes, in order, as `place` would one by one;
        return `(shard, how many)` runs. `newest(start, end)` is the newest lastmod of
        members `start` to `end`."""
        taken: list[tuple[int, int]] = []
        start = 0
        while start < len(sizes):
            open_id = max(self.states, default=0)
            state = self.states.get(open_id)
            room = 0 if state is None else max(self.limits.max_urls - state.url_count, 0)
            limit = min(len(sizes), start + room)
            end, fits = limit, 0
            if state is not None and end > start:
                fits = sum(sizes[start:end])
                if state.bytes + fits > self.limits.entry_budget:
                    # Bytes bind before the count: find the last member that fits.
                    end, fits = start, 0
                    while (
                        end < limit and state.bytes + fits + sizes[end] <= self.limits.entry_budget
                    ):
                        fits += sizes[end]
                        end += 1
                    if end == start and state.url_count == 0:
                        end, fits = start + 1, sizes[start]  # a lone member too big stays
            if state is None or end == start:
                self.states[open_id + 1] = ShardState(0, 0, "")
                continue
            state.url_count += end - start
            state.bytes += fits
            state.lastmod = max(state.lastmod, newest(start, end))
            self.dirty.add(open_id)
            taken.append((open_id, end - start))
            start = end
        return taken

    def remove(self, shard_id: int, size: int) -> None:
        """Count a member of `size` entry bytes out of `shard_id`."""
        state = self.states[shard_id]
        state.url_count -= 1
        state.bytes -= size
        self.dirty.add(shard_id)
        self._shrunk.add(shard_id)

    def touch(self, shard_id: int, lastmod: str, was: str) -> None:
        """Note that a member of `shard_id` changed, its lastmod from `was` to `lastmod`."""
        state = self.states[shard_id]
        if lastmod >= state.lastmod:
            state.lastmod = lastmod
        elif was >= state.lastmod:
            # It may have been the newest member: recomputed at flush, over every member
            # (20-35 ms for 50,000), which a member that was not needs no more than one
            # whose lastmod stays or reaches the newest.
            self._shrunk.add(shard_id)
        self.dirty.add(shard_id)

    def resize(self, shard_id: int, delta: int) -> None:
        """Note that a member of `shard_id` changed its entry, by `delta` bytes."""
        self.states[shard_id].bytes += delta
        self.dirty.add(shard_id)

    def enforce_limits(self) -> int:
        """Move the newest members out of any shard over the limits; return how many moved."""
        moved = 0
        for shard_id in sorted(self.states):
            state = self.states[shard_id]
            # A lone member stays: moving it could only make another shard over-full.
            while state.url_count > 1 and (
                state.url_count > self.limits.max_urls or state.bytes > self.limits.entry_budget
            ):
                excess_urls = max(state.url_count - self.limits.max_urls, 1)
                rows = self.conn.execute(
                    "SELECT id, entry_bytes, lastmod FROM urls WHERE shard = ? "
                    "ORDER BY id DESC LIMIT ?",
                    (shard_id, excess_urls),
                ).fetchall()
                if not rows:
                    break
                for url_id, size, lastmod in rows:
                    # Place before removing, so the shard being drained is never the target.
                    target = self.place(size, lastmod)
                    self.remove(shard_id, size)
                    self.conn.execute("UPDATE urls SET shard = ? WHERE id = ?", (target, url_id))
                    moved += 1
                    if state.bytes <= self.limits.entry_budget and (
                        state.url_count <= self.limits.max_urls
                    ):
                        break
        return moved

    def flush(self) -> list[int]:
        """Write changed shard rows back, marked dirty; return the dirty shard ids."""
        for shard_id in sorted(self._shrunk):
            (lastmod,) = self.conn.execute(
                "SELECT max(lastmod) FROM urls WHERE shard = ?", (shard_id,)
            ).fetchone()
            self.states[shard_id].lastmod = lastmod or ""
        self.conn.executemany(
            "INSERT INTO shards (id, url_count, bytes, lastmod, dirty) VALUES (?, ?, ?, ?, 1) "
            "ON CONFLICT (id) DO UPDATE SET url_count = excluded.url_count, "
            "bytes = excluded.bytes, lastmod = excluded.lastmod, dirty = 1",
            [
                (shard_id, state.url_count, state.bytes, state.lastmod)
                for shard_id, state in sorted(self.states.items())
                if shard_id in self.dirty
            ],
        )
        return sorted(self.dirty)
