"""The modules a build runs, imported on a thread while its early check hashes a list
whose status moved (cli/unchanged.py): reading the list lets go of the GIL, so a list
found changed is then built with them loaded already; one found unchanged (a `touch`)
stops the imports at the next module."""

from __future__ import annotations

import importlib
import threading

# Those a list's build loads after the early check, fewer modules each first: each pulls
# in what it needs, and a stop waits for one module's import at most.
MODULES = (
    "sitemapd.core.observation",
    "sitemapd.ledger.schema",
    "sitemapd.ledger.model",
    "sitemapd.ledger.shards",
    "sitemapd.ledger.spool",
    "sitemapd.ledger.run",
    "sitemapd.ledger.changes",
    "sitemapd.ledger.decide",
    "sitemapd.ledger.lists",
    "sitemapd.ledger.apply",
    "sitemapd.ledger.ledger",
    "sitemapd.publish.store",
    "sitemapd.publish.manifest",
    "sitemapd.publish.shardtext",
    "sitemapd.publish.publisher",
    "sitemapd.sources.base",
    "sitemapd.sources.urllist",
    "sitemapd.engine.engine",
    "sitemapd.publish.ownership",
    "sitemapd.status.problems",
    "sitemapd.sources.listchunks",
    "pyfastcdc",
)


class Warmup:
    """Imports `MODULES` in order on a thread of its own until stopped."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="sitemapd-warmup")
        self._thread.start()

    def _run(self) -> None:
        for name in MODULES:
            if self._stop.is_set():
                return
            try:
                importlib.import_module(name)
            except Exception:
                return

    def stop(self) -> None:
        """Stop at the next module and wait for the thread."""
        self._stop.set()
        self._thread.join()
