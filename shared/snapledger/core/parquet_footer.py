"""A Parquet file's top-level schema and row count, read from its footer in pure Python.

A Parquet file is ``PAR1 <data> <footer> <4-byte little-endian footer length> PAR1``; the
footer is a Thrift Compact Protocol ``FileMetaData``. This module decodes just enough of it
(field 2, the schema, and field 3, the row count; never the row groups, which can be large)
to check a snapshot's columns where pyarrow is not available (the Lambda functions), from one
ranged read of the file's tail, or two when the footer is longer than the first read.

Every malformed input raises ParquetFooterError (a ValueError): never IndexError, never a hang.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from snapledger.limits import MAX_PARQUET_FOOTER_BYTES

MAGIC = b"PAR1"
#: The bytes after the footer: its length (4 bytes, little-endian) and the magic.
TAIL_BYTES = 8
#: The first read of a file's tail: a footer of a few columns and row groups fits.
FIRST_READ = 64 * 1024
_MIN_FILE = len(MAGIC) + TAIL_BYTES  # a leading magic, an empty footer, the tail
_MAX_DEPTH = 64  # Thrift nesting skipped before the input is judged garbage

# Thrift Compact Protocol type ids (0 ends a struct).
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP = range(12)
_STRUCT = 12

_PHYSICAL = (
    "BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY",
)  # fmt: skip
_REPETITION = ("REQUIRED", "OPTIONAL", "REPEATED")
#: ConvertedType (the older annotation), by value, as the LogicalType it stands for.
_CONVERTED = (
    "STRING", "MAP", "MAP_KEY_VALUE", "LIST", "ENUM", "DECIMAL", "DATE", "TIME", "TIME",
    "TIMESTAMP", "TIMESTAMP",
    *(f"INTEGER({bits},{sign})" for sign in ("unsigned", "signed") for bits in (8, 16, 32, 64)),
    "JSON", "BSON", "INTERVAL",
)  # fmt: skip
#: LogicalType union members by field id (10, INTEGER, is spelled out with its parameters).
_LOGICAL = {
    1: "STRING", 2: "MAP", 3: "LIST", 4: "ENUM", 5: "DECIMAL", 6: "DATE", 7: "TIME",
    8: "TIMESTAMP", 9: "INTERVAL", 11: "UNKNOWN", 12: "JSON", 13: "BSON", 14: "UUID",
    15: "FLOAT16", 16: "VARIANT", 17: "GEOMETRY", 18: "GEOGRAPHY",
}  # fmt: skip


class ParquetFooterError(ValueError):
    """The bytes are not a readable Parquet footer: the message says what is wrong."""


class FooterIncompleteError(ParquetFooterError):
    """The tail given is shorter than the footer: read the last ``needed`` bytes instead."""

    def __init__(self, needed: int) -> None:
        super().__init__(f"the Parquet footer needs the last {needed} bytes of the file")
        self.needed = needed


@dataclass(frozen=True)
class Column:
    """A top-level column; a nested one (struct, list, map) has physical_type ``GROUP``."""

    name: str
    physical_type: str
    logical_type: str | None
    repetition: str

    def type_text(self) -> str:
        """``BYTE_ARRAY STRING``, or the physical type alone when there is no annotation."""
        return f"{self.physical_type} {self.logical_type or ''}".rstrip()

    def describe(self) -> str:
        """``key BYTE_ARRAY STRING``: the name, physical type and annotation."""
        return f"{self.name} {self.type_text()}"


@dataclass(frozen=True)
class FooterSchema:
    columns: tuple[Column, ...]
    num_rows: int


def footer_length(tail: bytes) -> int:
    """The footer length stated by the last 8 bytes of a file; ParquetFooterError if no magic."""
    if len(tail) < TAIL_BYTES or tail[-len(MAGIC) :] != MAGIC:
        hint = " (an encrypted footer, PARE, is not supported)" if tail[-4:] == b"PARE" else ""
        raise ParquetFooterError(
            f"file does not end with the Parquet magic PAR1: not a Parquet file{hint}"
        )
    return int.from_bytes(tail[-TAIL_BYTES : -len(MAGIC)], "little")


def parse_footer(tail: bytes, file_size: int) -> FooterSchema:
    """The schema and row count from ``tail``, the last ``len(tail)`` bytes of the file.

    Raises FooterIncompleteError(needed) when the footer starts before ``tail`` does, and
    ParquetFooterError when the bytes are not a readable Parquet footer.
    """
    if len(tail) > file_size:
        raise ParquetFooterError(f"{len(tail)} tail bytes given for a file of {file_size} bytes")
    if file_size < _MIN_FILE:
        raise ParquetFooterError(f"a file of {file_size} bytes is too small to be Parquet")
    if len(tail) < TAIL_BYTES:
        raise FooterIncompleteError(TAIL_BYTES)
    length = footer_length(tail)
    if length > MAX_PARQUET_FOOTER_BYTES:
        raise ParquetFooterError(
            f"the footer is {length:,} bytes, over the {MAX_PARQUET_FOOTER_BYTES:,}-byte limit "
            "(a key/value/lsn file's footer is a few KiB): not read; write row groups of "
            "at least a few MiB"
        )
    if length > file_size - _MIN_FILE:
        raise ParquetFooterError(
            f"footer length {length} does not fit in a file of {file_size} bytes: corrupt Parquet"
        )
    if len(tail) < length + TAIL_BYTES:
        raise FooterIncompleteError(length + TAIL_BYTES)
    if len(tail) == file_size and tail[: len(MAGIC)] != MAGIC:
        raise ParquetFooterError("file does not start with the Parquet magic PAR1")
    end = len(tail) - TAIL_BYTES
    return _file_metadata(_Reader(bytes(tail[end - length : end])))


def read_footer(
    read_tail: Callable[[int], bytes], file_size: int, *, first_read: int | None = None
) -> FooterSchema:
    """The schema of a file of ``file_size`` bytes, ``read_tail(n)`` giving its last n bytes:
    one read of ``first_read`` bytes (a footer is rarely longer), or a second of the
    footer's exact length when it is."""
    try:
        first = FIRST_READ if first_read is None else first_read
        return parse_footer(read_tail(min(first, file_size)), file_size)
    except FooterIncompleteError as incomplete:
        if incomplete.needed > file_size:
            raise ParquetFooterError(
                f"a footer of {incomplete.needed} bytes does not fit in {file_size}"
            ) from None
        return parse_footer(read_tail(incomplete.needed), file_size)


def kv_parquet_problems(schema: FooterSchema) -> list[str]:
    """Why the schema is not a kv-parquet snapshot (key, value, lsn); empty when it is one."""
    by_name: dict[str, Column] = {}
    for each in schema.columns:
        by_name.setdefault(each.name, each)
    checks = (
        ("key", "BYTE_ARRAY (string)", lambda c: c.type_text() == "BYTE_ARRAY STRING"),
        ("value", "BYTE_ARRAY (binary)", _is_binary),
        ("lsn", "INT64", lambda c: c.type_text() in ("INT64", "INT64 INTEGER(64,signed)")),
    )
    problems = [f"missing column {name!r}" for name, _, _ in checks if name not in by_name]
    missing = bool(problems)
    for name, expected, fits in checks:
        column = by_name.get(name)
        if column is None:
            continue
        if not fits(column):
            problems.append(f"column {name!r} is {column.type_text()}, expected {expected}")
        elif column.repetition == "REPEATED":
            problems.append(f"column {name!r} is REPEATED, expected one value a row")
    if missing:
        found = ", ".join(c.describe() for c in schema.columns) or "none"
        problems.append(f"columns found: {found}")
    return problems


def _is_binary(column: Column) -> bool:
    return column.physical_type == "BYTE_ARRAY" and column.logical_type != "STRING"


class _Reader:
    """A cursor over Thrift Compact Protocol bytes; every read is bounds-checked."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def fail(self, what: str) -> ParquetFooterError:
        return ParquetFooterError(f"Parquet footer byte {self.pos} of {len(self.data)}: {what}")

    def advance(self, count: int) -> int:
        """Move past ``count`` bytes; return where they start."""
        if count > len(self.data) - self.pos:
            raise self.fail(f"truncated ({count} more bytes expected)")
        self.pos += count
        return self.pos - count

    def byte(self) -> int:
        return self.data[self.advance(1)]

    def varint(self) -> int:
        result = shift = 0
        while shift < 70:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7
        raise self.fail("varint longer than 10 bytes")

    def integer(self, ftype: int, what: str) -> int:
        """An i16/i32/i64 field (zigzag varint) of the expected type."""
        if ftype not in (_I16, _I32, _I64):
            raise self.fail(f"{what} has Thrift type {ftype}, expected an integer")
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def string(self, ftype: int, what: str) -> str:
        if ftype != _BINARY:
            raise self.fail(f"{what} has Thrift type {ftype}, expected a string")
        start = self.advance(self.varint())
        try:
            return self.data[start : self.pos].decode()
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not UTF-8") from None

    def fields(self) -> Iterator[tuple[int, int]]:
        """A struct's (type, field id) headers up to its stop; read or skip each value."""
        last = 0
        while (header := self.byte()) != _STOP:
            ftype, delta = header & 0x0F, header >> 4
            if not _TRUE <= ftype <= _STRUCT:
                raise self.fail(f"invalid Thrift field type {ftype}")
            last = last + delta if delta else self.integer(_I16, "field id")
            yield ftype, last

    def collection(self) -> tuple[int, int]:
        """A list or set header: (element type, size)."""
        header = self.byte()
        size = header >> 4 if header >> 4 != 15 else self.varint()
        etype = header & 0x0F
        if not _TRUE <= etype <= _STRUCT or size > len(self.data) - self.pos:
            raise self.fail(f"invalid list header (type {etype}, {size} elements)")
        return etype, size

    def skip(self, ftype: int, depth: int, in_collection: bool = False) -> None:
        """Skip a value of Thrift type ``ftype`` (a bool in a list or map is one byte)."""
        if depth > _MAX_DEPTH:
            raise self.fail(f"nested deeper than {_MAX_DEPTH}")
        if ftype in (_TRUE, _FALSE, _BYTE):
            self.advance(1 if in_collection or ftype == _BYTE else 0)
        elif ftype in (_I16, _I32, _I64):
            self.varint()
        elif ftype == _DOUBLE:
            self.advance(8)
        elif ftype == _BINARY:
            self.advance(self.varint())
        elif ftype in (_LIST, _SET):
            etype, size = self.collection()
            for _ in range(size):
                self.skip(etype, depth + 1, in_collection=True)
        elif ftype == _MAP:
            self.skip_map(depth)
        elif ftype == _STRUCT:
            for field_type, _ in self.fields():
                self.skip(field_type, depth + 1)
        else:
            raise self.fail(f"invalid Thrift type {ftype}")

    def skip_map(self, depth: int) -> None:
        size = self.varint()
        kinds = self.byte() if size else 0
        if size * 2 > len(self.data) - self.pos:
            raise self.fail(f"map of {size} entries is longer than the footer")
        for _ in range(size):
            self.skip(kinds >> 4, depth + 1, in_collection=True)
            self.skip(kinds & 0x0F, depth + 1, in_collection=True)


def _file_metadata(r: _Reader) -> FooterSchema:
    """FileMetaData fields 2 (schema) and 3 (num_rows); stops before the row groups."""
    columns: tuple[Column, ...] | None = None
    num_rows: int | None = None
    for ftype, fid in r.fields():
        if fid == 2:
            columns = _schema(r, ftype)
        elif fid == 3:
            num_rows = r.integer(ftype, "num_rows")
        else:
            r.skip(ftype, 1)
        if columns is not None and num_rows is not None:
            break
    if columns is None or num_rows is None or num_rows < 0:
        raise r.fail(f"no schema or no valid num_rows in FileMetaData (num_rows {num_rows})")
    return FooterSchema(columns, num_rows)


def _schema(r: _Reader, ftype: int) -> tuple[Column, ...]:
    """The root's children from the depth-first list of SchemaElements."""
    etype, size = r.collection() if ftype == _LIST else (None, 0)
    if etype != _STRUCT or size == 0:
        raise r.fail("the schema is not a non-empty list of SchemaElements")
    elements = [_schema_element(r) for _ in range(size)]
    columns, at = [], 1
    for _ in range(elements[0][1]):
        if at >= size:
            raise r.fail("the schema ends before the root's columns do")
        column, pending = elements[at]
        at += 1
        while pending > 0:  # skip the column's descendants
            if at >= size:
                raise r.fail(f"the schema ends inside column {column.name!r}")
            pending += elements[at][1] - 1
            at += 1
        columns.append(column)
    if at != size:
        raise r.fail(f"{size - at} schema elements are outside the root's tree")
    return tuple(columns)


def _schema_element(r: _Reader) -> tuple[Column, int]:
    """One SchemaElement as (Column, num_children); the root's repetition may be absent."""
    name = physical = logical = converted = None
    repetition, children = "REQUIRED", 0
    for ftype, fid in r.fields():
        if fid == 1:
            physical = _enum(r, r.integer(ftype, "type"), _PHYSICAL, "physical type")
        elif fid == 3:
            repetition = _enum(r, r.integer(ftype, "repetition"), _REPETITION, "repetition")
        elif fid == 4:
            name = r.string(ftype, "column name")
        elif fid == 5:
            children = r.integer(ftype, "num_children")
        elif fid == 6:
            value = r.integer(ftype, "converted_type")
            converted = _CONVERTED[value] if 0 <= value < len(_CONVERTED) else f"CONVERTED_{value}"
        elif fid == 10 and ftype == _STRUCT:
            logical = _logical_type(r)
        else:
            r.skip(ftype, 2)
    if name is None or not 0 <= children <= len(r.data):
        raise r.fail(f"schema element {name!r} has no name or {children} children")
    return Column(name, physical or "GROUP", logical or converted, repetition), children


def _enum(r: _Reader, value: int, names: tuple[str, ...], what: str) -> str:
    if not 0 <= value < len(names):
        raise r.fail(f"{what} {value} is not one Parquet defines")
    return names[value]


def _logical_type(r: _Reader) -> str | None:
    """The LogicalType union's member, e.g. ``STRING`` or ``INTEGER(64,signed)``."""
    found = None
    for ftype, fid in r.fields():
        if fid == 10 and ftype == _STRUCT:
            bits, signed = 0, False
            for int_type, int_fid in r.fields():
                if int_fid == 1 and int_type == _BYTE:
                    bits = r.byte()
                elif int_fid == 2 and int_type in (_TRUE, _FALSE):
                    signed = int_type == _TRUE
                else:
                    r.skip(int_type, 4)
            found = f"INTEGER({bits},{'signed' if signed else 'unsigned'})"
        else:
            r.skip(ftype, 3)
            found = _LOGICAL.get(fid, f"LOGICAL_{fid}")
    return found
