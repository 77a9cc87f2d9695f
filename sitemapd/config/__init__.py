"""Configuration: TOML read with tomllib into named tuples, validated in one place.

The sections are named tuples rather than frozen dataclasses: every command loads them, and
`dataclass()` compiles six methods for each class at import, six times the instructions
of a named tuple's (and `dataclasses` loads `inspect`). A field named like a tuple method
takes another name: `[sitemap]`'s `index` is `SitemapConfig.index_name`.

`load` reads a file and returns a `Config`. Each section has its own module, its fields
beside its checks: `site` (`[site]`, `[sitemap]`), `sources` (`[[source]]`), `feeds`
(`[feed]`, `[news]`), `notify` (`[websub]`, `[indexnow]`), `daemon` (`[daemon]`,
`[http]`, `[crawlers]`), `fleet` (`[publish]`, partitions); `table` reads one TOML table
with errors that name the file and the dotted key. `feeds` loads with the first
configuration that has a `[feed]` or `[news]` (or with its first name asked for here).
"""

from typing import TYPE_CHECKING, Any

from sitemapd.config.config import Config, load, parse
from sitemapd.config.daemon import DaemonConfig, HttpConfig
from sitemapd.config.fleet import Partition, PublishConfig, S3Target, partition_name
from sitemapd.config.notify import IndexNowConfig, WebSubConfig
from sitemapd.config.site import SiteConfig, SitemapConfig
from sitemapd.config.sources import (
    AccessLogSource,
    ChangelogSource,
    ContentSource,
    DirectorySource,
    SourceConfig,
    UrlListSource,
)

if TYPE_CHECKING:
    from sitemapd.config.feeds import FeedConfig, NewsConfig

__all__ = [
    "AccessLogSource",
    "ChangelogSource",
    "Config",
    "ContentSource",
    "DaemonConfig",
    "DirectorySource",
    "FeedConfig",
    "HttpConfig",
    "IndexNowConfig",
    "NewsConfig",
    "Partition",
    "PublishConfig",
    "S3Target",
    "SiteConfig",
    "SitemapConfig",
    "SourceConfig",
    "UrlListSource",
    "WebSubConfig",
    "load",
    "parse",
    "partition_name",
]


def __getattr__(name: str) -> Any:
    """Return `FeedConfig` or `NewsConfig`, loading their module on first use."""
    if name in ("FeedConfig", "NewsConfig"):
        from sitemapd.config import feeds

        return getattr(feeds, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
