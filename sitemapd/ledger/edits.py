"""Which members of which shards changed since those shards were last published, as the
writer connection saw it: what lets a publish splice a few changed `<url>` entries into a
shard's published bytes instead of rendering its every member again.

Temporary triggers on `urls` (of this connection alone; nothing is stored in the ledger
file) note every update and delete, whichever code runs it. An update that leaves a
member in place (same shard, status, loc and extra elements) and changes what its entry
or manifest line says notes the member with the values it had before, once: those of the
last publish. Any other update of a member (it joins, leaves, changes its loc or its
extra elements) notes the shard as a whole (`url_id` 0), a delete every shard, and a
member inserted since has a larger id than any row then: those are rendered in full. A
shard counts only while it was clean (published as the ledger held it) from when the
notes began. A trigger costs SQLite as much as the update it follows: a run that updates
many rows stops the notes (`Apply`), and every shard is rendered in full until the next
run begins them again.
"""

# Annotations evaluated, not text: see core/observation.py.
import sqlite3

from sitemapd.ledger.schema import source_time

# What a member's manifest line holds besides its loc and lastmod (publish/manifest.py).
_FP = f"coalesce({{row}}.content_hash, {source_time('{row}')}, '')"
_RAW = "coalesce({row}.bytes_hash, '')"
_MOVED = (
    "OLD.shard IS NOT NEW.shard OR OLD.status IS NOT NEW.status OR OLD.loc IS NOT NEW.loc "
    "OR OLD.extra IS NOT NEW.extra"
)
# Noted for a deleted row: its id may be given again, to a row the notes would not see.
_ANY = -1
_TRIGGERS = (
    "CREATE TEMP TABLE IF NOT EXISTS shard_edits (shard INTEGER NOT NULL, "
    "url_id INTEGER NOT NULL, lastmod TEXT, fp TEXT, raw TEXT, PRIMARY KEY (shard, url_id)) "
    "WITHOUT ROWID",
    "CREATE TEMP TRIGGER IF NOT EXISTS shard_edits_delete AFTER DELETE ON main.urls BEGIN "
    f"INSERT OR IGNORE INTO shard_edits (shard, url_id) VALUES ({_ANY}, 0); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS shard_edits_move AFTER UPDATE ON main.urls "
    f"WHEN {_MOVED} BEGIN "
    "INSERT OR IGNORE INTO shard_edits (shard, url_id) "
    "SELECT OLD.shard, 0 WHERE OLD.shard IS NOT NULL; "
    "INSERT OR IGNORE INTO shard_edits (shard, url_id) "
    "SELECT NEW.shard, 0 WHERE NEW.shard IS NOT NULL; END",
    "CREATE TEMP TRIGGER IF NOT EXISTS shard_edits_edit AFTER UPDATE ON main.urls "
    f"WHEN NEW.shard IS NOT NULL AND NOT ({_MOVED}) AND (OLD.lastmod IS NOT NEW.lastmod "
    f"OR {_FP.format(row='OLD')} IS NOT {_FP.format(row='NEW')} "
    f"OR {_RAW.format(row='OLD')} IS NOT {_RAW.format(row='NEW')}) BEGIN "
    "INSERT OR IGNORE INTO shard_edits (shard, url_id, lastmod, fp, raw) VALUES "
    f"(NEW.shard, NEW.id, OLD.lastmod, {_FP.format(row='OLD')}, {_RAW.format(row='OLD')}); END",
)
_NAMES = ("shard_edits_delete", "shard_edits_move", "shard_edits_edit")


class Edit:
    """A member of a shard changed in place since the shard's last publish: its entry and
    manifest line then (`old_*`) and now."""

    __slots__ = ("fp", "lastmod", "loc", "old_fp", "old_lastmod", "old_raw", "raw", "url_id")

    url_id: int
    loc: str
    old_lastmod: str
    old_fp: str
    old_raw: str
    lastmod: str
    fp: str
    raw: str

    def __init__(
        self,
        url_id: int,
        loc: str,
        old_lastmod: str,
        old_fp: str,
        old_raw: str,
        lastmod: str,
        fp: str,
        raw: str,
    ) -> None:
        self.url_id = url_id
        self.loc = loc
        self.old_lastmod = old_lastmod
        self.old_fp = old_fp
        self.old_raw = old_raw
        self.lastmod = lastmod
        self.fp = fp
        self.raw = raw


class ShardEdits:
    """The notes of one writer connection: which shards they cover, and what they say."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        # Shards clean when the notes began or published since: None while not noting.
        self.covered: set[int] | None = None
        # The largest row id when the notes began, and when each shard was published since.
        self.last_id = 0
        self.published_at: dict[int, int] = {}

    def start(self) -> None:
        """Begin noting (in the caller's transaction), if not noting already. Shards
        clean now are covered: one written to while nothing noted it is dirty."""
        if self.covered is not None and self._noting():
            return
        for statement in _TRIGGERS:
            self.conn.execute(statement)
        self.conn.execute("DELETE FROM temp.shard_edits")
        self.covered = {
            shard for (shard,) in self.conn.execute("SELECT id FROM shards WHERE dirty = 0")
        }
        # Rows inserted from now on have larger ids (SQLite gives the largest id + 1, and
        # a delete is noted): inserts need no trigger, which would slow every load.
        self.last_id = self._last_id()
        self.published_at = {}

    def stop(self) -> None:
        """Stop noting (in the caller's transaction): every shard is rendered in full until
        `start`. For runs that write many rows, which the triggers would slow down."""
        if self.covered is None:
            return
        for name in _NAMES:
            self.conn.execute(f"DROP TRIGGER IF EXISTS temp.{name}")
        self.conn.execute("DROP TABLE IF EXISTS temp.shard_edits")
        self.covered = None

    def of(self, shard_id: int, most: int) -> list[Edit] | None:
        """Return the members of clean-published shard `shard_id` changed in place since,
        in shard order; None when it must be rendered in full (not covered, a member
        joined, left or moved, nothing noted, or more than `most` changed)."""
        if self.covered is None or not self._noting():
            # A rolled-back transaction took the triggers it made with it.
            self.covered = None
            return None
        if (
            shard_id not in self.covered
            or self.conn.execute(
                "SELECT 1 FROM temp.shard_edits WHERE shard = ? UNION ALL "
                "SELECT 1 FROM urls WHERE shard = ? AND id > ? LIMIT 1",
                (_ANY, shard_id, self.published_at.get(shard_id, self.last_id)),
            ).fetchone()
        ):
            return None
        rows = self.conn.execute(
            "SELECT e.url_id, u.loc, e.lastmod, e.fp, e.raw, u.lastmod, "
            f"{_FP.format(row='u')}, {_RAW.format(row='u')} FROM temp.shard_edits e "
            "LEFT JOIN urls u ON u.id = e.url_id WHERE e.shard = ? ORDER BY e.url_id LIMIT ?",
            (shard_id, most + 1),
        ).fetchall()
        if not rows or len(rows) > most or rows[0][0] == 0 or rows[0][1] is None:
            return None
        return [Edit(*row) for row in rows]

    def _last_id(self) -> int:
        (last_id,) = self.conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()
        return int(last_id)

    def _noting(self) -> bool:
        """True when the triggers are in place."""
        (count,) = self.conn.execute(
            "SELECT count(*) FROM sqlite_temp_master WHERE type = 'trigger' AND name IN "
            f"({', '.join('?' * len(_NAMES))})",
            _NAMES,
        ).fetchone()
        return bool(count == len(_NAMES))

    def published(self, shards: list[int]) -> None:
        """Note that `shards` were just published as the ledger holds them."""
        if self.covered is None:
            return
        self.covered.update(shards)
        last_id = self._last_id()
        self.published_at.update((shard, last_id) for shard in shards)
        self.conn.executemany(
            "DELETE FROM temp.shard_edits WHERE shard = ?", [(shard,) for shard in shards]
        )
