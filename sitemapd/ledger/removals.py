"""The mass-removal guard: a scan that would take most of a source's URLs away is held.

A half-finished rsync or an unmounted share looks, to a scan, like a site deleting most of
its pages. Such a removal is held (nothing removed, nothing announced) until an operator
confirms it or the same removal is still there after a grace period. The decision is
taken inside the ledger's apply transaction; holds are kept as ledger cursors.
"""

# Annotations evaluated, not text: see core/observation.py.
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from sitemapd.core import w3c
from sitemapd.errors import SitemapdError

# Removals of at most this many live URLs are never held: small sites must not get stuck.
REMOVAL_FLOOR = 20
_PREFIX = "removal_hold:"
_WINDOW_PREFIX = "removal_window:"
# Left in the state directory by `build --confirm-removal` for a running daemon, which
# confirms the removals it holds and deletes the file.
CONFIRM_FILE = "confirm-removal"


def request_confirmation(state_dir: Path) -> None:
    """Ask the daemon of `state_dir` to publish the removals it holds; raises
    SitemapdError when the file cannot be left there."""
    try:
        (state_dir / CONFIRM_FILE).touch()
    except OSError as exc:
        raise SitemapdError(f"cannot leave the confirmation in {state_dir} ({exc})") from exc


def confirmation_requested(state_dir: Path) -> bool:
    """True while a confirmation waits for the daemon of `state_dir`."""
    return (state_dir / CONFIRM_FILE).exists()


def confirmation_done(state_dir: Path) -> None:
    """Withdraw the confirmation request: no removal is held any more."""
    (state_dir / CONFIRM_FILE).unlink(missing_ok=True)


class RemovalGuard:
    """How an apply treats removals: which sources it guards and how."""

    __slots__ = ("confirm", "grace", "max_share", "sources", "window")

    # Guarded source names, each with the cursor names a hold keeps back (so the source
    # is read again in full rather than skipped as unchanged).
    sources: Mapping[str, frozenset[str]]
    max_share: float
    grace: float
    # The operator confirmed the removals of this run (`build --confirm-removal`).
    confirm: bool
    # Seconds over which a source's removals add up (0: each scan alone).
    window: float

    def __init__(
        self,
        sources: Mapping[str, frozenset[str]] = MappingProxyType({}),
        max_share: float = 0.5,
        grace: float = 900.0,
        confirm: bool = False,
        window: float = 600.0,
    ) -> None:
        self.sources = sources
        self.max_share = max_share
        self.grace = grace
        self.confirm = confirm
        self.window = window

    def cursors_of(self, sources: Iterable[str]) -> set[str]:
        """Return the cursor names of `sources`."""
        return {name for source in sources for name in self.sources.get(source, ())}


class Hold(NamedTuple):
    """A removal held back: `removing` of the source's `live` URLs, held since `since`."""

    source: str
    removing: int
    live: int
    since: str
    digest: str
    # URLs of the source removed within the window before this removal.
    recent: int = 0

    def reason(self) -> str:
        """Return the hold as one line for logs, health and status."""
        share = 100 * (self.removing + self.recent) / max(self.live + self.recent, 1)
        before = f"{self.recent} removed within removal_window, then " if self.recent else ""
        return (
            f"removal held: {before}a scan would remove {self.removing} of {self.live} live "
            f"URLs ({share:.0f}%) since {self.since}; confirm with 'sitemapd build "
            "--confirm-removal' or it is published when still seen after removal_grace"
        )


def holds(conn: sqlite3.Connection) -> list[Hold]:
    """Return the removals held in the ledger open on `conn`, by source name."""
    rows = conn.execute(
        "SELECT value FROM cursors WHERE name GLOB ? ORDER BY name", (_PREFIX + "*",)
    ).fetchall()
    if not rows:
        return []
    # Loaded for a held removal alone: a build that holds none starts without it.
    import json

    return [Hold(**json.loads(value)) for (value,) in rows]


def decide(
    conn: sqlite3.Connection,
    guard: RemovalGuard,
    source: str,
    where: str,
    params: tuple[object, ...],
    now: str,
) -> Hold | None:
    """Return the Hold that keeps the removal of live URLs matching `where` (SQL over
    `urls`) from `source`, or None when it may go ahead; records or clears the hold."""
    name = _PREFIX + source
    removing = [
        row[0]
        for row in conn.execute(
            f"SELECT id FROM urls WHERE status = 'live' AND {where} ORDER BY id", params
        )
    ]
    (live,) = conn.execute(
        "SELECT count(*) FROM urls WHERE status = 'live' "
        "AND source_id = (SELECT id FROM sources WHERE name = ?)",
        (source,),
    ).fetchone()
    # Imported here: `status`, which reads the holds, starts without OpenSSL's hashes.
    import hashlib
    import json

    known = {h.source: h for h in holds(conn)}.get(source)
    digest = hashlib.sha256(",".join(map(str, removing)).encode()).hexdigest()[:32]
    window = _Window(conn, source, w3c.to_epoch(now), guard.window)
    # Counted against the source as it was when the window began.
    recent = window.removed()
    total = len(removing) + recent
    massive = bool(removing) and total > max(REMOVAL_FLOOR, guard.max_share * (live + recent))
    if not massive:
        conn.execute("DELETE FROM cursors WHERE name = ?", (name,))
        window.add(len(removing))
        return None
    if guard.confirm:
        conn.execute("DELETE FROM cursors WHERE name = ?", (name,))
        window.clear()  # the operator judged it: the next removals start a new window
        return None
    if known is not None and known.digest == digest:
        if w3c.to_epoch(now) - w3c.to_epoch(known.since) >= guard.grace:
            conn.execute("DELETE FROM cursors WHERE name = ?", (name,))
            window.clear()
            return None
        return known
    hold = Hold(source, len(removing), int(live), now, digest, recent)
    conn.execute(
        "INSERT OR REPLACE INTO cursors (name, value) VALUES (?, ?)",
        (name, json.dumps(hold._asdict(), sort_keys=True)),
    )
    return hold


class _Window:
    """The removals of one source published within the last `seconds`, kept as a ledger
    cursor of `[epoch, count]` pairs, oldest first."""

    def __init__(self, conn: sqlite3.Connection, source: str, now: float, seconds: float):
        self.conn = conn
        self.name = _WINDOW_PREFIX + source
        self.now = now
        self.seconds = seconds
        row = conn.execute("SELECT value FROM cursors WHERE name = ?", (self.name,)).fetchone()
        import json  # loaded by `decide`, its one user, as it removes

        pairs: list[list[float]] = json.loads(row[0]) if row else []
        self.pairs = [(at, int(n)) for at, n in pairs if now - at < seconds]

    def removed(self) -> int:
        """Return how many URLs were removed within the window."""
        return sum(n for _, n in self.pairs)

    def add(self, count: int) -> None:
        """Note `count` removals now (none: only forget those that left the window)."""
        if count and self.seconds > 0:
            self.pairs.append((self.now, count))
        self._save()

    def clear(self) -> None:
        self.pairs = []
        self._save()

    def _save(self) -> None:
        if self.pairs:
            import json

            self.conn.execute(
                "INSERT OR REPLACE INTO cursors (name, value) VALUES (?, ?)",
                (self.name, json.dumps(self.pairs)),
            )
        else:
            self.conn.execute("DELETE FROM cursors WHERE name = ?", (self.name,))
