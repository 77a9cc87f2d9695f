"""sitemapd's loggers, which load `logging` when they first show a record.

`logging` and what it imports (traceback, linecache, tokenize, threading) are a tenth of
a short command's start-up, and a `status`, an `explain` or a build with nothing to do
shows no record. A command sets logging up through `defer`: the set-up runs before the
first record its level shows, and records below that level are dropped until then, as
`logging` would drop them, without loading it.
"""

from __future__ import annotations

import _thread
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

# `logging`'s numbers for its levels, by the names `--log-level` takes.
DEBUG, INFO, WARNING, ERROR = 10, 20, 30, 40
LEVELS = {"debug": DEBUG, "info": INFO, "warning": WARNING, "error": ERROR}

# What `exc_info` takes: True for the exception being handled, or an exception.
ExcInfo = bool | BaseException
# The set-up a command deferred, until it runs, and the lowest level it shows.
_pending: Callable[[], None] | None = None
_threshold = 0
# `_thread`'s lock, not `threading`'s: `threading` is among what `logging` loads.
_settling = _thread.allocate_lock()
# Warnings and errors shown so far by sitemapd's loggers.
_warned = 0


def defer(setup: Callable[[], None], level: int) -> None:
    """Have `setup` (which sets `logging` up to show records of `level` and above) run
    before a logger of sitemapd's first shows a record; now when `logging` is loaded."""
    global _pending, _threshold
    _pending, _threshold = setup, level
    if "logging" in sys.modules:
        settle()


def settle() -> None:
    """Run the deferred set-up now, when one is pending."""
    global _pending
    with _settling:
        if _pending is not None:
            _pending()
            _pending = None


def warned() -> int:
    """Return how many warnings and errors sitemapd's loggers have shown so far."""
    return _warned


class Logger:
    """A logger named as `logging`'s are, which loads it when a record is shown."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: logging.Logger | None = None

    def _loaded(self) -> logging.Logger:
        """Return `logging`'s logger of this name, the pending set-up run first."""
        if self._logger is None:
            settle()
            import logging

            self._logger = logging.getLogger(self.name)
        return self._logger

    def isEnabledFor(self, level: int) -> bool:
        """Return whether a record of `level` would be shown: while the set-up is pending,
        by the level it sets, without loading `logging` for the answer."""
        if _pending is not None:
            return level >= _threshold
        return self._loaded().isEnabledFor(level)

    def log(self, level: int, msg: object, *args: object, exc_info: ExcInfo = False) -> None:
        """Log `msg % args` at `level`, with the exception `exc_info` gives."""
        self._log(level, msg, args, exc_info)

    def debug(self, msg: object, *args: object, exc_info: ExcInfo = False) -> None:
        """Log `msg % args` at DEBUG, with the exception `exc_info` gives."""
        self._log(DEBUG, msg, args, exc_info)

    def info(self, msg: object, *args: object, exc_info: ExcInfo = False) -> None:
        """Log `msg % args` at INFO, with the exception `exc_info` gives."""
        self._log(INFO, msg, args, exc_info)

    def warning(self, msg: object, *args: object, exc_info: ExcInfo = False) -> None:
        """Log `msg % args` at WARNING, with the exception `exc_info` gives."""
        self._log(WARNING, msg, args, exc_info)

    def error(self, msg: object, *args: object, exc_info: ExcInfo = False) -> None:
        """Log `msg % args` at ERROR, with the exception `exc_info` gives."""
        self._log(ERROR, msg, args, exc_info)

    def exception(self, msg: object, *args: object) -> None:
        """Log `msg % args` at ERROR, with the exception being handled."""
        self._log(ERROR, msg, args, True)

    def _log(self, level: int, msg: object, args: tuple[object, ...], exc_info: ExcInfo) -> None:
        """Show `msg % args` at `level` when the level shows it."""
        global _warned
        if not self.isEnabledFor(level):
            return
        if level >= WARNING:
            _warned += 1
        # Two frames up (debug, then its caller): the record names the line that logged.
        self._loaded().log(level, msg, *args, exc_info=exc_info, stacklevel=3)
