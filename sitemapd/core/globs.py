"""Glob patterns over `/`-separated relative paths, matching as `pathlib.Path.glob` does.

`**/` matches zero or more folders, so `**/*.html` matches `index.html` at the root.
"""

from __future__ import annotations

import re
from collections.abc import Iterable


def _translate(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def compile_globs(patterns: Iterable[str]) -> re.Pattern[str]:
    """Return one regex matching a relative path when any of `patterns` does."""
    alternatives = [_translate(p.lstrip("/")) for p in patterns]
    if not alternatives:
        return re.compile(r"(?!)")
    return re.compile("(?:" + "|".join(alternatives) + r")\Z", re.DOTALL)


class Selection:
    """The relative paths a directory source takes as pages: those one of its `include`
    patterns matches and none of its `exclude` patterns (`error_pages` among them)."""

    __slots__ = ("_exclude", "_include")

    def __init__(self, include: Iterable[str], exclude: Iterable[str]) -> None:
        self._include = compile_globs(include).match
        self._exclude = compile_globs(exclude).match

    def __contains__(self, relpath: str) -> bool:
        return self._include(relpath) is not None and self._exclude(relpath) is None

    def refusal(self, relpath: str) -> str | None:
        """Return why `relpath` is no page of the source ("is not a page: ..."), or None
        when it is one."""
        if self._include(relpath) is None:
            return "is not a page: it matches no `include`"
        if self._exclude(relpath) is not None:
            return "is not published: it matches an `exclude` or `error_pages` pattern"
        return None
