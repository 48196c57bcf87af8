"""ObjectStore: listing one folder or a whole tree, with sizes, sorted by key; reading
whole files and ranges through py4j in answers small enough to come back without a stall."""

from __future__ import annotations

import os

import pytest

from jobs.storage import PY4J_READ_CHUNK, ObjectStore, StoredFile

pytestmark = pytest.mark.spark


def test_lists_a_folder_or_its_tree_with_sizes(spark, tmp_path) -> None:
    for relative, size in {
        "out/b.parquet": 3,
        "out/a.parquet": 1,
        "out/partition=1/x.parquet": 5,
        "out/partition=1/deeper/y.parquet": 7,
        "other/z.parquet": 2,
    }.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_bytes(b"x" * size)
    store = ObjectStore(spark, tmp_path.as_uri())

    assert store.list_files("out/") == [
        StoredFile("out/a.parquet", 1),
        StoredFile("out/b.parquet", 3),
    ]
    assert store.list_files("out/", recursive=True) == [
        StoredFile("out/a.parquet", 1),
        StoredFile("out/b.parquet", 3),
        StoredFile("out/partition=1/deeper/y.parquet", 7),
        StoredFile("out/partition=1/x.parquet", 5),
    ]
    assert store.list_files("missing/") == []


@pytest.mark.parametrize(
    "size",
    [0, 1, PY4J_READ_CHUNK - 1, PY4J_READ_CHUNK, PY4J_READ_CHUNK + 1, 5 * PY4J_READ_CHUNK + 7],
)
def test_reads_whole_files_and_ranges_across_read_chunks(spark, tmp_path, size) -> None:
    data = os.urandom(size)
    (tmp_path / "f.bin").write_bytes(data)
    store = ObjectStore(spark, tmp_path.as_uri())
    assert store.read_bytes("f.bin") == data
    for start, length in ((0, size), (size // 3, size - size // 3), (size // 2, size // 4)):
        assert store.read_range("f.bin", start, length) == data[start : start + length]


def test_a_read_is_cut_into_answers_that_fit_one_py4j_buffer(spark, tmp_path) -> None:
    """py4j sends a byte[] base64-encoded through an 8192-character buffer; a longer
    answer waits ~40 ms for a delayed ACK, so no read may ask for more at once."""
    assert 4 * -(-PY4J_READ_CHUNK // 3) <= 8192 - 3  # base64 of a chunk, 'yb' and newline
    (tmp_path / "f.bin").write_bytes(os.urandom(3 * PY4J_READ_CHUNK))
    store = ObjectStore(spark, tmp_path.as_uri())
    asked = []
    io_utils = store._io_utils

    class Recording:
        def toByteArray(self, stream, size):
            asked.append(size)
            return io_utils.toByteArray(stream, size)

    store._io_utils = Recording()
    store.read_bytes("f.bin")
    store.read_range("f.bin", 10, 2 * PY4J_READ_CHUNK)
    assert asked and max(asked) <= PY4J_READ_CHUNK


@pytest.mark.parametrize("row_groups", [1, 200])
def test_a_footer_check_reads_one_chunk_or_then_the_footers_exact_length(
    spark, tmp_path, row_groups
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.verify import BaseFile, check_kv_schema

    rows = pa.table(
        {
            "key": [f"k{i}" for i in range(row_groups)],
            "value": [b"v"] * row_groups,
            "lsn": pa.array(range(row_groups), pa.int64()),
        }
    )
    pq.write_table(rows, tmp_path / "f.parquet", row_group_size=1)
    size = (tmp_path / "f.parquet").stat().st_size
    store = ObjectStore(spark, tmp_path.as_uri())
    reads = []
    read_range = store.read_range
    store.read_range = lambda key, start, length: (
        reads.append(length)
        or read_range(  # type: ignore[method-assign]
            key, start, length
        )
    )
    check_kv_schema(store, BaseFile("f.parquet", size, None))  # raises unless kv-parquet
    assert reads[0] == min(PY4J_READ_CHUNK, size)
    # 200 row groups' metadata do not fit one chunk: one more read, of the footer's length
    assert len(reads) == (1 if row_groups == 1 else 2)
