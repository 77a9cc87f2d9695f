"""Decode the row images of a binlog rows event: only the columns a followed table needs.

mysql-replication decodes every column of every row through a chain of Python calls per
value, most of a binlog read. This reads the rest of the event's bytes at once and
decodes only the named columns, stepping over the others by their size, into the same
values the library gives. An event it cannot read so (a column type it does not know,
a partial JSON update, bytes that do not decode) is given back to the library whole.
"""

from __future__ import annotations

import codecs
import datetime
import struct
from collections.abc import Callable, Collection
from typing import Any

from pymysqlreplication.constants import BINLOG, FIELD_TYPE
from pymysqlreplication.row_event import (
    DeleteRowsEvent,
    RowsEvent,
    TableMapEvent,
    UpdateRowsEvent,
    WriteRowsEvent,
)

Row = dict[str, Any]
Images = list[tuple[Row | None, Row | None]]
# Reads one value at an offset of the event's bytes: (the value, the offset after it).
Step = Callable[[bytes, int], tuple[Any, int]]
# A column of the layout: its name (None: stepped over) and how to read it.
Column = tuple[str | None, Step]

_FIXED: dict[int, tuple[str, str]] = {
    FIELD_TYPE.TINY: ("<b", "<B"),
    FIELD_TYPE.SHORT: ("<h", "<H"),
    FIELD_TYPE.LONG: ("<i", "<I"),
    FIELD_TYPE.LONGLONG: ("<q", "<Q"),
    FIELD_TYPE.FLOAT: ("<f", "<f"),
    FIELD_TYPE.DOUBLE: ("<d", "<d"),
}
_PARTIAL = getattr(BINLOG, "PARTIAL_UPDATE_ROWS_EVENT", -1)


class Unreadable(Exception):
    """A column or an event this module leaves to mysql-replication."""


class Layouts:
    """The layout of each table map seen, made once per table map."""

    def __init__(self, wanted: Collection[str]) -> None:
        self._wanted = frozenset(wanted)
        self._made: dict[int, tuple[TableMapEvent, list[Column] | None]] = {}

    def images(self, event: WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent) -> Images:
        """Return (before, after) of each row `event` changes, with the wanted columns
        only when this module can read the event, else every column as the library
        decodes it."""
        table_map = event.table_map[event.table_id]
        made = self._made.get(event.table_id)
        if made is None or made[0] is not table_map:
            made = self._made[event.table_id] = (table_map, _layout(table_map, self._wanted))
        layout = made[1]
        packet = event.packet
        if layout is None or event.event_type == _PARTIAL:
            return _library(event)
        data = packet.read(event.event_size - packet.read_bytes)
        try:
            return _images(event, layout, data)
        except (Unreadable, ValueError, IndexError, struct.error):
            packet.unread(data)  # decoded again by the library, which says what is wrong
            return _library(event)


def _images(
    event: WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent, layout: list[Column], data: bytes
) -> Images:
    end = len(data)
    at = 0
    found: Images = []
    if isinstance(event, UpdateRowsEvent):
        before_cols = _present(event.columns_present_bitmap, layout)
        after_cols = _present(event.columns_present_bitmap2, layout)
        while at < end:
            before, at = _row(data, at, before_cols)
            after, at = _row(data, at, after_cols)
            found.append((before, after))
        return found
    columns = _present(event.columns_present_bitmap, layout)
    inserted = isinstance(event, WriteRowsEvent)
    while at < end:
        row, at = _row(data, at, columns)
        found.append((None, row) if inserted else (row, None))
    return found


def _row(data: bytes, at: int, columns: list[Column]) -> tuple[Row, int]:
    """Return the wanted values of the row image at `at` and the offset after it."""
    nulls = (len(columns) + 7) >> 3
    bitmap = int.from_bytes(data[at : at + nulls], "little")
    at += nulls
    row: Row = {}
    for n, (name, step) in enumerate(columns):
        if bitmap >> n & 1:
            if name is not None:
                row[name] = None
            continue
        value, at = step(data, at)
        if name is not None:
            row[name] = value
    if at > len(data):
        raise Unreadable("row image past the event's end")
    return row, at


def _present(bitmap: bytes, layout: list[Column]) -> list[Column]:
    """Return the columns of `layout` that an image holds (all of them with FULL images)."""
    bits = int.from_bytes(bitmap, "little")
    return [column for n, column in enumerate(layout) if bits >> n & 1]


def _library(event: WriteRowsEvent | UpdateRowsEvent | DeleteRowsEvent) -> Images:
    found: Images = []
    for row in event.rows:
        if isinstance(event, UpdateRowsEvent):
            found.append((row["before_values"], row["after_values"]))
        elif isinstance(event, WriteRowsEvent):
            found.append((None, row["values"]))
        else:
            found.append((row["values"], None))
    return found


def _layout(table_map: TableMapEvent, wanted: frozenset[str]) -> list[Column] | None:
    """Return how to read each column of `table_map`'s rows; None when one of them
    cannot be read here (or a wanted one has no name: no binlog_row_metadata=FULL)."""
    layout: list[Column] = []
    names = {column.name for column in table_map.columns}
    if not wanted <= names:
        return None
    for column in table_map.columns:
        name = column.name if column.name in wanted else None
        try:
            layout.append((name, _step(column) if name else _skip(column)))
        except (Unreadable, AttributeError):  # a type or its metadata it does not know
            return None
    return layout


def _step(column: Any) -> Step:
    """Return the reader of a column's value; raises Unreadable for a type it lacks."""
    kind = column.type
    if kind in _FIXED:
        form = struct.Struct(_FIXED[kind][1 if column.unsigned else 0])
        size = form.size
        unpack = form.unpack_from
        return lambda data, at: (unpack(data, at)[0], at + size)
    if kind == FIELD_TYPE.INT24:
        signed = not column.unsigned
        return lambda data, at: (
            int.from_bytes(data[at : at + 3], "little", signed=signed),
            at + 3,
        )
    if kind == FIELD_TYPE.YEAR:
        return lambda data, at: (data[at] + 1900, at + 1)
    if kind in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING):
        return _string(2 if column.max_length > 255 else 1, column.character_set_name)
    if kind == FIELD_TYPE.BLOB:
        return _string(column.length_size, column.character_set_name)
    if kind == FIELD_TYPE.DATETIME2:
        return _datetime2(column.fsp)
    if kind == FIELD_TYPE.TIMESTAMP2:
        return _timestamp2(column.fsp)
    if kind == FIELD_TYPE.DATE:
        return _date
    raise Unreadable(f"column type {kind}")


def _skip(column: Any) -> Step:
    """Return a step over a column's value; raises Unreadable for a type it cannot size."""
    kind = column.type
    size: int | None = None
    if kind in _FIXED:
        size = struct.calcsize(_FIXED[kind][0])
    elif kind in (FIELD_TYPE.INT24, FIELD_TYPE.DATE):
        size = 3
    elif kind == FIELD_TYPE.YEAR:
        size = 1
    elif kind == FIELD_TYPE.DATETIME2:
        size = 5 + _fsp_size(column.fsp)
    elif kind == FIELD_TYPE.TIMESTAMP2:
        size = 4 + _fsp_size(column.fsp)
    elif kind == FIELD_TYPE.TIME2:
        size = 3 + _fsp_size(column.fsp)
    elif kind in (FIELD_TYPE.ENUM, FIELD_TYPE.SET):
        size = column.size
    elif kind == FIELD_TYPE.BIT:
        size = column.bytes
    elif kind == FIELD_TYPE.NEWDECIMAL:
        size = _decimal_size(column.precision - column.decimals) + _decimal_size(column.decimals)
    if size is not None:
        fixed = size
        return lambda data, at: (None, at + fixed)
    if kind in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING):
        prefix = 2 if column.max_length > 255 else 1
    elif kind in (FIELD_TYPE.BLOB, FIELD_TYPE.GEOMETRY, FIELD_TYPE.JSON):
        prefix = column.length_size
    else:
        raise Unreadable(f"column type {kind}")
    return lambda data, at: (None, at + prefix + int.from_bytes(data[at : at + prefix], "little"))


def _string(prefix: int, charset: str | None) -> Step:
    """Return the reader of a length-prefixed string, decoded as the library decodes it:
    by the column's character set, as bytes when Python has no codec for it."""
    encoding: str | None = "utf-8"
    if charset is not None:
        encoding = RowsEvent.charset_to_encoding(charset)
        try:
            codecs.lookup(str(encoding))
        except LookupError:
            encoding = None

    def read(data: bytes, at: int) -> tuple[Any, int]:
        start = at + prefix
        stop = start + int.from_bytes(data[at:start], "little")
        if stop > len(data):
            raise Unreadable("string past the event's end")
        raw = data[start:stop]
        if encoding is None:
            # The library's decode of no bytes gives "" even without a codec.
            return (raw or ""), stop
        return raw.decode(encoding), stop

    return read


def _decimal_size(digits: int) -> int:
    """Return the bytes of a DECIMAL's part of `digits` digits: 4 per 9, fewer for the rest."""
    return digits // 9 * 4 + (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)[digits % 9]


def _fsp_size(fsp: int) -> int:
    return (fsp + 1) // 2


def _fraction(data: bytes, at: int, fsp: int) -> int:
    """Return the microseconds of a fractional part of `fsp` digits at `at`."""
    size = _fsp_size(fsp)
    if not size:
        return 0
    value = int.from_bytes(data[at : at + size], "big", signed=True)
    if fsp % 2:
        value = int(value / 10)
    return int(value * 10 ** (6 - fsp))


def _datetime2(fsp: int) -> Step:
    """DATETIME(fsp): 40 bits (sign, year*13+month, day, hour, minute, second), big
    endian, then the fraction; None for a zero or invalid date, as the library says."""
    size = 5 + _fsp_size(fsp)

    def read(data: bytes, at: int) -> tuple[Any, int]:
        packed = int.from_bytes(data[at : at + 5], "big")
        year_month = packed >> 22 & 0x1FFFF
        try:
            value = datetime.datetime(
                year_month // 13,
                year_month % 13,
                packed >> 17 & 0x1F,
                packed >> 12 & 0x1F,
                packed >> 6 & 0x3F,
                packed & 0x3F,
            )
        except ValueError:
            return None, at + size
        micro = _fraction(data, at + 5, fsp)
        return (value.replace(microsecond=micro) if micro > 0 else value), at + size

    return read


def _timestamp2(fsp: int) -> Step:
    """TIMESTAMP(fsp): signed big-endian epoch seconds then the fraction, as naive UTC."""
    size = 4 + _fsp_size(fsp)
    epoch = datetime.datetime(1970, 1, 1)

    def read(data: bytes, at: int) -> tuple[Any, int]:
        seconds = int.from_bytes(data[at : at + 4], "big", signed=True)
        value = epoch + datetime.timedelta(seconds=seconds)
        micro = _fraction(data, at + 4, fsp)
        return (value.replace(microsecond=micro) if micro > 0 else value), at + size

    return read


def _date(data: bytes, at: int) -> tuple[Any, int]:
    """DATE: 3 bytes little endian (day, month, year bits); None for a zero date."""
    packed = int.from_bytes(data[at : at + 3], "little")
    year, month, day = packed >> 9 & 0x7FFF, packed >> 5 & 0xF, packed & 0x1F
    if not (year and month and day):
        return None, at + 3
    return datetime.date(year, month, day), at + 3
