"""Process set-up at start: logging to stderr (`logsetup`, once a record is shown), the
open-files limit (raised so that sockets never starve content reads), the
garbage collector turned on once the modules are loaded, and an exit without the
interpreter's last search for garbage."""

from __future__ import annotations

import atexit
import gc
import resource

from sitemapd.core import logs

log = logs.Logger("sitemapd.fdlimit")


def configure(level: str) -> None:
    """Send sitemapd's log records to stderr at `level` (a name `--log-level` takes), and
    the warnings of the libraries it watches with (watchdog) in the same format: set up
    before the first record shown, `logging` unloaded until then (`core.logs`)."""

    def set_up() -> None:
        from sitemapd.cli import logsetup

        logsetup.to_stderr(level)

    logs.defer(set_up, logs.LEVELS[level])


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
