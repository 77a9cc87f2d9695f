"""sitemapd: keeps a site's XML sitemaps true to its content, incrementally, at any size."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sitemapd.errors import (
    ConfigError,
    InvalidURL,
    LedgerError,
    LockError,
    PublishError,
    SitemapdError,
    SourceError,
)

if TYPE_CHECKING:
    from sitemapd.config import Config, load

__version__ = "0.1.0"

__all__ = [
    "Config",
    "ConfigError",
    "InvalidURL",
    "LedgerError",
    "LockError",
    "PublishError",
    "SitemapdError",
    "SourceError",
    "__version__",
    "load",
]


def __getattr__(name: str) -> Any:
    """Return `Config` or `load`, imported on first use: a worker started as `python -m
    sitemapd.<module>` loads this package, and needs none of the config's modules.
    Raises AttributeError for any other name."""
    if name in ("Config", "load"):
        from sitemapd import config

        return getattr(config, name)
    raise AttributeError(f"module 'sitemapd' has no attribute {name!r}")
