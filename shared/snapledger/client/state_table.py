"""A processor's state as the Arrow table a kv-parquet snapshot holds, checked and sorted.

The columns are those of ``jobs.schema.STATE_SCHEMA`` (what the Spark jobs read back):
``key`` string not null, ``value`` binary (null allowed), ``lsn`` int64 not null, the LSN
of the put that set the value. :func:`to_state_table` accepts what a producer has at hand
(an Arrow table, record batches, ``(key, value)`` pairs or a mapping), casts columns where
the cast loses nothing, and refuses the rest with an error that names the column, row or
key at fault: a snapshot the jobs would refuse is never written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from typing import Any, TypeAlias

from snapledger.client._arrow import pa, pc

STATE_ARROW_SCHEMA = pa.schema(
    [
        pa.field("key", pa.string(), nullable=False),
        pa.field("value", pa.binary(), nullable=True),
        pa.field("lsn", pa.int64(), nullable=False),
    ]
)
STATE_COLUMNS = tuple(STATE_ARROW_SCHEMA.names)
_ACCEPTED = (
    "a pyarrow.Table or RecordBatch, an iterable of RecordBatch, an iterable of "
    "(key: str, value: bytes | None) pairs, or a mapping of key to value"
)

#: What the data argument of ``SnapshotWriter.write`` may be (see ``_ACCEPTED``).
StateData: TypeAlias = (
    pa.Table
    | pa.RecordBatch
    | pa.RecordBatchReader
    | Mapping[str, bytes | None]
    | Iterable[pa.RecordBatch]
    | Iterable[tuple[str, bytes | None]]
)


def to_state_table(data: StateData, lsn: int) -> pa.Table:
    """``data`` as a key-sorted table of ``STATE_ARROW_SCHEMA`` holding the state at ``lsn``.

    Rows without an ``lsn`` column get ``lsn`` itself. Raises TypeError for a column or
    item of the wrong type, ValueError for a missing or extra column, a null key, a
    duplicate key, or a row whose lsn is negative or above ``lsn``.
    """
    table = _conform(_as_table(data, lsn), lsn)
    _check_rows(table, lsn)
    ordered = table.sort_by([("key", "ascending")])
    _check_unique(ordered)
    return ordered


# -- input forms ------------------------------------------------------------------------


def _as_table(data: Any, lsn: int) -> pa.Table:
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch | pa.RecordBatchReader):
        return (
            pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data.read_all()
        )
    if isinstance(data, Mapping):
        return _from_pairs(iter(data.items()), lsn)
    if isinstance(data, str | bytes | bytearray | memoryview) or not isinstance(data, Iterable):
        raise TypeError(f"snapshot data is a {type(data).__name__}: pass {_ACCEPTED}")
    return _from_iterable(iter(data), lsn)


def _from_iterable(items: Iterator[Any], lsn: int) -> pa.Table:
    """Record batches or (key, value) pairs, told apart by the first item."""
    first = next(items, None)
    if first is None:
        return STATE_ARROW_SCHEMA.empty_table()
    if isinstance(first, pa.RecordBatch):
        return _from_batches(chain([first], items))
    return _from_pairs(chain([first], items), lsn)


def _from_batches(batches: Iterator[Any]) -> pa.Table:
    collected = []
    for index, batch in enumerate(batches):
        if not isinstance(batch, pa.RecordBatch):
            raise TypeError(
                f"snapshot data item {index} is a {type(batch).__name__}, after a RecordBatch: "
                "pass record batches only"
            )
        collected.append(batch)
    try:
        return pa.Table.from_batches(collected)
    except pa.ArrowInvalid as exc:
        raise ValueError(
            f"the record batches do not share one schema ({exc}): give every batch the "
            "same columns and types"
        ) from exc


def _from_pairs(pairs: Iterator[Any], lsn: int) -> pa.Table:
    keys: list[str | None] = []
    values: list[bytes | bytearray | memoryview | None] = []
    for index, pair in enumerate(pairs):
        key, value = _unpack_pair(index, pair)
        keys.append(key)
        values.append(value)
    return pa.table(
        {
            "key": pa.array(keys, pa.string()),
            "value": pa.array(values, pa.binary()),
            "lsn": pa.repeat(pa.scalar(lsn, pa.int64()), len(keys)),
        }
    )


def _unpack_pair(index: int, pair: Any) -> tuple[str | None, bytes | bytearray | memoryview | None]:
    if not isinstance(pair, tuple | list) or len(pair) != 2:
        raise TypeError(
            f"snapshot data item {index} is {_show(pair)}: expected a (key, value) pair"
        )
    key, value = pair
    if key is not None and not isinstance(key, str):
        raise TypeError(
            f"snapshot data item {index}: key {_show(key)} is a {type(key).__name__}: keys "
            "are str (encode other keys as text first)"
        )
    if value is not None and not isinstance(value, bytes | bytearray | memoryview):
        raise TypeError(
            f"snapshot data item {index} (key {key!r}): value {_show(value)} is a "
            f"{type(value).__name__}: values are bytes or None (serialize them first)"
        )
    return key, value


def _show(thing: Any) -> str:
    text = repr(thing)
    return text if len(text) <= 80 else text[:77] + "..."


# -- columns ----------------------------------------------------------------------------


def _conform(table: pa.Table, lsn: int) -> pa.Table:
    """The table's key, value and lsn columns cast to the state types (lsn added if absent)."""
    names = table.column_names
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise ValueError(f"columns {duplicated} appear more than once: keep one of each")
    missing = [name for name in ("key", "value") if name not in names]
    extra = [name for name in names if name not in STATE_COLUMNS]
    if missing or extra:
        raise ValueError(
            f"the snapshot table has columns {names}"
            + (f", missing {missing}" if missing else "")
            + (f", extra {extra}" if extra else "")
            + ": a state table has key (string), value (binary) and, optionally, lsn (int64); "
            "select or rename the columns first"
        )
    key = _cast("key", table.column("key"), _is_text, pa.string())
    value = _cast("value", table.column("value"), _is_bytes_like, pa.binary())
    if "lsn" in names:
        lsn_column = _cast("lsn", table.column("lsn"), pa.types.is_integer, pa.int64())
    else:
        lsn_column = pa.repeat(pa.scalar(lsn, pa.int64()), table.num_rows)
    return pa.Table.from_arrays([key, value, lsn_column], schema=STATE_ARROW_SCHEMA)


def _cast(name: str, column: pa.ChunkedArray, accepts: Any, target: pa.DataType) -> Any:
    """``column`` as ``target``: TypeError for a type that does not cast without loss,
    ValueError for a value that does not fit (an unsigned lsn above int64)."""
    source = column.type
    if pa.types.is_dictionary(source):
        source = source.value_type
    if not (accepts(source) or pa.types.is_null(source) or source == target):
        raise TypeError(
            f"column {name!r} is {column.type}, which does not cast to {target} without loss: "
            f"give it type {target}"
        )
    try:
        return column.cast(target, safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ValueError(f"column {name!r} does not fit {target}: {exc}") from exc


def _is_text(data_type: pa.DataType) -> bool:
    return bool(
        pa.types.is_string(data_type)
        or pa.types.is_large_string(data_type)
        or pa.types.is_string_view(data_type)
    )


def _is_bytes_like(data_type: pa.DataType) -> bool:
    return bool(
        _is_text(data_type)
        or pa.types.is_binary(data_type)
        or pa.types.is_large_binary(data_type)
        or pa.types.is_binary_view(data_type)
        or pa.types.is_fixed_size_binary(data_type)
    )


# -- rows -------------------------------------------------------------------------------


def _check_rows(table: pa.Table, lsn: int) -> None:
    """No null key, no null lsn, every lsn in [0, ``lsn``]."""
    keys, lsns = table.column("key"), table.column("lsn")
    row = _first(pc.is_null(keys))
    if row is not None:
        raise ValueError(f"row {row} has a null key: every row needs a key")
    row = _first(pc.is_null(lsns))
    if row is not None:
        raise ValueError(f"row {row} (key {keys[row].as_py()!r}) has a null lsn")
    row = _first(pc.greater(lsns, lsn))
    if row is not None:
        raise ValueError(
            f"row {row} (key {keys[row].as_py()!r}) has lsn {lsns[row].as_py()}, above the "
            f"snapshot's lsn {lsn}: a snapshot at lsn {lsn} holds only records with lsn <= "
            f"{lsn}; write it at a higher lsn, or leave that record out"
        )
    row = _first(pc.less(lsns, 0))
    if row is not None:
        raise ValueError(
            f"row {row} (key {keys[row].as_py()!r}) has a negative lsn {lsns[row].as_py()}"
        )


def _check_unique(ordered: pa.Table) -> None:
    """No key twice (``ordered`` is sorted by key, so duplicates are neighbours)."""
    keys = ordered.column("key").combine_chunks()
    if len(keys) < 2:
        return
    same = pc.equal(keys.slice(1), keys.slice(0, len(keys) - 1))
    row = _first(same)
    if row is None:
        return
    repeats = pc.sum(same).as_py()
    raise ValueError(
        f"key {keys[row].as_py()!r} appears more than once ({repeats} duplicate row(s) in all): "
        "a snapshot holds one value per key; keep the latest value of each key"
    )


def _first(mask: Any) -> int | None:
    """The index of the first true of a boolean array, or None."""
    if not pc.any(mask).as_py():
        return None
    return int(pc.index(mask, True).as_py())
