"""What the ledger hands out and takes in besides observations: change sets, robots
rules, recorded files and feed pages."""

# Annotations evaluated, not text: see core/observation.py.
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from sitemapd.ledger.removals import Hold

NEW, UPDATED = "new", "updated"
ROBOTS_REASON = "robots.txt"
# The journal rows the first (bulk) build wrote: the site as it was, not updates.
BASELINE_CURSOR = "journal_baseline"
# When the first (bulk) load of a list ran: the `first_seen` of the rows it wrote, which
# hold FIRST_LOAD_SEEN instead (25 bytes less a row; schema.py's version 10).
FIRST_LOAD_CURSOR = "first_load"
FIRST_LOAD_SEEN = ""
# Journal position of the last successful publish: nothing newer is announced.
PUBLISHED_CURSOR = "published_seq"
# Where the files `published` records were published (a folder, an s3:// URL).
PUBLISHED_TARGET_CURSOR = "published_target"
# The last publish, when it failed: "<time> <why>"; empty once one succeeds.
PUBLISH_FAILED_CURSOR = "publish_failed"


class RobotsRules:
    """The site's robots.txt rules as the ledger applies them."""

    __slots__ = ("allows", "fingerprint")

    fingerprint: str
    allows: Callable[[str], bool]

    def __init__(self, fingerprint: str, allows: Callable[[str], bool]) -> None:
        self.fingerprint = fingerprint
        self.allows = allows


# No robots.txt configured: every URL allowed. A fingerprint of its own, so turning the
# rules off lifts their exclusions and turning them on applies them to every URL.
ALLOW_ALL = RobotsRules("none", lambda url: True)


class ChangeSet:
    """What one `apply()` changed."""

    # A plain class: a dataclass costs every build's start-up its generated methods.
    __slots__ = (
        "dirty_shards",
        "empty_scans",
        "gone",
        "held",
        "moved",
        "new",
        "rejected",
        "updated",
    )

    def __init__(
        self,
        new: int = 0,
        updated: int = 0,
        gone: int = 0,
        rejected: int = 0,
        moved: int = 0,
        dirty_shards: list[int] | None = None,
        empty_scans: list[str] | None = None,
        held: "list[Hold] | None" = None,
    ) -> None:
        self.new = new
        self.updated = updated
        self.gone = gone
        self.rejected = rejected
        self.moved = moved
        self.dirty_shards = dirty_shards or []
        # Complete scans that found nothing while their source had URLs: kept, not removed.
        self.empty_scans = empty_scans or []
        # Removals held by the mass-removal guard: those URLs stay published.
        self.held = held or []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChangeSet) and all(
            getattr(self, name) == getattr(other, name) for name in self.__slots__
        )

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"ChangeSet({fields})"

    @property
    def changed(self) -> bool:
        """Return True when any published URL or shard changed."""
        return bool(self.new or self.updated or self.gone or self.dirty_shards)

    def merged(self, later: "ChangeSet") -> "ChangeSet":
        """Return the changes of this run and a `later` one together."""
        return ChangeSet(
            self.new + later.new,
            self.updated + later.updated,
            self.gone + later.gone,
            self.rejected + later.rejected,
            self.moved + later.moved,
            sorted(set(self.dirty_shards) | set(later.dirty_shards)),
            self.empty_scans + later.empty_scans,
            self.held + later.held,
        )


class FeedPageRange(NamedTuple):
    """A feed page beyond the first: the latest changes with a journal seq in
    `(low_seq, high_seq]`, opened at `opened_at`, last given entries at `filled_at`."""

    number: int
    low_seq: int
    high_seq: int
    opened_at: str
    filled_at: str


class KnownFile:
    """What the ledger recorded of a file it read."""

    __slots__ = ("bytes_hash", "content_hash", "file_key", "fp_settings")

    file_key: str
    bytes_hash: str | None
    content_hash: str | None
    fp_settings: str | None

    def __init__(
        self,
        file_key: str,
        bytes_hash: str | None,
        content_hash: str | None,
        fp_settings: str | None,
    ) -> None:
        self.file_key = file_key
        self.bytes_hash = bytes_hash
        self.content_hash = content_hash
        self.fp_settings = fp_settings
