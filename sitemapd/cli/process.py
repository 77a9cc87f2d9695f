"""Process set-up at start: logging to stderr (one event a line, no timestamps under
journald), the open-files limit (raised so that sockets never starve content reads), the
garbage collector turned on once the modules are loaded, and an exit without the
interpreter's last search for garbage."""

from __future__ import annotations

import atexit
import gc
import logging
import os
import re
import resource
import sys

log = logging.getLogger("sitemapd.fdlimit")

# Characters that would garble a log line or hide in it (NUL, CR, other controls, a
# byte-order mark, Unicode line separators) when inputs carry them into a message. A line
# feed stays: inputs cannot carry one into a message (file names are shown escaped), and
# a worker's traceback is logged with its lines. Kept as text: `re` compiles it with the
# first record, and a command that logs nothing does not.
_UNPRINTABLE = "[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff\u2028\u2029]"


class _Escaping(logging.Formatter):
    """Formats a record with the control characters of its message escaped (`\\x00`,
    `\\r`, `\\ufeff`), as Python spells them."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        text = super().formatMessage(record)
        return re.sub(_UNPRINTABLE, lambda m: repr(m.group())[1:-1], text)


def configure(level: str) -> None:
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


def raise_open_files_limit() -> None:
    """Raise the soft limit on open files to the hard limit, when allowed.

    systemd gives services a soft limit of 1,024 under a far higher hard limit; the units
    set LimitNOFILE=, and this covers everything else. A refusal (a seccomp filter, a
    container) leaves the limit as it was.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (OSError, ValueError) as exc:
            log.debug("cannot raise the open-files limit to %d (%s)", hard, exc)
    log.debug("open-files limit %d", soft)


def collect_from_here() -> None:
    """Turn the garbage collector on for the command's work, when the process started
    with it off (`sitemapd.__main__`): what loaded until now is moved out of its reach
    (`gc.freeze`), as it lives until the exit. A process that did not turn it off (a
    test invoking a command) keeps its collector as it was."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def exit_without_collecting() -> None:
    """Let the process end without the garbage collector's last pass over every object.

    At exit the interpreter looks for reference cycles among all the objects its modules
    made (20-34 ms for a `build`, 7-15 ms for `status`), to free memory the exit frees
    anyway. Objects moved out of the collector's reach (`gc.freeze`) as the exit starts
    are still freed by their counts; what needs an orderly end (the ledger, the state
    lock, written files) is closed by the commands themselves.
    """
    atexit.register(gc.freeze)
