"""`[publish]` and `site.partition`: S3 targets and partitions of a site across daemons."""

# Annotations evaluated, not text: see core/observation.py.
import re
from typing import NamedTuple
from urllib.parse import urlsplit

from sitemapd.config.table import Table


class Partition(NamedTuple):
    """This daemon's share of a partitioned site: partition `number` (from 1) of `total`."""

    number: int
    total: int

    @property
    def label(self) -> str:
        """Return the tag partitioned file names carry, like `p2of4`."""
        return f"p{self.number}of{self.total}"


class S3Target(NamedTuple):
    """An S3-compatible bucket (and key prefix) the sitemaps are published to."""

    bucket: str
    # "" or a key prefix ending in "/".
    prefix: str
    endpoint_url: str | None = None
    region: str | None = None
    cache_control: str | None = None
    # Seconds a publisher's lease lasts unrenewed.
    lease_ttl: float = 30.0
    # Key of robots.txt in the bucket (at its root: where a CDN serving the bucket as the
    # site finds it); None leaves robots.txt alone.
    robots_key: str | None = "robots.txt"

    @property
    def url(self) -> str:
        """Return the target as written in the configuration: `s3://bucket/prefix/`."""
        return f"s3://{self.bucket}/{self.prefix}"


class PublishConfig(NamedTuple):
    """Where output goes: the local output_dir (s3 None) or an S3-compatible bucket."""

    s3: S3Target | None = None


_PARTITION = r"([1-9]\d*|auto)/([1-9]\d*)"


# A StatefulSet's pods are named <set>-<ordinal>, from 0.
_ORDINAL = r"-(\d+)\Z"


# Search Console takes up to 500 sitemap indexes per site.
MAX_PARTITIONS = 500


def _ordinal(table: Table) -> int:
    """Return the ordinal that ends this host's name (`sitemaps-2`: 2), as a StatefulSet
    names its pods; raises ConfigError naming `site.partition` when there is none."""
    import socket  # here: only `auto/K` partitions need it, and it is slow to import

    host = socket.gethostname()
    match = re.search(_ORDINAL, host)
    if match is None:
        raise table.error(
            "partition",
            f"'auto/K' takes the partition from a host name ending in -<ordinal> "
            f"(a StatefulSet pod's, like 'sitemaps-2'); this host is {host!r}",
        )
    return int(match[1])


def read_partition(table: Table) -> Partition | None:
    value = table.text("partition", "")
    if not value:
        return None
    match = re.fullmatch(_PARTITION, value.strip())
    if match is None:
        raise table.error("partition", f"must be 'i/K' like '2/4', or 'auto/K', got {value!r}")
    count = int(match[2])
    number = _ordinal(table) + 1 if match[1] == "auto" else int(match[1])
    if number > count or count > MAX_PARTITIONS:
        raise table.error(
            "partition",
            f"must name partition i of K with 1 <= i <= K <= {MAX_PARTITIONS}, got {value!r}",
        )
    return Partition(number, count)


def partition_name(name: str, tag: str) -> str:
    """Return `name` (a file name or URL ending in .xml) with `-<tag>` before `.xml`."""
    return f"{name.removesuffix('.xml')}-{tag}.xml"


def read_publish(table: Table) -> PublishConfig:
    target = table.text("target", "")
    s3 = _s3_target(table, target) if target else None
    table.done()
    return PublishConfig(s3)


# Bucket names: 3 to 63 lower-case letters, digits, dots and hyphens.
_BUCKET = r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]"


def _installed(module: str) -> bool:
    """True when `module` can be imported (found, and not blocked in sys.modules)."""
    import importlib.util  # here: only S3 targets ask

    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:
        return False


def _s3_target(table: Table, target: str) -> S3Target:
    parts = urlsplit(target)
    if parts.scheme != "s3" or parts.query or parts.fragment:
        raise table.error("target", f"must be an s3://bucket/prefix/ URL, got {target!r}")
    if not re.fullmatch(_BUCKET, parts.netloc):
        raise table.error("target", f"bucket name {parts.netloc!r} is not a valid S3 bucket name")
    prefix = parts.path.lstrip("/")
    if prefix and not prefix.endswith("/"):
        raise table.error("target", f"the key prefix must end in '/', got {target!r}")
    if {".", ".."} & set(prefix.split("/")[:-1]) or "//" in prefix:
        raise table.error("target", f"the key prefix has an empty, '.' or '..' part: {target!r}")
    if not _installed("boto3"):
        raise table.error("target", "publishing to S3 needs boto3: pip install 'sitemapd[s3]'")
    endpoint = table.text("endpoint_url", "")
    if endpoint:
        endpoint = table.web_url("endpoint_url", endpoint)
    robots_key = table.text("robots_key", "robots.txt")
    return S3Target(
        bucket=parts.netloc,
        prefix=prefix,
        endpoint_url=endpoint or None,
        region=table.text("region", "") or None,
        cache_control=table.text("cache_control", "") or None,
        lease_ttl=table.duration("lease_ttl", 30.0, 1.0, 3600.0),
        robots_key=robots_key or None,
    )
