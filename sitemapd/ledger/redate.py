"""A list's lines that changed their datetime alone, applied in SQL at once.

A CMS exporting its URLs again with fresh datetimes changes nothing of most rows but
their source time, lastmod and change count: what `Decisions._observe` would decide of
each is the same function of the row's times, the line's and the run's. Decided row by
row it took 28 s for a million lines; here one statement decides them all, and the rows
the list says anything else of (new URLs, a row another source or a page wrote, one
that left the sitemap) go the way of every observation.
"""

# Annotations evaluated, not text: see core/observation.py.
from collections.abc import Callable

from sitemapd.core.listlines import HELD
from sitemapd.ledger.model import UPDATED
from sitemapd.ledger.run import Run
from sitemapd.ledger.schema import EXCLUDED, LIVE, source_time

# A row `u` of the sitemap or kept out of it whose fields are those a list line gives: no
# page's title, file, facts or reason.
LINE_FIELDS = (
    f"u.status IN ('{LIVE}', '{EXCLUDED}') AND u.page_reason IS NULL AND u.title IS NULL "
    "AND u.file_key IS NULL AND u.language IS NULL AND u.news_title IS NULL "
    "AND u.article IS NULL AND u.alternates IS NULL AND u.extra IS NULL"
)
# A row list lines alone wrote (the first load, or `_observe` of lines since): no page's
# hashes either, nothing but a URL and a datetime to compare with the line's.
_LISTED_ALONE = (
    f"u.source_id = :source AND {LINE_FIELDS} AND u.content_hash IS NULL AND u.bytes_hash IS NULL"
)
# As `_observe` has it: a datetime later than the row's (or a first one) is a change, and
# the lastmod moves to it, but never past the run's time nor back.
_WAS = source_time("u")
_CHANGED = f"({_WAS} IS NULL OR w.stamp > {_WAS})"
# The lines staged (`{join}`): a re-read by chunks goes from its few to `urls` by key (the
# planner, without statistics, scanned `urls` for a line's change: 0.4 s for a million);
# a whole list's are as many as the rows, and a scan of `urls` reads them in 1.25 s
# where going from the lines took 2 s.
_DECIDE = (
    "INSERT INTO temp.list_redated "
    f"SELECT u.id, w.pos, u.shard, u.status = '{LIVE}', u.lastmod, "
    f"CASE WHEN {_CHANGED} THEN max(u.lastmod, min(w.stamp, :now)) ELSE u.lastmod END, "
    f"w.stamp, {_CHANGED} FROM temp.list_winners w {{join}} urls u ON u.loc = w.loc "
    f"WHERE {_LISTED_ALONE} AND w.stamp NOT IN ('', '{HELD}') AND w.stamp IS NOT {_WAS}"
)
DECIDE = _DECIDE.format(join="CROSS JOIN")
DECIDE_WHOLE = _DECIDE.format(join="JOIN")
WRITE = (
    "UPDATE urls SET (source_time, lastmod, change_count) = (SELECT r.stamp, r.lastmod, "
    "urls.change_count + r.changed FROM temp.list_redated r WHERE r.id = urls.id) "
    "WHERE id IN (SELECT id FROM temp.list_redated)"
)
TABLE = (
    "CREATE TEMP TABLE IF NOT EXISTS list_redated (id INTEGER PRIMARY KEY, pos INTEGER, "
    "shard INTEGER, live INTEGER, was TEXT, lastmod TEXT, stamp TEXT, changed INTEGER)"
)


def apply_redated(run: Run, source_id: int, whole: bool, counted: Callable[[int], None]) -> None:
    """Apply the datetimes of the staged lines of list `source_id` (`temp.list_winners`,
    every line when the list was read `whole`) to the rows they alone changed; `counted`
    is told how many rows that updates, before."""
    conn = run.conn
    conn.execute(TABLE)
    conn.execute("DELETE FROM temp.list_redated")
    conn.execute(DECIDE_WHOLE if whole else DECIDE, {"source": source_id, "now": run.now})
    ((count,),) = conn.execute("SELECT count(*) FROM temp.list_redated")
    if not count:
        return
    counted(count)  # before the update: it may stop the shard edits' notes (edits.py)
    conn.execute(WRITE)
    conn.execute("INSERT OR IGNORE INTO temp.seen SELECT id FROM temp.list_redated")
    if run.pending:
        conn.execute("DELETE FROM temp.pending WHERE id IN (SELECT id FROM temp.list_redated)")
    # Journalled after what the run journalled before them, oldest lastmod first, as
    # the run's end orders them (journal.py): a run of these alone needs no renumbering.
    run.write_journal()
    journalled = conn.execute(
        "INSERT INTO journal (url_id, kind, at) SELECT id, ?, ? FROM temp.list_redated "
        "WHERE live AND (changed OR lastmod IS NOT was) ORDER BY lastmod, pos",
        (UPDATED, run.now),
    ).rowcount
    run.changes.updated += journalled
    # Every live row's manifest line says its new source time: its shard is rewritten,
    # its newest lastmod the newest of its members' (none moved back). A row excluded by
    # robots.txt has no shard: its times alone move.
    for shard_id, newest in conn.execute(
        "SELECT shard, max(lastmod) FROM temp.list_redated WHERE live GROUP BY shard"
    ).fetchall():
        run.shards.touch(shard_id, newest, newest)
