"""Reading one TOML table: typed getters whose errors name `file: key`, durations and sizes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from sitemapd.errors import ConfigError

HOUR = 3600.0
# How alike a key must be spelled to a known one to be named as its misspelling.
_NEAR = 0.75


T = TypeVar("T")


class Table:
    """One TOML table being read: typed getters that name `file: key` in every error."""

    def __init__(self, file: Path, where: str, data: Any) -> None:
        self.file = file
        self.where = where
        if not isinstance(data, dict):
            raise self.error("", f"must be a table, got {kind_of(data)}")
        self.data: dict[str, Any] = data
        self.used: set[str] = set()

    def error(self, key: str, message: str) -> ConfigError:
        dotted = f"{self.where}.{key}" if self.where and key else self.where or key
        return ConfigError(f"{self.file}: {dotted}: {message}")

    def get(self, key: str, kind: type[T], default: T, kind_name: str) -> T:
        """Return the value of `key` (or `default`); raises ConfigError on a wrong type."""
        self.used.add(key)
        if key not in self.data:
            return default
        value = self.data[key]
        # bool is an int subclass; TOML keeps them apart, so must we.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(key, f"must be {kind_name}, got {kind_of(value)}")
        return value

    def missing(self, key: str) -> ConfigError:
        """Return the error of the required `key` missing, naming a key not yet read that
        is spelled like it ("stat_dir" for `state_dir`) where there is one."""
        near = spelled_like(key, [k for k in self.data if k not in self.used])
        hint = f" ({near} is given: misspelled?)" if near else ""
        return self.error(key, f"is required{hint}")

    def required_text(self, key: str) -> str:
        value = self.get(key, str, "", "a string")
        if not value:
            raise self.missing(key)
        return value

    def text(self, key: str, default: str) -> str:
        return self.get(key, str, default, "a string")

    def flag(self, key: str, default: bool) -> bool:
        return self.get(key, bool, default, "true or false")

    def integer(self, key: str, default: int, low: int, high: int) -> int:
        value = self.get(key, int, default, "an integer")
        if value < low:
            raise self.error(key, f"must be at least {low}, got {value}")
        if value > high:
            raise self.error(key, f"must be at most {high}, got {value}")
        return value

    def number(self, key: str, default: float, low: float, high: float) -> float:
        value = self.get(key, (int, float), default, "a number")  # type: ignore[arg-type]
        if isinstance(value, bool) or not low <= value <= high:
            raise self.error(key, f"must be a number from {low:g} to {high:g}, got {value!r}")
        return float(value)

    def duration(self, key: str, default: float, low: float, high: float) -> float:
        """Return seconds from a number or a string like "90s", "30m", "48h", "2d"."""
        self.used.add(key)
        value = self.data.get(key, default)
        if isinstance(value, str):
            match = re.fullmatch(DURATION, value.strip())
            if match is None:
                raise self.error(key, f"must be seconds or a duration like '48h', got {value!r}")
            value = float(match[1]) * UNITS[match[2] or "s"]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(key, f"must be seconds or a duration like '48h', got {kind_of(value)}")
        if not low <= value <= high:
            raise self.error(key, f"must be from {span(low)} to {span(high)}, got {span(value)}")
        return float(value)

    def share(self, key: str, default: float) -> float:
        """Return a fraction from 0 to 1, given as a number or a percentage like "50%"."""
        self.used.add(key)
        value = self.data.get(key, default)
        if isinstance(value, str) and re.fullmatch(PERCENT, value.strip()):
            value = float(value.strip()[:-1]) / 100
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise self.error(key, f"must be a fraction from 0 to 1 or a percentage, got {value!r}")
        return float(value)

    def web_url(self, key: str, default: str) -> str:
        """Return an absolute http(s) URL."""
        value = self.text(key, default)
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise self.error(key, f"must be an absolute http(s) URL, got {value!r}")
        return value

    def file_name(self, key: str, default: str, suffix: str = "") -> str:
        """Return a plain file name (no folder, space or control character) ending in
        `suffix`: it is spelled into URLs and served by name."""
        value = self.text(key, default)
        if not re.fullmatch(FILE_NAME, value) or not value.endswith(suffix):
            raise self.error(
                key,
                f"must be a file name of letters, digits, '.', '_' and '-' ending in "
                f"{suffix or 'anything'}, got {value!r}",
            )
        return value

    def choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.text(key, default)
        if value not in choices:
            raise self.error(key, f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def texts(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        value = self.get(key, list, list(default), "a list of strings")
        if not all(isinstance(item, str) for item in value):
            raise self.error(key, "must be a list of strings")
        return tuple(value)

    def table(self, key: str) -> Table:
        """Return the sub-table `key`, empty when absent."""
        where = f"{self.where}.{key}" if self.where else key
        return Table(self.file, where, self.get(key, dict, {}, "a table"))

    def optional_path(self, key: str, base: Path, resolve: bool = True) -> Path | None:
        """Return the absolute path at `key`, relative to `base`; None when absent. A
        file opened anew at each read keeps its symlinks (`resolve=False`): a deploy that
        swaps a symlinked folder must be followed, and errors name the path configured."""
        value = self.get(key, str, "", "a path string")
        if not value:
            return None
        path = base / Path(value).expanduser()
        return path.resolve() if resolve else path

    def path(self, key: str, base: Path, resolve: bool = True) -> Path:
        value = self.optional_path(key, base, resolve)
        if value is None:
            raise self.missing(key)
        return value

    def done(self, known: tuple[str, ...] | None = None) -> None:
        """Raise ConfigError naming the first key that is not `known` (by default, the
        keys read), and the known key spelled like it."""
        allowed = self.used if known is None else set(known)
        unknown = sorted(set(self.data) - allowed)
        if unknown:
            near = spelled_like(unknown[0], sorted(allowed))
            hint = f" (did you mean {near}?)" if near else ""
            raise self.error(unknown[0], f"unknown key{hint}")


def spelled_like(key: str, keys: list[str]) -> str | None:
    """Return the one of `keys` spelled most like `key`, if any is alike enough."""
    import difflib  # only on an error: not at every start

    near = difflib.get_close_matches(key, keys, n=1, cutoff=_NEAR)
    return near[0] if near else None


# The validation patterns of this package are kept as text: `re` compiles (and caches)
# each on its first use, not at every start for keys a configuration does not have.
PERCENT = r"\d+(\.\d+)?%"


DURATION = r"(\d+(?:\.\d+)?)\s*([smhd]?)"


FILE_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"


UNITS = {"s": 1.0, "m": 60.0, "h": HOUR, "d": 24 * HOUR}


def span(seconds: float) -> str:
    if seconds >= HOUR and seconds % HOUR == 0:
        return f"{seconds / HOUR:g}h"
    return f"{seconds:g}s"


def kind_of(value: object) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names.update({list: "an array", dict: "a table"})
    return names.get(type(value), type(value).__name__)


LANGUAGE = r"[a-z]{2,3}|zh-cn|zh-tw"
