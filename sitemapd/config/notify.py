"""`[websub]` and `[indexnow]`: whom sitemapd tells about changes."""

# Annotations evaluated, not text: see core/observation.py.
import re
from typing import NamedTuple
from urllib.parse import urlsplit

from sitemapd.config.site import SiteConfig
from sitemapd.config.table import Table
from sitemapd.core.urls import Origin
from sitemapd.errors import ConfigError


class WebSubConfig(NamedTuple):
    """The [websub] section: the hubs told about feed updates."""

    hubs: tuple[str, ...] = ()


class IndexNowConfig(NamedTuple):
    """The [indexnow] section: the key, where it is served, and the endpoint."""

    key: str
    endpoint: str
    key_location: str
    # Write `<key>.txt` into output_dir (the default key_location points there).
    key_file: bool = True


def read_websub(table: Table) -> WebSubConfig:
    hubs = table.texts("hubs", ())
    for n, hub in enumerate(hubs):
        parts = urlsplit(hub)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise table.error(f"hubs[{n}]", f"must be an absolute http(s) URL, got {hub!r}")
    table.done()
    return WebSubConfig(hubs=hubs)


def read_indexnow(table: Table, site: SiteConfig) -> IndexNowConfig:
    key = table.required_text("key")
    if not re.fullmatch(_INDEXNOW_KEY, key):
        raise table.error("key", "must be 8 to 128 characters of a-z, A-Z, 0-9 and '-'")
    # Engines accept only URLs under the key file's folder: a key among the sitemaps in
    # a sub-folder would cover none of the pages.
    if "key_location" not in table.data and site.output_url != site.origin.root:
        raise table.error(
            "key_location",
            f"is required when output_url is not the site root: IndexNow accepts only URLs "
            f"under the key file's folder, so serve {key}.txt at {site.origin.root} "
            "(and set key_file = false unless output_dir is served there)",
        )
    config = IndexNowConfig(
        key=key,
        endpoint=table.web_url("endpoint", "https://api.indexnow.org/indexnow"),
        key_location=table.web_url("key_location", f"{site.output_url}{key}.txt"),
        key_file=table.flag("key_file", True),
    )
    parts = urlsplit(config.key_location)
    try:
        located = Origin.from_base_url(f"{parts.scheme}://{parts.netloc}/").root
    except ConfigError as exc:
        raise table.error("key_location", str(exc)) from exc
    if located != site.origin.root:
        raise table.error(
            "key_location",
            f"must be on {site.origin.root}: IndexNow accepts only URLs on the key file's "
            f"host, and every submission would be refused, got {config.key_location!r}",
        )
    table.done()
    return config


_INDEXNOW_KEY = r"[A-Za-z0-9-]{8,128}"
