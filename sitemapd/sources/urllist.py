"""URL list source: the sitemaps.org text format, one URL a line.

A line may add a tab and a W3C datetime: the URL's own lastmod. A line whose datetime
moves forward is a change. Blank lines and lines starting with `#` are ignored. The file
is not read again while its size, mtime and inode stay the same.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO

from .. import w3c
from ..config import UrlListSource
from ..errors import InvalidURL, SourceError
from ..ledger import Ledger
from ..observation import Item, Observation
from ..urls import URLPolicy
from .base import Scan, rejected
from .directory import file_key

_SHOWN = 200  # characters of a bad line kept in logs and status


def scan(source: UrlListSource, policy: URLPolicy, ledger: Ledger) -> Scan:
    """Return a scan of the list, empty and incomplete when the file is unchanged."""
    try:
        handle = open(source.path, "rb")  # noqa: SIM115 - closed by the generator
        key = file_key(os.fstat(handle.fileno()))
    except OSError as exc:
        raise SourceError(f"{source.name}: cannot read {source.path} ({exc.strerror})") from exc
    cursor = f"urllist:{source.name}"
    if ledger.cursor(cursor) == key:
        handle.close()
        return Scan(source.name, iter(()), complete=False)
    items = _items(source, policy, handle, key)
    return Scan(source.name, items, complete=True, cursors={cursor: key})


def _items(source: UrlListSource, policy: URLPolicy, handle: BinaryIO, key: str) -> Iterator[Item]:
    name = source.name
    normalise = policy.normalise
    try:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                yield rejected(name, f"line {number}", "not valid UTF-8")
                continue
            if not line or line.startswith("#"):
                continue
            url, _, stamp = line.partition("\t")
            head, _, tail = url.rpartition(" ")
            if head and not stamp and _looks_like_datetime(tail):
                yield rejected(
                    name, url[:_SHOWN], f"line {number}: separate the datetime with a tab"
                )
                continue
            try:
                loc = normalise(url)
            except InvalidURL as exc:
                yield rejected(name, url[:_SHOWN], f"line {number}: {exc}")
                continue
            source_time = None
            if stamp.strip():
                try:
                    source_time = w3c.parse(stamp)
                except ValueError:
                    # Published without it, the URL would take a made-up time: skipped, as
                    # logged, until the line is fixed.
                    yield rejected(name, url[:_SHOWN], f"line {number}: bad datetime {stamp!r}")
                    continue
            yield Observation(loc, name, None, source_time)
        try:
            unchanged = file_key(os.stat(source.path)) == key
        except OSError:
            unchanged = False
        if not unchanged:
            # Being rewritten in place: what we read may be a fraction of the list.
            raise SourceError(
                f"{name}: {source.path} changed while being read; it will be read again "
                "(write the list to a temporary file and rename it into place)"
            )
    finally:
        handle.close()


def _looks_like_datetime(text: str) -> bool:
    try:
        w3c.parse(text)
    except ValueError:
        return False
    return True
