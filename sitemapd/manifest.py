"""The publish manifest: each published URL's fingerprint, lastmod and file hash, so that
a ledger that lacks them (a publisher taking over, a lost state folder) keeps every
lastmod that was published.

Daemons watching copies of the same content see the same fingerprints but may have
first seen a URL at different times; the lastmod of a URL whose fingerprint matches the
manifest is the published one, and a takeover moves none of them. A file read byte for
byte as when it was published matches too, whatever the fingerprint settings now.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain

from .ledger import LIVE, Ledger
from .manifestfile import Row

# The cursor naming the manifest format every published shard has a manifest in.
WRITTEN = "manifests_written"
# The cursor that keeps, for `status`, how many lastmods the last adoption moved, and when.
ADOPTED = "adopted_lastmods"

# What identifies a URL's content across machines: its fingerprint, or for a source that
# gives no content, its own timestamp.
_FINGERPRINT = "coalesce(content_hash, source_time, '')"
# A URL of the ledger (`{u}`) whose content is as the manifest row `a` says it was
# published: the same fingerprint, or the same file bytes (the fingerprint settings may
# have changed since: they change no lastmod).
_SAME = (
    "(a.fp = coalesce({u}.content_hash, {u}.source_time, '') "
    "OR (a.raw != '' AND a.raw = {u}.bytes_hash))"
)


def shard_manifest(ledger: Ledger, shard_id: int) -> list[Row]:
    """Return the manifest rows of the live URLs in shard `shard_id`."""
    return ledger.conn.execute(
        f"SELECT loc, {_FINGERPRINT}, lastmod, coalesce(bytes_hash, '') FROM urls "
        "WHERE shard = ? AND status = ? ORDER BY id",
        (shard_id, LIVE),
    ).fetchall()


def adopt(ledger: Ledger, rows: Iterable[Row]) -> int:
    """Give each live URL whose fingerprint (or file hash) matches a manifest row that
    row's lastmod, re-dating and marking dirty the shards touched; return how many moved."""
    conn = ledger.conn
    rows = iter(rows)
    first = next(rows, None)
    if first is None:
        return 0
    rows = chain([first], rows)
    with ledger.transaction():
        # No key: appended as read, then scanned once, each row finding its URL through
        # the ledger's unique loc index (a URL is in one shard, so in one manifest).
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS adopted (loc TEXT, fp, lastmod, raw)")
        conn.execute("DELETE FROM temp.adopted")
        conn.executemany("INSERT INTO temp.adopted VALUES (?, ?, ?, ?)", rows)
        shards = [
            shard
            for (shard,) in conn.execute(
                f"SELECT DISTINCT u.shard FROM urls u JOIN temp.adopted a ON a.loc = u.loc "
                f"WHERE u.status = ? AND {_SAME.format(u='u')} AND u.lastmod != a.lastmod",
                (LIVE,),
            )
        ]
        moved = conn.execute(
            f"UPDATE urls SET lastmod = a.lastmod FROM temp.adopted a WHERE a.loc = urls.loc "
            f"AND urls.status = ? AND {_SAME.format(u='urls')} AND a.lastmod != urls.lastmod",
            (LIVE,),
        ).rowcount
        conn.executemany(
            "UPDATE shards SET dirty = 1, lastmod = coalesce((SELECT max(lastmod) FROM urls "
            "WHERE shard = shards.id AND status = ?), lastmod) WHERE id = ?",
            [(LIVE, shard) for shard in shards if shard is not None],
        )
        conn.execute("DELETE FROM temp.adopted")
    return int(moved)
