"""Helper processes die with the daemon, however it dies (SIGKILL included).

A child of the daemon asks the kernel for SIGKILL when its parent ends (Linux
`PR_SET_PDEATHSIG`). A worker forked by the multiprocessing forkserver is the server's
child, not the daemon's, and holds the server's lifeline pipe open itself (so the server
never sees the daemon go): it watches the daemon through a pidfd instead. Once the
workers are gone, the forkserver and the resource tracker see the end of their pipes and
exit on their own.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1
_POLL_EVERY = 1.0  # seconds, where no pidfd is to be had


def die_with(pid: int) -> None:
    """Make this process end (SIGKILL) as soon as process `pid` ends; at once when it has
    ended already. A ^C is left to process `pid`."""
    # A terminal's ^C reaches every process of the group: a worker's KeyboardInterrupt
    # would be handed back as its task's error and stop the daemon's first scan with a
    # traceback, where the daemon stops it cleanly (its SIGINT handler).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if os.getppid() == pid and _parent_death_signal():
        # Checked again: the parent may have gone before the request took effect.
        if os.getppid() != pid:
            os.kill(os.getpid(), signal.SIGKILL)
        return
    threading.Thread(target=_watch, args=(pid,), name="sitemapd-lifeline", daemon=True).start()


def _parent_death_signal() -> bool:
    """Ask for SIGKILL when the parent ends; return False where the kernel cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch(pid: int) -> None:
    """Wait for process `pid` to end, then kill this process."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        fd = None  # gone already
    except (OSError, AttributeError):
        # No pidfd (an old kernel, a sandbox): look now and then.
        while running(pid):
            time.sleep(_POLL_EVERY)
        fd = None
    if fd is not None:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.poll()  # readable once the process has ended
    os.kill(os.getpid(), signal.SIGKILL)


def running(pid: int) -> bool:
    """True while process `pid` exists (one of another user's included)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
