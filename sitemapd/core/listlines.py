"""The valid lines of a chunk of a URL list, column by column: the URLs and their
datetimes, as the parse worker sends them, and (from the worker) the chunk's sitemap
entries and manifest lines formatted already, for a first load to spool as they are.

Carried as columns, a million lines reach the ledger's inserts without a tuple apiece;
they still read as `(loc, datetime or "")` pairs where a reader wants pairs.
"""

# Annotations evaluated, not text: see core/observation.py.
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import NamedTuple, overload

_LOC, _STAMP = itemgetter(0), itemgetter(1)
# The datetime of a line whose own cannot be read (`2026-13-01`): its URL stays as the
# ledger has it (a typo in an export must not take a page out of the sitemap and tell the
# search engines it is gone), and a URL the ledger does not have waits for the fix.
HELD = "?"


class Rendered(NamedTuple):
    """The lines' `<url>` entries and publish manifest lines, UTF-8, as a first load
    would format them if each line's datetime were its lastmod: true when every line
    has a datetime and `latest`, the largest, is not after the build's time."""

    entries: bytes
    manifest: bytes
    latest: str
    sizes: Sequence[int]  # each entry's bytes (render/sitemap.py's `entry_sizes`)
    # Not "": every line is dated after this build's time, formatted as each lastmod.
    capped: str = ""


class ListLines(Sequence[tuple[str, str]]):
    """The valid lines of a chunk: `locs[i]` with its canonical datetime `stamps[i]`
    (or ""), and what the parse worker formatted of them (None when it did not)."""

    __slots__ = ("locs", "rendered", "stamps")

    def __init__(
        self, locs: list[str], stamps: list[str], rendered: Rendered | None = None
    ) -> None:
        """Raises ValueError unless the columns have the same length."""
        if len(locs) != len(stamps):
            raise ValueError(f"{len(locs)} URLs and {len(stamps)} datetimes")
        self.locs = locs
        self.stamps = stamps
        self.rendered = rendered

    @classmethod
    def of(cls, lines: Iterable[tuple[str, str]]) -> "ListLines":
        """Return `(loc, datetime or "")` pairs as columns (without anything rendered)."""
        if isinstance(lines, ListLines):
            return lines
        pairs = lines if isinstance(lines, list) else list(lines)
        # Not `zip(*pairs)`: it runs an iterator for each line, which costs 7 times more.
        return cls(list(map(_LOC, pairs)), list(map(_STAMP, pairs)))

    def listed(self) -> "ListLines":
        """Return the lines but those `HELD` (what the parse worker formatted stays only
        when that is every line)."""
        # Rendered lines hold none (the worker renders no chunk holding one): a first
        # load's chunks are not searched.
        if self.rendered is not None or HELD not in self.stamps:
            return self
        kept = [stamp != HELD for stamp in self.stamps]
        return self._where(kept, True)

    def only(self, keep: Callable[[str], bool]) -> "ListLines":
        """Return the lines whose URL `keep` accepts; what was rendered stays only when
        that is every line."""
        return self.split(keep)[0]

    def split(self, keep: Callable[[str], bool]) -> "tuple[ListLines, ListLines]":
        """Return the lines whose URL `keep` accepts and the others, asking it once a
        line; what was rendered stays only with all of them."""
        kept = [keep(loc) for loc in self.locs]
        if all(kept):
            return self, ListLines([], [])
        return self._where(kept, True), self._where(kept, False)

    def _where(self, kept: list[bool], value: bool) -> "ListLines":
        """Return the lines whose entry in `kept` is `value`."""
        return ListLines(
            [loc for loc, ok in zip(self.locs, kept, strict=True) if ok is value],
            [stamp for stamp, ok in zip(self.stamps, kept, strict=True) if ok is value],
        )

    def __len__(self) -> int:
        return len(self.locs)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return zip(self.locs, self.stamps, strict=True)

    @overload
    def __getitem__(self, index: int) -> tuple[str, str]: ...

    @overload
    def __getitem__(self, index: slice) -> "ListLines": ...

    def __getitem__(self, index: int | slice) -> "tuple[str, str] | ListLines":
        if isinstance(index, slice):
            return ListLines(self.locs[index], self.stamps[index])
        return self.locs[index], self.stamps[index]

    def __eq__(self, other: object) -> bool:
        """Lines equal the same lines, as columns or as pairs, rendered or not."""
        if isinstance(other, ListLines):
            return self.locs == other.locs and self.stamps == other.stamps
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable columns, as a list's

    def __repr__(self) -> str:
        return f"ListLines({list(self)!r})"
