"""Logging set-up: stderr, one event a line, no timestamps under journald."""

from __future__ import annotations

import logging
import os
import sys


def configure(level: str) -> None:
    """Send sitemapd's log records to stderr at `level` (a logging level name)."""
    # journald stamps every line itself; a second timestamp is noise.
    if os.environ.get("JOURNAL_STREAM"):
        fmt = "%(levelname)s %(name)s: %(message)s"
    else:
        fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(fmt))
    root = logging.getLogger("sitemapd")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
