"""Decode the messages of PostgreSQL's `pgoutput` logical decoding plugin (protocol 1).

Only what a followed table needs: transaction bounds, relations (column names), and
inserts, updates and deletes with their tuples as text, of the columns asked for.
Other messages are skipped.
"""

from __future__ import annotations

import struct
from collections.abc import Collection
from dataclasses import dataclass

# PostgreSQL timestamps count microseconds from 2000-01-01 UTC.
_PG_EPOCH = 946_684_800
_BEGIN = struct.Struct(">QqI")
_COMMIT = struct.Struct(">bQQq")
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
# Tuple data kinds: text, NULL, an unchanged TOASTed value.
_TEXT, _NULL, _UNCHANGED = b"tnu"
# Tuple kinds: the old row (the key, or all of it) and the new one.
_OLD, _NEW = frozenset(b"KO"), ord("N")


class Unchanged:
    """A TOASTed value the update left as it was, which pgoutput does not send again."""

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = Unchanged()
Value = str | None | Unchanged
Tuple = dict[str, Value]


@dataclass(frozen=True, slots=True)
class Relation:
    """A table as a Relation message describes it."""

    oid: int
    schema: str
    name: str
    columns: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Commit:
    """The end of a transaction: `end_lsn` is where the next one may start."""

    end_lsn: int
    committed: float  # epoch seconds


# A row change: the relation's id, the row before (None for an insert) and after (None
# for a delete). An unchanged TOASTed value of the row after is its value before when the
# message has that, else UNCHANGED. A plain tuple: one is made per row, and a named one
# costs twice as much to make.
Change = tuple[int, Tuple | None, Tuple | None]


def decode(
    payload: bytes, relations: dict[int, Relation], wanted: Collection[str] | None = None
) -> Commit | Change | Relation | None:
    """Return what one message says, None for those a follower does not need; a Relation
    message is also recorded in `relations`. A change's tuples hold the `wanted` columns
    (default: all). Raises ValueError for a malformed one."""
    kind = payload[:1]
    try:
        if kind == b"C":
            _, _, end_lsn, when = _COMMIT.unpack_from(payload, 1)
            return Commit(end_lsn, when / 1_000_000 + _PG_EPOCH)
        if kind == b"R":
            relation = _relation(payload)
            relations[relation.oid] = relation
            return relation
        if kind in (b"I", b"U", b"D"):
            return _change(kind, payload, relations, wanted)
    except (struct.error, KeyError, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed pgoutput {kind!r} message: {exc!r}") from exc
    return None


def begin_time(payload: bytes) -> float | None:
    """Return the commit time (epoch seconds) a Begin message announces, None for
    another message."""
    if payload[:1] != b"B":
        return None
    _, when, _ = _BEGIN.unpack_from(payload, 1)
    return float(when / 1_000_000 + _PG_EPOCH)


def _relation(payload: bytes) -> Relation:
    (oid,) = _U32.unpack_from(payload, 1)
    schema, at = _cstring(payload, 5)
    name, at = _cstring(payload, at)
    at += 1  # replica identity
    (count,) = _U16.unpack_from(payload, at)
    at += 2
    columns = []
    for _ in range(count):
        column, at = _cstring(payload, at + 1)  # after the flags
        columns.append(column)
        at += 8  # type oid, type modifier
    return Relation(oid, schema, name, tuple(columns))


def _change(
    kind: bytes, payload: bytes, relations: dict[int, Relation], wanted: Collection[str] | None
) -> Change:
    (oid,) = _U32.unpack_from(payload, 1)
    columns = relations[oid].columns
    at = 5
    before: Tuple | None = None
    after: Tuple | None = None
    toasted = False
    if kind != b"I" and payload[at] in _OLD:
        before, at, _ = _tuple(payload, at + 1, columns, wanted)
    if kind != b"D":
        if payload[at] != _NEW:
            raise ValueError(f"{kind!r} message without its new tuple")
        after, at, toasted = _tuple(payload, at + 1, columns, wanted)
        if toasted and before is not None:
            old = before
            after = {name: old.get(name) if v is UNCHANGED else v for name, v in after.items()}
    return oid, before, after


def _tuple(
    payload: bytes, at: int, columns: tuple[str, ...], wanted: Collection[str] | None
) -> tuple[Tuple, int, bool]:
    """Return the values of the tuple at `at`, where it ends, and whether a value is
    UNCHANGED. The loop runs once per column of every row: kept to its bare steps."""
    count = (payload[at] << 8) | payload[at + 1]
    at += 2
    values: Tuple = {}
    toasted = False
    length = _U32.unpack_from
    for column in columns[:count]:
        kind = payload[at]
        if kind == _TEXT:
            start = at + 5
            at = start + length(payload, at + 1)[0]
            if wanted is None or column in wanted:
                values[column] = payload[start:at].decode()  # UTF-8
        elif kind == _NULL:
            values[column] = None
            at += 1
        elif kind == _UNCHANGED:
            values[column] = UNCHANGED
            toasted = True
            at += 1
        else:
            raise ValueError(f"column {column!r}: unknown tuple data kind {bytes([kind])!r}")
    if at > len(payload):
        raise ValueError("tuple past the message's end")
    return values, at, toasted


def _cstring(payload: bytes, at: int) -> tuple[str, int]:
    end = payload.index(b"\0", at)
    return payload[at:end].decode("utf-8"), end + 1


def lsn_text(lsn: int) -> str:
    """Return an LSN as PostgreSQL writes it (`16/B374D848`)."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    """Return the LSN `text` names; raises ValueError for one that is not an LSN."""
    high, slash, low = text.partition("/")
    if not slash:
        raise ValueError(f"{text!r} is not an LSN")
    return (int(high, 16) << 32) | int(low, 16)
