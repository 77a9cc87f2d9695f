"""Partitions of a large site: which URLs one daemon owns, by a hash stable everywhere.

A URL belongs to partition `1 + (h mod K)`, where `h` is the first 8 bytes of the SHA-256
of its normalised URL (UTF-8) read as a big-endian unsigned integer: the same on every
machine, Python version and sitemapd release.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from sitemapd.config.fleet import Partition
from sitemapd.core.listlines import ListLines
from sitemapd.core.observation import Changes, Gone, Item, ListChunk, Observation, Seen


def partition_of(loc: str, count: int) -> int:
    """Return the partition (from 1) of `count` that URL `loc` belongs to."""
    digest = hashlib.sha256(loc.encode()).digest()
    return 1 + int.from_bytes(digest[:8], "big") % count


def owned(items: Iterator[Item], partition: Partition) -> Iterator[Item]:
    """Yield the items of URLs in `partition`, and every item that names no URL."""
    number, count = partition.number, partition.total
    for item in items:
        if isinstance(item, Observation | Seen | Gone) and (
            partition_of(item.loc, count) != number
        ):
            continue
        if isinstance(item, ListChunk) and item.lines is not None:
            # The chunk stays (its digest is the file's); its lines are this partition's.
            lines = ListLines.of(item.lines).only(lambda loc: partition_of(loc, count) == number)
            item = item._replace(lines=lines)
        elif isinstance(item, Changes):
            item = item.only(lambda loc: partition_of(loc, count) == number)
        yield item
