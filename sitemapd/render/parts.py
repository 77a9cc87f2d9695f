"""Names of numbered parts: `news-sitemap-2.xml` after `news-sitemap.xml`, feed pages."""

from __future__ import annotations

import re


def part_name(first: str, number: int) -> str:
    """Return the name of part `number` (from 1) of a file whose first part is `first`."""
    return first if number == 1 else f"{first.removesuffix('.xml')}-{number}.xml"


def part_number(first: str, name: str) -> int | None:
    """Return which part of `first` the file `name` is (1 for `first`), or None."""
    if name == first:
        return 1
    found = re.fullmatch(rf"{re.escape(first.removesuffix('.xml'))}-([1-9]\d*)\.xml", name)
    number = int(found[1]) if found else 0
    return number if number >= 2 else None


def part_url(first_url: str, name: str) -> str:
    """Return the URL of file `name` beside the file at `first_url`."""
    return first_url.rsplit("/", 1)[0] + "/" + name
