"""Whether the ledger's records of published files are of the folder or bucket a
publisher writes to now.

A configuration may be given another `output_dir` or S3 target. The records were of
the old one: a publish would take them for the new one's, removing there the files
under the names the site no longer uses (another site's `sitemap.xml`, when the index
was renamed at the same time) and rewriting as damaged what differs. Each publish notes
where its records are (`record_publish`); when that is somewhere else, or not said (a
ledger of an earlier release), a record stands only where its file is in the new place
as recorded: a folder moved with `mv` keeps its records, another site's files do not.
"""

from __future__ import annotations

from sitemapd.config import Config
from sitemapd.core import logs
from sitemapd.ledger.ledger import Ledger
from sitemapd.publish.store import Store

log = logs.Logger("sitemapd.publish")


def target_of(config: Config, store: Store) -> str:
    """Return what tells the place `store` writes to from any other: the folder, or the
    bucket's URL with its endpoint."""
    s3 = config.publish.s3
    endpoint = s3.endpoint_url if s3 is not None else None
    return store.where + (f" at {endpoint}" if endpoint else "")


def records_elsewhere(ledger: Ledger, store: Store, target: str, dry_run: bool) -> set[str]:
    """Return the names of the files recorded as published that are not in `store` (at
    `target`) as recorded, when the records may be of another place; forget them unless
    `dry_run` (a dry run changes no record). Call once `store` is prepared."""
    before = ledger.published_target()
    if before == target:
        return set()
    records = ledger.published_records()
    elsewhere = {name for name, record in records.items() if not store.intact(name, record)}
    if before is not None:
        log.warning(
            "published into %s until now, into %s from now on: %d of the %d files "
            "recorded are there as published (the files in %s are left as they are)",
            before,
            target,
            len(records) - len(elsewhere),
            len(records),
            before,
        )
    if elsewhere and not dry_run:
        ledger.forget_published(sorted(elsewhere))
    return elsewhere
