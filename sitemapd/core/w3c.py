"""W3C datetimes: parse what sources give, emit the one form sitemaps carry.

The ledger stores every time as `YYYY-MM-DDTHH:MM:SS+00:00` so that string order is
time order and rendering needs no formatting.
"""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime
from functools import lru_cache

_CANONICAL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00\Z", re.ASCII)
_DATE_ONLY = re.compile(r"\d{4}-\d\d-\d\d\Z", re.ASCII)


def format_epoch(seconds: float) -> str:
    """Return the canonical UTC form of a POSIX timestamp, truncated to whole seconds."""
    return _format_second(int(seconds))


@lru_cache(maxsize=1024)
def _format_second(second: int) -> str:
    # Asked of every file a scan reads, whose mtimes a deploy gives few distinct seconds.
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(second))


def now() -> str:
    """Return the current time in canonical form.

    SITEMAPD_TEST_NOW (a canonical datetime) fixes the clock, for tests of what ages.
    """
    fixed = os.environ.get("SITEMAPD_TEST_NOW")
    return fixed if fixed else format_epoch(time.time())


def parse(value: str, assume_utc: bool = False) -> str:
    """Return `value` (a W3C datetime: date, or date-time with a zone) in canonical form.

    Raises ValueError for anything else, including a date-time without a time zone
    unless `assume_utc` reads it as UTC.
    """
    value = value.strip()
    if _DATE_ONLY.match(value):
        value += "T00:00:00+00:00"
    parsed = datetime.fromisoformat(value)  # also rejects impossible dates in canonical form
    if _CANONICAL.match(value):
        return value
    if parsed.tzinfo is None and assume_utc:
        parsed = parsed.replace(tzinfo=UTC)
    if parsed.tzinfo is None:
        raise ValueError(f"datetime without a time zone: {value!r}")
    try:
        utc = parsed.astimezone(UTC)
    except OverflowError as exc:  # its zone moves it before year 1 or past 9999
        raise ValueError(f"datetime out of range in UTC: {value!r}") from exc
    # Not strftime: its "%Y" writes a year before 1000 in fewer than four digits.
    return utc.replace(microsecond=0).isoformat()


def to_epoch(canonical: str) -> float:
    """Return the POSIX timestamp of a canonical datetime."""
    return datetime.fromisoformat(canonical).timestamp()
