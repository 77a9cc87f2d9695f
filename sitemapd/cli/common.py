"""What the commands share: the -c option, one-line errors with their exit codes, the
site's engine under the state lock, and a progress bar for long scans."""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from sitemapd import config
from sitemapd.errors import ConfigError, SitemapdError

if TYPE_CHECKING:
    from sitemapd.engine import progress
    from sitemapd.engine.engine import Engine

# A command imports the modules only it uses in its body: each start-up pays for its own
# command alone (a deploy hook's `build` of URL lists loads no HTML parser, no HTTP client;
# a `status` or `check-config` no engine at all).
F = TypeVar("F", bound=Callable[..., Any])


config_option = click.option(
    "-c",
    "--config",
    "config_path",
    envvar="SITEMAPD_CONFIG",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Configuration file (TOML). Also read from $SITEMAPD_CONFIG.",
)


def errors_exit(command: F) -> F:
    """Turn sitemapd errors into one line on stderr: exit 2 for config, 1 otherwise."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except ConfigError as exc:
            click.echo(f"sitemapd: configuration error: {exc}", err=True)
            sys.exit(2)
        except SitemapdError as exc:
            click.echo(f"sitemapd: error: {exc}", err=True)
            sys.exit(1)
        except OSError as exc:
            # A file system that is full or read-only: the file and why, not a traceback.
            where = f"{exc.filename}: " if exc.filename else ""
            click.echo(f"sitemapd: error: {where}{exc.strerror or exc}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


@contextlib.contextmanager
def locked_engine(cfg: config.Config) -> Iterator[Engine]:
    """Yield the site's Engine while holding the state-directory lock."""
    from sitemapd.ledger.lock import StateLock

    with StateLock(cfg.site.state_dir), opened_engine(cfg) as engine:
        yield engine


@contextlib.contextmanager
def opened_engine(cfg: config.Config) -> Iterator[Engine]:
    """Yield the site's Engine, closed after; the caller holds the state-directory lock.

    What the last quiet build noted no longer holds once the engine may write."""
    from sitemapd.cli import unchanged
    from sitemapd.engine.engine import Engine

    unchanged.forget(cfg.site.state_dir)
    # No sidecar or metrics endpoint reads the ledger of a command meanwhile.
    engine = Engine(cfg, alone=True)
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
    from sitemapd.engine import progress

    total = max(progress.estimate(cfg), 1)
    with click.progressbar(length=total, label="scanning", file=sys.stderr, show_pos=True) as bar:

        def draw(pages: int, rate: float) -> None:
            bar.label = f"scanning ({rate:.0f} pages/s)"
            bar.update(pages - bar.pos)

        yield progress.Progress(draw, every=0.2)
