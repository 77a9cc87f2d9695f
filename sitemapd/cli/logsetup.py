"""sitemapd's log records on stderr: one event a line, its control characters escaped,
no timestamps under journald."""

from __future__ import annotations

import logging
import os
import re
import sys

# Characters that would garble a log line or hide in it (NUL, CR, other controls, a
# byte-order mark, Unicode line separators) when inputs carry them into a message. A line
# feed stays: inputs cannot carry one into a message (file names are shown escaped), and
# a worker's traceback is logged with its lines.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff\u2028\u2029]")


class _Escaping(logging.Formatter):
    """Formats a record with the control characters of its message escaped (`\\x00`,
    `\\r`, `\\ufeff`), as Python spells them."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        text = super().formatMessage(record)
        return _UNPRINTABLE.sub(lambda m: repr(m.group())[1:-1], text)


def to_stderr(level: str) -> None:
    """Send sitemapd's log records to stderr at `level` (a logging level name), and the
    warnings of the libraries it watches with (watchdog) in the same format."""
    # journald stamps every line itself; a second timestamp is noise.
    if os.environ.get("JOURNAL_STREAM"):
        fmt = "%(levelname)s %(name)s: %(message)s"
    else:
        fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Escaping(fmt))
    for name, at in (("sitemapd", level.upper()), ("watchdog", "WARNING")):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(at)
        logger.propagate = False
