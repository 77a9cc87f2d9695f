"""sitemapd: keeps a site's XML sitemaps true to its content, incrementally, at any size."""

from sitemapd.config import Config, load
from sitemapd.errors import (
    ConfigError,
    InvalidURL,
    LedgerError,
    LockError,
    PublishError,
    SitemapdError,
    SourceError,
)

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
