"""core/parquet_footer.py: real pyarrow files, hand-built footers, and fuzzed garbage."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapledger.core.parquet_footer import (
    MAGIC,
    TAIL_BYTES,
    Column,
    FooterIncompleteError,
    FooterSchema,
    ParquetFooterError,
    footer_length,
    kv_parquet_problems,
    parse_footer,
    read_footer,
)
from snapledger.limits import MAX_PARQUET_FOOTER_BYTES

REPO = Path(__file__).resolve().parents[2]


def write(table: pa.Table, **options: object) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(table, buffer, **options)
    return buffer.getvalue()


def schema_of(data: bytes) -> FooterSchema:
    return parse_footer(data, len(data))


def kv_table(rows: int = 3, **columns: pa.Array) -> pa.Table:
    base = {
        "key": pa.array([f"k{i}" for i in range(rows)], pa.string()),
        "value": pa.array([b"v%d" % i for i in range(rows)], pa.binary()),
        "lsn": pa.array(range(rows), pa.int64()),
    }
    return pa.table(base | columns)


def footer_of(data: bytes) -> bytes:
    return data[-TAIL_BYTES - footer_length(data) : -TAIL_BYTES]


def wrap(footer: bytes) -> bytes:
    """A file that is only a footer: the smallest thing parse_footer accepts."""
    return MAGIC + footer + len(footer).to_bytes(4, "little") + MAGIC


KV = write(kv_table())


# --- real files -------------------------------------------------------------------------------


def test_the_kv_schema_parses_to_its_columns_and_row_count():
    schema = schema_of(KV)
    assert schema == FooterSchema(
        (
            Column("key", "BYTE_ARRAY", "STRING", "OPTIONAL"),
            Column("value", "BYTE_ARRAY", None, "OPTIONAL"),
            Column("lsn", "INT64", None, "OPTIONAL"),
        ),
        num_rows=3,
    )
    assert kv_parquet_problems(schema) == []
    assert [c.describe() for c in schema.columns] == [
        "key BYTE_ARRAY STRING",
        "value BYTE_ARRAY",
        "lsn INT64",
    ]


def test_non_null_fields_are_required():
    table = kv_table()
    fields = [pa.field(f.name, f.type, nullable=f.name == "value") for f in table.schema]
    schema = schema_of(write(pa.Table.from_arrays(table.columns, schema=pa.schema(fields))))
    assert [c.repetition for c in schema.columns] == ["REQUIRED", "OPTIONAL", "REQUIRED"]
    assert kv_parquet_problems(schema) == []


def test_wrong_names_are_missing_columns_and_the_columns_found_are_listed():
    table = pa.table(
        {
            "k": pa.array(["a"]),
            "v": pa.array([b"x"], pa.binary()),
            "lsn": pa.array([1], pa.int64()),
        }
    )
    assert kv_parquet_problems(schema_of(write(table))) == [
        "missing column 'key'",
        "missing column 'value'",
        "columns found: k BYTE_ARRAY STRING, v BYTE_ARRAY, lsn INT64",
    ]


@pytest.mark.parametrize(
    ("name", "arrow_type", "problem"),
    [
        ("key", pa.int64(), "column 'key' is INT64, expected BYTE_ARRAY (string)"),
        ("key", pa.binary(), "column 'key' is BYTE_ARRAY, expected BYTE_ARRAY (string)"),
        (
            "key",
            pa.list_(pa.string()),
            "column 'key' is GROUP LIST, expected BYTE_ARRAY (string)",
        ),
        ("value", pa.string(), "column 'value' is BYTE_ARRAY STRING, expected BYTE_ARRAY (binary)"),
        ("value", pa.int64(), "column 'value' is INT64, expected BYTE_ARRAY (binary)"),
        ("lsn", pa.string(), "column 'lsn' is BYTE_ARRAY STRING, expected INT64"),
        ("lsn", pa.int32(), "column 'lsn' is INT32, expected INT64"),
        ("lsn", pa.uint64(), "column 'lsn' is INT64 INTEGER(64,unsigned), expected INT64"),
        ("lsn", pa.timestamp("us"), "column 'lsn' is INT64 TIMESTAMP, expected INT64"),
    ],
)
def test_wrong_types_are_named(name, arrow_type, problem):
    table = kv_table(**{name: pa.nulls(3, arrow_type)})
    assert kv_parquet_problems(schema_of(write(table))) == [problem]


@pytest.mark.parametrize(
    "columns",
    [
        {"key": pa.array(["a", "b", "c"], pa.large_string())},
        {"key": pa.array(["a", "b", "a"]).dictionary_encode()},
        {"value": pa.array([b"", b"x", None], pa.large_binary())},
        {"value": pa.array([b"a", b"b", b"a"], pa.binary()).dictionary_encode()},
        {"extra": pa.array([1.5, 2, 3]), "nested": pa.array([{"a": 1}] * 3)},
    ],
    ids=["large_string", "dictionary_key", "large_binary", "dictionary_value", "extra_columns"],
)
def test_other_spellings_of_the_kv_columns_and_extra_columns_are_fine(columns):
    assert kv_parquet_problems(schema_of(write(kv_table(**columns)))) == []


@pytest.mark.parametrize(
    ("arrow_type", "physical", "logical"),
    [
        (pa.bool_(), "BOOLEAN", None),
        (pa.int8(), "INT32", "INTEGER(8,signed)"),
        (pa.uint32(), "INT32", "INTEGER(32,unsigned)"),
        (pa.int32(), "INT32", None),
        (pa.float32(), "FLOAT", None),
        (pa.float64(), "DOUBLE", None),
        (pa.float16(), "FIXED_LEN_BYTE_ARRAY", "FLOAT16"),
        (pa.decimal128(10, 2), "FIXED_LEN_BYTE_ARRAY", "DECIMAL"),
        (pa.binary(16), "FIXED_LEN_BYTE_ARRAY", None),
        (pa.uuid(), "FIXED_LEN_BYTE_ARRAY", "UUID"),
        (pa.json_(), "BYTE_ARRAY", "JSON"),
        (pa.date32(), "INT32", "DATE"),
        (pa.time64("us"), "INT64", "TIME"),
        (pa.timestamp("ms", tz="UTC"), "INT64", "TIMESTAMP"),
        (pa.timestamp("ns"), "INT64", "TIMESTAMP"),
        (pa.null(), "INT32", "UNKNOWN"),
        (pa.struct([("a", pa.int64())]), "GROUP", None),
        (pa.list_(pa.list_(pa.int64())), "GROUP", "LIST"),
        (pa.map_(pa.string(), pa.int64()), "GROUP", "MAP"),
    ],
    ids=str,
)
def test_each_arrow_type_reads_as_its_parquet_types(arrow_type, physical, logical):
    table = pa.table({"a": pa.nulls(2, arrow_type), "after": pa.array([1, 2], pa.int8())})
    schema = schema_of(write(table))
    assert schema.columns == (
        Column("a", physical, logical, "OPTIONAL"),
        Column("after", "INT32", "INTEGER(8,signed)", "OPTIONAL"),
    )


def test_nested_columns_are_one_group_each_and_the_columns_after_them_are_found():
    table = kv_table(
        2,
        deep=pa.array([[{"x": [1, 2], "y": {"z": "s"}}], []]),
        m=pa.array([[("a", 1)], []], pa.map_(pa.string(), pa.int64())),
        tail=pa.array(["p", "q"]),
    )
    schema = schema_of(write(table))
    assert [c.describe() for c in schema.columns] == [
        "key BYTE_ARRAY STRING",
        "value BYTE_ARRAY",
        "lsn INT64",
        "deep GROUP LIST",
        "m GROUP MAP",
        "tail BYTE_ARRAY STRING",
    ]
    assert kv_parquet_problems(schema) == []


@pytest.mark.parametrize("compression", ["none", "snappy", "gzip", "zstd", "brotli", "lz4"])
@pytest.mark.parametrize("data_page_version", ["1.0", "2.0"])
def test_compressed_dictionary_encoded_files_parse(compression, data_page_version):
    table = kv_table(500, tag=pa.array(["a", "b"] * 250).dictionary_encode())
    data = write(
        table,
        compression=compression,
        use_dictionary=True,
        data_page_version=data_page_version,
        row_group_size=100,
    )
    schema = schema_of(data)
    assert schema.num_rows == 500
    assert [c.describe() for c in schema.columns][-1] == "tag BYTE_ARRAY STRING"
    assert kv_parquet_problems(schema) == []


def test_the_old_format_version_parses():
    schema = schema_of(write(kv_table(uint=pa.array([1, 2, 3], pa.uint32())), version="1.0"))
    assert schema.columns[-1] == Column("uint", "INT64", None, "OPTIONAL")
    assert kv_parquet_problems(schema) == []


def test_an_empty_table_has_its_columns_and_no_rows():
    schema = schema_of(write(kv_table(0)))
    assert schema.num_rows == 0
    assert [c.name for c in schema.columns] == ["key", "value", "lsn"]
    assert kv_parquet_problems(schema) == []


@pytest.fixture(scope="module")
def wide() -> bytes:
    """200 row groups of 30 columns: a footer of several hundred KiB."""
    extra = {f"c{i:02}": pa.array(range(1000), pa.int64()) for i in range(27)}
    return write(kv_table(1000, **extra), row_group_size=5)


def test_many_row_groups_parse(wide):
    assert pq.ParquetFile(io.BytesIO(wide)).metadata.num_row_groups == 200
    schema = schema_of(wide)
    assert schema.num_rows == 1000
    assert len(schema.columns) == 30
    assert kv_parquet_problems(schema) == []


def test_a_short_tail_asks_for_exactly_the_footer_and_then_parses(wide):
    footer = pq.ParquetFile(io.BytesIO(wide)).metadata.serialized_size
    assert footer > 64 * 1024
    with pytest.raises(FooterIncompleteError) as caught:
        parse_footer(wide[-64 * 1024 :], len(wide))
    assert caught.value.needed == footer + TAIL_BYTES
    assert parse_footer(wide[-caught.value.needed :], len(wide)) == schema_of(wide)


def test_the_row_groups_are_not_decoded(wide):
    """Half the footer (all schema, some row groups) still gives the schema: it stops early."""
    footer = footer_of(wide)
    assert schema_of(wrap(footer[: len(footer) // 2])) == schema_of(wide)


# --- hand-built footers (the Thrift Compact Protocol, written here) -------------------------

BOOL_TRUE, BOOL_FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)


def varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes([*out, n])


def zigzag(n: int) -> bytes:
    return varint((n << 1) ^ (n >> 63))


def string(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return varint(len(raw)) + raw


def struct(*fields: tuple[int, int, bytes]) -> bytes:
    """Fields as (id, type, encoded value); a delta over 15 or below 1 uses the long form."""
    out, last = bytearray(), 0
    for fid, ftype, value in fields:
        delta = fid - last
        out += bytes([delta << 4 | ftype]) if 0 < delta <= 15 else bytes([ftype]) + zigzag(fid)
        out += value
        last = fid
    return bytes([*out, 0])


def list_of(etype: int, items: list[bytes]) -> bytes:
    size = len(items)
    head = bytes([size << 4 | etype]) if size < 15 else bytes([0xF0 | etype]) + varint(size)
    return head + b"".join(items)


def element(name: str | bytes, ptype: int | None = None, rep: int | None = 0, **more: int) -> bytes:
    fields = [] if ptype is None else [(1, I32, zigzag(ptype))]
    fields += [] if rep is None else [(3, I32, zigzag(rep))]
    fields.append((4, BINARY, string(name)))
    fields += [(5, I32, zigzag(more["children"]))] if "children" in more else []
    fields += [(6, I32, zigzag(more["converted"]))] if "converted" in more else []
    if "logical" in more:
        fields.append((10, STRUCT, struct((more["logical"], STRUCT, struct()))))
    return struct(*fields)


def metadata(elements: list[bytes], num_rows: int = 7, *before: tuple[int, int, bytes]) -> bytes:
    return struct(
        (1, I32, zigzag(2)),
        *before,
        (2, LIST, list_of(STRUCT, elements)),
        (3, I64, zigzag(num_rows)),
        (4, LIST, b"\xff\xff\xff"),  # row groups: garbage, never read
    )


def root(children: int) -> bytes:
    return element("schema", rep=None, children=children)


def test_converted_types_alone_are_read_and_unknown_fields_are_skipped():
    unknown = (
        (100, DOUBLE, b"\x00" * 8),
        (101, MAP, varint(2) + bytes([BINARY << 4 | BOOL_TRUE]) + b"\x01a\x01\x01b\x02"),
        (102, SET, list_of(BOOL_TRUE, [b"\x01", b"\x02"])),
        (103, STRUCT, struct((1, BOOL_FALSE, b""), (40, LIST, list_of(I16, [zigzag(-3)] * 20)))),
        (104, MAP, varint(0)),
        (105, BYTE, b"\x80"),
        (106, BINARY, string(b"\xff\xfe")),
    )
    elements = [
        root(5),
        element("key", 6, converted=0),
        element("value", 6, rep=1),
        element("lsn", 2, converted=18),
        element("at", 2, converted=9, logical=99),  # an unknown LogicalType member
        element("odd", 1, converted=77),
    ]
    schema = schema_of(wrap(metadata(elements, 7, *unknown)))
    assert schema == FooterSchema(
        (
            Column("key", "BYTE_ARRAY", "STRING", "REQUIRED"),
            Column("value", "BYTE_ARRAY", None, "OPTIONAL"),
            Column("lsn", "INT64", "INTEGER(64,signed)", "REQUIRED"),
            Column("at", "INT64", "LOGICAL_99", "REQUIRED"),
            Column("odd", "INT32", "CONVERTED_77", "REQUIRED"),
        ),
        num_rows=7,
    )
    assert kv_parquet_problems(schema) == []


def test_a_repeated_column_is_a_problem():
    elements = [root(3), element("key", 6, rep=2, converted=0), element("value", 6)]
    elements.append(element("lsn", 2))
    assert kv_parquet_problems(schema_of(wrap(metadata(elements)))) == [
        "column 'key' is REPEATED, expected one value a row"
    ]


def test_no_columns_at_all_is_said_so():
    schema = schema_of(wrap(metadata([root(0)])))
    assert schema.columns == ()
    assert kv_parquet_problems(schema)[-1] == "columns found: none"


LEAF = element("a", 1)


@pytest.mark.parametrize(
    ("footer", "message"),
    [
        (b"", "truncated"),
        (b"\x1c" * 200, "nested deeper than 64"),
        (b"\x19\xfc" + varint(10**12), "invalid list header"),
        (b"\x36" + b"\xff" * 11, "varint longer than 10 bytes"),
        (b"\x1d", "invalid Thrift field type 13"),
        (b"\x1b" + varint(10**9) + bytes([0x11]), "map of 1000000000 entries"),
        (struct((2, I32, zigzag(1))), "not a non-empty list of SchemaElements"),
        (struct((2, LIST, list_of(STRUCT, [])), (3, I64, zigzag(1))), "not a non-empty list"),
        (metadata([root(1), element(b"\xff", 1)]), "column name is not UTF-8"),
        (metadata([root(1), element("a", 9)]), "physical type 9 is not one Parquet defines"),
        (metadata([root(1), element("a", 1, rep=3)]), "repetition 3 is not one"),
        (metadata([root(1), element("a", 1, children=-1)]), "has no name or -1 children"),
        (metadata([root(1), struct((1, I32, zigzag(1)))]), "has no name"),
        (metadata([root(3), LEAF]), "the schema ends before the root's columns do"),
        (metadata([root(1), element("g", children=2), LEAF]), "ends inside column 'g'"),
        (metadata([root(1), LEAF, LEAF]), "1 schema elements are outside the root's tree"),
        (metadata([root(1), LEAF], -1), "no valid num_rows"),
        (struct((2, LIST, list_of(STRUCT, [root(0)]))), "no valid num_rows"),
        (struct((3, I64, zigzag(1))), "no schema"),
        (struct((3, BINARY, string("x")), (2, LIST, b"")), "num_rows has Thrift type 8"),
    ],
)
def test_malformed_footers_are_named(footer, message):
    with pytest.raises(ParquetFooterError, match="Parquet footer byte") as caught:
        schema_of(wrap(footer))
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("tail", "file_size", "message"),
    [
        (b"not parquet at all", 18, "does not end with the Parquet magic PAR1: not a Parquet file"),
        (b"\x00" * 8 + b"PARE", 12, "an encrypted footer, PARE, is not supported"),
        (b"PAR1" + bytes(4) + b"PAR1", 11, "12 tail bytes given for a file of 11 bytes"),
        (b"PAR1PAR1", 8, "a file of 8 bytes is too small to be Parquet"),
        (b"\x05\x00\x00\x00PAR1", 16, "footer length 5 does not fit in a file of 16 bytes"),
        (b"XXXX" + bytes(4) + b"PAR1", 12, "does not start with the Parquet magic PAR1"),
    ],
)
def test_what_is_not_parquet_is_said_so(tail, file_size, message):
    with pytest.raises(ParquetFooterError) as caught:
        parse_footer(tail, file_size)
    assert message in str(caught.value)
    assert not isinstance(caught.value, FooterIncompleteError)


def test_fewer_than_eight_bytes_ask_for_eight():
    with pytest.raises(FooterIncompleteError) as caught:
        parse_footer(KV[-3:], len(KV))
    assert caught.value.needed == TAIL_BYTES
    with pytest.raises(ParquetFooterError, match="magic"):
        footer_length(b"PAR1")


# --- fuzzing: only ParquetFooterError may escape ----------------------------------------------

SAMPLE = write(
    kv_table(
        4,
        s=pa.array([{"x": [1]}] * 4),
        m=pa.array([[("a", 1)]] * 4, pa.map_(pa.string(), pa.int64())),
        d=pa.array([1.5] * 4),
    ),
    row_group_size=2,
)
SAMPLE_FOOTER = footer_of(SAMPLE)
FUZZ = settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])


def parse_or_refuse(tail: bytes, file_size: int) -> FooterSchema | None:
    try:
        return parse_footer(tail, file_size)
    except ParquetFooterError:
        return None


@FUZZ
@given(st.binary(max_size=300), st.integers(0, 400))
def test_random_bytes_are_refused(tail, extra):
    parse_or_refuse(tail, len(tail) + extra)
    parse_or_refuse(wrap(tail), len(tail) + 12)


@FUZZ
@given(st.integers(0, len(SAMPLE_FOOTER)))
def test_a_truncated_footer_is_refused_or_read_whole(cut):
    schema = parse_or_refuse(wrap(SAMPLE_FOOTER[:cut]), cut + 12)
    assert schema in (None, schema_of(SAMPLE))


@FUZZ
@given(st.lists(st.integers(0, len(SAMPLE_FOOTER) * 8 - 1), min_size=1, max_size=8))
def test_bit_flips_in_a_real_footer_are_refused_or_read(bits):
    footer = bytearray(SAMPLE_FOOTER)
    for bit in bits:
        footer[bit // 8] ^= 1 << bit % 8
    data = wrap(bytes(footer))
    parse_or_refuse(data, len(data))


@FUZZ
@given(st.integers(0, len(SAMPLE)), st.integers(0, len(SAMPLE) - 1), st.integers(0, 255))
def test_short_or_damaged_tails_of_a_real_file(keep, at, value):
    needed = len(SAMPLE_FOOTER) + TAIL_BYTES
    if keep < needed:
        with pytest.raises(FooterIncompleteError) as caught:
            parse_footer(SAMPLE[len(SAMPLE) - keep :], len(SAMPLE))
        assert caught.value.needed in (TAIL_BYTES, needed)
    else:
        assert parse_footer(SAMPLE[len(SAMPLE) - keep :], len(SAMPLE)) == schema_of(SAMPLE)
    damaged = bytearray(SAMPLE)
    damaged[at] = value
    parse_or_refuse(bytes(damaged), len(SAMPLE))


# --- the Lambda constraint --------------------------------------------------------------------


def test_importing_the_module_pulls_in_nothing_but_the_standard_library():
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import snapledger.core.parquet_footer\n"
        "new = {name.partition('.')[0] for name in set(sys.modules) - before}\n"
        "print(sorted(new - set(sys.stdlib_module_names) - {'snapledger'}))\n"
        "print(sorted({'pyarrow', 'pydantic', 'boto3', 'botocore'} & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert result.stdout.splitlines() == ["[]", "[]"]


def test_read_footer_reads_the_tail_once_or_twice_when_the_footer_is_longer() -> None:
    from snapledger.core.parquet_footer import read_footer

    small = _kv_file_for_read_footer(row_groups=1)
    large = _kv_file_for_read_footer(row_groups=400)
    for data, reads_expected in ((small, 1), (large, 2)):
        reads: list[int] = []

        def tail(n: int, data: bytes = data, reads: list[int] = reads) -> bytes:
            reads.append(n)
            return data[-n:]

        schema = read_footer(tail, len(data), first_read=4096)
        assert [c.name for c in schema.columns] == ["key", "value", "lsn"]
        assert len(reads) == reads_expected


def _kv_file_for_read_footer(row_groups: int) -> bytes:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            "key": pa.array([f"k{i}" for i in range(row_groups)], pa.string()),
            "value": pa.array([b"v"] * row_groups, pa.binary()),
            "lsn": pa.array(range(row_groups), pa.int64()),
        }
    )
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=1)
    return sink.getvalue()


def test_a_footer_over_the_bound_is_refused_without_reading_it():
    # Issue 27 row 2: a 96 MiB file whose last 8 bytes claim a 100 MB footer. The footer
    # length is believed only up to MAX_PARQUET_FOOTER_BYTES: one first read of the tail,
    # never a read of the claimed length.
    file_size = 96 * 1024 * 1024
    claimed = 100_000_000
    reads: list[int] = []

    def read_tail(length: int) -> bytes:
        reads.append(length)
        return b"\0" * (length - 8) + claimed.to_bytes(4, "little") + b"PAR1"

    with pytest.raises(ParquetFooterError, match="over the 16,777,216-byte limit"):
        read_footer(read_tail, file_size)
    assert reads == [64 * 1024]
    assert max(reads) <= MAX_PARQUET_FOOTER_BYTES


def test_a_footer_at_the_bound_is_still_read():
    # The bound refuses only what is past it: a footer of exactly the bound asks for it.
    length = MAX_PARQUET_FOOTER_BYTES
    tail = b"\0" * 16 + length.to_bytes(4, "little") + b"PAR1"
    with pytest.raises(FooterIncompleteError) as incomplete:
        parse_footer(tail, length + 64)
    assert incomplete.value.needed == length + 8
