"""The open-files limit: raised at start so that sockets never starve content reads."""

from __future__ import annotations

import logging
import resource

log = logging.getLogger("sitemapd.fdlimit")


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
