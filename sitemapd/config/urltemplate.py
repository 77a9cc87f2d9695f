"""A change log's `url_template`: the columns it formats."""

from __future__ import annotations

import re
import string

from sitemapd.errors import ConfigError


def template_fields(template: str) -> tuple[str, ...]:
    """Return the column names `template` formats; raises ConfigError for positional fields."""
    names: list[str] = []
    pending = [template]
    while pending:
        try:
            parsed = list(string.Formatter().parse(pending.pop(0)))
        except ValueError as exc:
            raise ConfigError(f"changelog: url_template {template!r}: {exc}") from exc
        for _, field, spec, _ in parsed:
            if field is None:
                continue
            name = re.split(r"[.\[]", field, maxsplit=1)[0]
            if not name or name.isdigit():
                raise ConfigError(f"changelog: url_template {template!r} needs named fields")
            if name not in names:
                names.append(name)
            # A field nested in a format spec (`{slug:>{width}}`) is a column too.
            if spec:
                pending.append(spec)
    return tuple(names)
