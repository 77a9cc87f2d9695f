"""What the commands share: one-line errors with their exit codes, the site's engine
under the state lock, and a progress bar for long scans."""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from sitemapd import config
from sitemapd.errors import ConfigError, SitemapdError

if TYPE_CHECKING:
    from sitemapd.engine import progress
    from sitemapd.engine.engine import Engine
    from sitemapd.publish.folderlock import FolderLock

# A command imports the modules only it uses in its body: each start-up pays for its own
# command alone (a deploy hook's `build` of URL lists loads no HTML parser, no HTTP client;
# a `status` or `check-config` no engine at all).
F = TypeVar("F", bound=Callable[..., Any])


def errors_exit(command: F) -> F:
    """Turn sitemapd errors into one line on stderr: exit 2 for config, 1 otherwise."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except ConfigError as exc:
            print(f"sitemapd: configuration error: {exc}", file=sys.stderr)
            sys.exit(2)
        except SitemapdError as exc:
            print(f"sitemapd: error: {exc}", file=sys.stderr)
            sys.exit(1)
        except BrokenPipeError:
            raise  # the reader of stdout gone (`| head`): main() ends quietly
        except OSError as exc:
            # A file system that is full or read-only: the file and why, not a traceback.
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"sitemapd: error: {where}{exc.strerror or exc}", file=sys.stderr)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


@contextlib.contextmanager
def locked_engine(cfg: config.Config) -> Iterator[Engine]:
    """Yield the site's Engine while holding the state-directory lock."""
    from sitemapd.ledger.lock import StateLock

    with StateLock(cfg.site.state_dir), opened_engine(cfg) as engine:
        yield engine


@contextlib.contextmanager
def opened_engine(cfg: config.Config, folder_lock: FolderLock | None = None) -> Iterator[Engine]:
    """Yield the site's Engine, closed after (with `folder_lock`, the output folder's lock
    taken before); the caller holds the state-directory lock.

    What the last quiet build noted no longer holds once the engine may write."""
    from sitemapd.cli import unchanged
    from sitemapd.engine.engine import Engine

    unchanged.forget(cfg.site.state_dir)
    # No sidecar or metrics endpoint reads the ledger of a command meanwhile.
    engine = Engine(cfg, alone=True, folder_lock=folder_lock)
    try:
        yield engine
    finally:
        engine.close()


@contextlib.contextmanager
def progress_bar(cfg: config.Config) -> Iterator[progress.Progress | None]:
    """Yield a Progress drawing a bar with rate and ETA on stderr when it is a terminal,
    else None (long scans then log a line every 10 s)."""
    if not sys.stderr.isatty():
        yield None
        return
    from sitemapd.cli.progressbar import ProgressBar
    from sitemapd.engine import progress

    bar = ProgressBar(progress.estimate(cfg), sys.stderr)
    bar.draw(0, 0.0)
    try:
        yield progress.Progress(bar.draw, every=0.2)
    finally:
        bar.close()
