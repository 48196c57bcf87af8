"""SnapshotWriter: what it writes, in which order, and every input it refuses."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.client import SnapshotReader, SnapshotWriter, writer
from snapledger.client.state_table import STATE_ARROW_SCHEMA
from snapledger.client.storage import MIN_PART_SIZE, file_checksum
from snapledger.core.checksums import parse_checksum
from snapledger.core.parquet_footer import kv_parquet_problems, parse_footer
from snapledger.errors import InvalidKeyError, ObjectExistsError
from snapledger.layout import MANIFEST_NAME, parse_manifest_key
from snapledger.models.manifest import ManifestV1
from tests.client.conftest import BUCKET, MIB, S3_PREFIX, Backend, RecordingStore

STREAM, PARTITION = "orders", 3


def _writer(backend: Backend, **options: Any) -> SnapshotWriter:
    return SnapshotWriter(backend.root, STREAM, PARTITION, s3_client=backend.client, **options)


def _manifest(backend: Backend, written: Any) -> ManifestV1:
    return ManifestV1.model_validate_json(backend.read(written.manifest_key))


def _table(rows: dict[str, bytes | None], lsn: list[int] | None = None) -> pa.Table:
    columns: dict[str, Any] = {
        "key": pa.array(list(rows), pa.string()),
        "value": pa.array(list(rows.values()), pa.binary()),
    }
    if lsn is not None:
        columns["lsn"] = pa.array(lsn, pa.int64())
    return pa.table(columns)


# -- round trips ------------------------------------------------------------------------


def test_an_arrow_table_round_trips_sorted_by_key(backend: Backend):
    state = {f"k{i:03d}": os.urandom(i % 7) if i % 5 else None for i in range(250)}
    shuffled = dict(sorted(state.items(), key=lambda kv: hash(kv[0])))
    lsns = [i % 40 for i in range(250)]
    table = _table(shuffled, lsns)
    written = _writer(backend, target_file_rows=100).write(50, 2, table)
    back = SnapshotReader(backend.root, s3_client=backend.client).open(written.prefix).to_arrow()
    assert back.schema == STATE_ARROW_SCHEMA
    assert back.to_pylist() == sorted(table.to_pylist(), key=lambda row: row["key"])
    assert [f.rows for f in written.files] == [100, 100, 50]
    assert [f.path for f in written.files] == [
        "part-00000.parquet",
        "part-00001.parquet",
        "part-00002.parquet",
    ]
    assert written.row_count == 250


def test_key_value_pairs_round_trip_with_the_snapshot_s_lsn(backend: Backend):
    pairs = [("b", b"2"), ("a", None), ("c", bytearray(b"3"))]
    written = _writer(backend).write(7, 0, iter(pairs))
    back = SnapshotReader(backend.root, s3_client=backend.client).open(written.prefix).to_arrow()
    assert back.to_pylist() == [
        {"key": "a", "value": None, "lsn": 7},
        {"key": "b", "value": b"2", "lsn": 7},
        {"key": "c", "value": b"3", "lsn": 7},
    ]


def test_a_mapping_and_record_batches_are_accepted(file_backend: Backend):
    reader = SnapshotReader(file_backend.root)
    from_mapping = _writer(file_backend).write(5, 0, {"x": b"1", "y": None})
    batches = _table({"y": None, "x": b"1"}).to_batches(max_chunksize=1)
    from_batches = _writer(file_backend).write(5, 0, iter(batches))
    assert len(batches) == 2
    assert (
        reader.open(from_mapping.prefix).to_arrow() == reader.open(from_batches.prefix).to_arrow()
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    state=st.dictionaries(st.text(max_size=8), st.none() | st.binary(max_size=16), max_size=30),
    target_file_rows=st.integers(1, 8),
)
def test_any_state_round_trips_through_the_file_store(state, target_file_rows):
    with tempfile.TemporaryDirectory() as root:
        store_root = Path(root).as_uri()
        written = SnapshotWriter(
            store_root, STREAM, PARTITION, target_file_rows=target_file_rows
        ).write(100, 0, state.items())
        back = SnapshotReader(store_root).open(written.prefix).to_arrow()
    assert {row["key"]: row["value"] for row in back.to_pylist()} == state
    assert back.column("key").to_pylist() == sorted(state, key=lambda k: k.encode())


def test_an_empty_state_is_one_parquet_file_of_zero_rows(backend: Backend):
    written = _writer(backend).write(0, 0, [])
    assert [(f.path, f.rows) for f in written.files] == [("part-00000.parquet", 0)]
    assert written.row_count == 0
    opened = SnapshotReader(backend.root, s3_client=backend.client).open(written.prefix)
    opened.verify()
    back = opened.to_arrow()
    assert (back.num_rows, back.schema) == (0, STATE_ARROW_SCHEMA)


def test_large_files_go_multipart_and_round_trip(s3_backend: Backend):
    store = s3_backend.store(multipart_threshold=MIB, part_size=MIN_PART_SIZE)
    operations: list[str] = []
    s3_backend.client.meta.events.register(
        "before-call.s3.*", lambda model, **_: operations.append(model.name)
    )
    state = {f"k{i}": os.urandom(MIB) for i in range(6)}  # ~6 MiB of incompressible values
    written = SnapshotWriter(store, STREAM, PARTITION, checksum="crc64nvme").write(9, 1, state)
    assert operations.count("UploadPart") == 2
    assert operations[-1] == "PutObject"  # the manifest, after the multipart completion
    opened = SnapshotReader(store).open(written.prefix)
    opened.verify()
    assert {r["key"]: r["value"] for r in opened.to_arrow().to_pylist()} == state
    head = s3_backend.client.head_object(
        Bucket=BUCKET, Key=f"{S3_PREFIX}/{written.prefix}part-00000.parquet", ChecksumMode="ENABLED"
    )
    assert f"crc64nvme:{head['ChecksumCRC64NVME']}" == written.files[0].checksum


# -- what is written --------------------------------------------------------------------


def test_the_manifest_is_valid_v1_and_describes_the_files(backend: Backend):
    created = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    written = _writer(backend, producer="orders-app", producer_version="1.2").write(
        40, 6, {"a": b"1", "b": b"2"}, offsets={"orders-3": 18213}, created_at=created
    )
    manifest = _manifest(backend, written)
    location = parse_manifest_key(written.manifest_key)
    assert (location.stream, location.partition, location.lsn) == (STREAM, PARTITION, 40)
    assert location.snapshot_id == manifest.snapshot_id == written.snapshot_id
    assert written.prefix == location.prefix
    assert manifest.format == "kv-parquet"
    assert (manifest.lsn, manifest.epoch, manifest.offsets) == (40, 6, {"orders-3": 18213})
    assert manifest.created_at == created
    assert (manifest.producer.name, manifest.producer.version) == ("orders-app", "1.2")
    assert manifest.source.kind == "processor"
    assert manifest.row_count == 2
    assert tuple(manifest.files) == written.files
    store = backend.store()
    listed = {o.key: o.size for o in store.list(written.prefix)}
    for entry in manifest.files:
        data = backend.read(written.prefix + entry.path)
        assert listed[written.prefix + entry.path] == entry.size == len(data)
        assert entry.checksum == file_checksum(data, "crc32c")
        assert entry.rows == pq.read_metadata(pa.BufferReader(data)).num_rows


def test_each_snapshot_gets_a_fresh_ulid_prefix(file_backend: Backend):
    first = _writer(file_backend).write(1, 0, {"a": b"1"})
    second = _writer(file_backend).write(1, 0, {"a": b"1"})
    assert first.snapshot_id != second.snapshot_id
    assert first.prefix != second.prefix


def test_parquet_files_have_exactly_the_kv_columns_registration_checks(file_backend: Backend):
    table = pa.table(
        {
            "key": pa.array(["a", "b"], pa.large_string()),
            "value": pa.array(["x", "y"], pa.large_string()),  # cast to binary losslessly
            "lsn": pa.array([1, 2], pa.uint8()),
        }
    )
    written = _writer(file_backend).write(2, 0, table)
    data = file_backend.read(written.prefix + written.files[0].path)
    schema = pq.read_schema(pa.BufferReader(data))
    assert schema.names == ["key", "value", "lsn"]
    assert [str(t) for t in schema.types] == ["string", "binary", "int64"]
    assert kv_parquet_problems(parse_footer(data, len(data))) == []


@pytest.mark.parametrize("algorithm", ["crc32c", "crc64nvme", "sha256"])
def test_the_manifest_checksums_are_the_ones_s3_stored(s3_backend: Backend, algorithm):
    """What registration compares: each file's checksum in the manifest against the one
    S3 stored (HeadObject with checksum mode)."""
    written = _writer(s3_backend, checksum=algorithm, target_file_rows=2).write(
        3, 0, {"a": b"1", "b": b"2", "c": b"3"}
    )
    objects = S3ObjectStore(BUCKET, S3_PREFIX, client=s3_backend.client)
    field = {"crc32c": "ChecksumCRC32C", "crc64nvme": "ChecksumCRC64NVME"}.get(
        algorithm, "ChecksumSHA256"
    )
    assert len(written.files) == 2
    for entry in _manifest(s3_backend, written).files:
        key = written.prefix + entry.path
        head = s3_backend.client.head_object(
            Bucket=BUCKET, Key=f"{S3_PREFIX}/{key}", ChecksumMode="ENABLED"
        )
        assert entry.checksum == f"{algorithm}:{head[field]}"
        assert objects.stored_checksum(key, algorithm) == parse_checksum(entry.checksum).digest


def test_the_manifest_is_written_last_and_only_if_absent(backend: Backend):
    store = RecordingStore(backend.store())
    written = SnapshotWriter(store, STREAM, PARTITION, target_file_rows=1).write(
        3, 0, {"a": b"1", "b": b"2", "c": b"3"}
    )
    assert store.calls == [
        ("put_file", written.prefix + "part-00000.parquet"),
        ("put_file", written.prefix + "part-00001.parquet"),
        ("put_file", written.prefix + "part-00002.parquet"),
        ("put_if_absent", written.manifest_key),
    ]


def test_a_write_that_fails_midway_leaves_no_manifest(backend: Backend):
    store = RecordingStore(backend.store(), fail_put_file=2)
    with pytest.raises(OSError, match="stopped"):
        SnapshotWriter(store, STREAM, PARTITION, target_file_rows=1).write(
            3, 0, {"a": b"1", "b": b"2", "c": b"3"}
        )
    keys = [o.key for o in store.list("snapshots/")]
    assert len(keys) == 1
    assert keys[0].endswith("part-00000.parquet")
    assert not any(k.endswith(MANIFEST_NAME) for k in keys)


def test_an_existing_manifest_is_never_overwritten(backend: Backend, tmp_path, monkeypatch):
    # two writers of one snapshot id (never so: a fresh ULID each) and different file names,
    # so the second's data file is new and its manifest is the one refused
    monkeypatch.setattr(writer, "new_ulid", lambda: "01JAAAAAAAAAAAAAAAAAAAAAAA")
    (tmp_path / "x").write_bytes(b"1")
    (tmp_path / "y").write_bytes(b"2")
    first = _writer(backend).write_files(3, 0, [tmp_path / "x"])
    original = backend.read(first.manifest_key)
    with pytest.raises(
        ObjectExistsError, match=r"_manifest\.json already exists .*not overwritten"
    ):
        _writer(backend).write_files(3, 1, [tmp_path / "y"])
    assert backend.read(first.manifest_key) == original


@pytest.mark.parametrize("size", [1000, MIN_PART_SIZE + 1000], ids=["put", "multipart"])
def test_a_second_writer_of_a_data_file_is_refused_and_the_first_s_file_stays(
    backend: Backend, tmp_path, monkeypatch, size
):
    # two writers of one snapshot id (never so: a fresh ULID each), as the Kafka Streams
    # snapshotter writes (write_files); on S3 above 1 MiB the file goes up multipart
    monkeypatch.setattr(writer, "new_ulid", lambda: "01JAAAAAAAAAAAAAAAAAAAAAAA")
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "000012.sst").write_bytes(os.urandom(size))
    first = _writer(backend, multipart_threshold=MIB).write_files(12, 0, tmp_path / "first")
    manifest = backend.read(first.manifest_key)

    with pytest.raises(ObjectExistsError) as refused:
        _writer(backend, multipart_threshold=MIB).write_files(12, 1, tmp_path / "second")

    key = first.prefix + "000012.sst"
    assert str(refused.value).startswith(f"{key} already exists in {backend.store().uri}, not")
    assert "another writer wrote it" in str(refused.value)
    assert "write the snapshot again (a new id)" in str(refused.value)
    assert backend.read(key) == (tmp_path / "first" / "000012.sst").read_bytes()
    assert backend.read(first.manifest_key) == manifest
    assert [o.key for o in backend.store().list(first.prefix)] == [key, first.manifest_key]
    if backend.client is not None:  # the refused multipart upload was aborted
        assert backend.client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []


# -- opaque -----------------------------------------------------------------------------


def _checkpoint(directory: Path) -> dict[str, bytes]:
    files = {
        "CURRENT": b"MANIFEST-000005\n",
        "MANIFEST-000005": os.urandom(300),
        "000012.sst": os.urandom(2000),
        "nested/deeper/OPTIONS-000007": b"[Version]\n",
    }
    for relative, data in files.items():
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_bytes(data)
    return files


def test_a_directory_is_written_as_an_opaque_snapshot(backend: Backend, tmp_path):
    files = _checkpoint(tmp_path / "checkpoint")
    store = RecordingStore(backend.store())
    written = SnapshotWriter(store, STREAM, PARTITION, checksum="crc64nvme").write_files(
        12, 4, tmp_path / "checkpoint", offsets={"in": 12}
    )
    manifest = _manifest(backend, written)
    assert manifest.format == written.format == "opaque"
    assert manifest.row_count is None
    assert manifest.offsets == {"in": 12}
    assert {f.path: f.size for f in manifest.files} == {p: len(d) for p, d in files.items()}
    assert all(f.rows is None for f in manifest.files)
    for entry in manifest.files:
        assert entry.checksum == file_checksum(files[entry.path], "crc64nvme")
    assert store.calls[-1] == ("put_if_absent", written.manifest_key)
    assert [name for name, _ in store.calls].count("put_file") == len(files)


def test_a_list_of_files_is_written_under_their_names(file_backend: Backend, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one").write_bytes(b"1")
    (tmp_path / "two").write_bytes(b"22")
    written = _writer(file_backend).write_files(1, 0, [tmp_path / "a" / "one", tmp_path / "two"])
    assert [(f.path, f.size) for f in written.files] == [("one", 1), ("two", 2)]


def test_an_opaque_snapshot_carries_the_changelog_horizon_it_was_read_at(
    file_backend: Backend, tmp_path
):
    (tmp_path / "one").write_bytes(b"1")
    horizon = {
        "log_start_offset": 3,
        "end_offset": 42,
        "delete_retention_ms": 86_400_000,
        "topic_id": "J_a_Qx2nR3uU9vT0b1c2dQ",  # the changelog's incarnation, as Kafka prints it
    }
    read_at = datetime(2026, 11, 28, 6, 0, tzinfo=UTC)
    written = _writer(file_backend).write_files(
        41, 0, tmp_path / "one", created_at=read_at, changelog=horizon
    )
    stored = file_backend.store().get(written.manifest_key)
    manifest = ManifestV1.model_validate_json(stored)
    assert manifest.changelog is not None
    assert manifest.changelog.model_dump() == horizon
    assert manifest.created_at == read_at


def test_a_changelog_horizon_out_of_bounds_is_refused_before_any_upload(
    file_backend: Backend, tmp_path
):
    (tmp_path / "one").write_bytes(b"1")
    horizon = {"log_start_offset": 50, "end_offset": 42, "delete_retention_ms": 1}
    with pytest.raises(ValueError, match="changelog"):
        _writer(file_backend).write_files(41, 0, tmp_path / "one", changelog=horizon)
    assert file_backend.store().list("") == []


@pytest.mark.parametrize(
    ("layout", "error", "match"),
    [
        ({}, ValueError, "no files"),
        ({"_manifest.json": b"{}"}, ValueError, "cannot list itself"),
        ({".tmp-x": b""}, ValueError, "cannot be part of a snapshot"),
    ],
)
def test_opaque_inputs_refused_before_any_upload(file_backend, tmp_path, layout, error, match):
    directory = tmp_path / "dir"
    directory.mkdir()
    for name, data in layout.items():
        (directory / name).write_bytes(data)
    with pytest.raises(error, match=match):
        _writer(file_backend).write_files(1, 0, directory)
    assert file_backend.store().list("") == []


def test_opaque_file_lists_refuse_missing_files_and_duplicate_names(file_backend, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "f").write_bytes(b"1")
    (tmp_path / "b" / "f").write_bytes(b"2")
    with pytest.raises(ValueError, match="two files have this name"):
        _writer(file_backend).write_files(1, 0, [tmp_path / "a" / "f", tmp_path / "b" / "f"])
    with pytest.raises(FileNotFoundError, match="not a file"):
        _writer(file_backend).write_files(1, 0, [tmp_path / "missing"])
    with pytest.raises(FileNotFoundError, match="neither a file nor a directory"):
        _writer(file_backend).write_files(1, 0, tmp_path / "missing")
    assert file_backend.store().list("") == []


# -- refused inputs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "error", "match"),
    [
        (pa.table({"key": ["a"]}), ValueError, r"missing \['value'\]"),
        (pa.table({"key": ["a"], "value": [b"1"], "ts": [1]}), ValueError, r"extra \['ts'\]"),
        (pa.table({"key": [1], "value": [b"1"]}), TypeError, "column 'key' is int64"),
        (pa.table({"key": ["a"], "value": [1]}), TypeError, "column 'value' is int64"),
        (pa.table({"key": ["a"], "value": [b"1"], "lsn": [1.0]}), TypeError, "'lsn' is double"),
        (
            pa.table({"key": ["a"], "value": [b"1"], "lsn": pa.array([2**63], pa.uint64())}),
            ValueError,
            "does not fit int64",
        ),
        (pa.table({"key": ["a", None], "value": [b"1", b"2"]}), ValueError, "row 1 has a null key"),
        (
            pa.table({"key": ["a", "b"], "value": [b"1", b"2"], "lsn": [1, None]}),
            ValueError,
            "row 1 .key 'b'. has a null lsn",
        ),
        (
            pa.table({"key": ["a", "b"], "value": [b"1", b"2"], "lsn": [10, 11]}),
            ValueError,
            "row 1 .key 'b'. has lsn 11, above the snapshot's lsn 10",
        ),
        (
            pa.table({"key": ["a"], "value": [b"1"], "lsn": [-1]}),
            ValueError,
            "negative lsn -1",
        ),
        (
            pa.table({"key": ["b", "a", "b", "c", "c"], "value": [b"1"] * 5}),
            ValueError,
            "key 'b' appears more than once .2 duplicate",
        ),
        ([("a", b"1"), ("a", b"2")], ValueError, "key 'a' appears more than once"),
        ([("a", b"1"), (None, b"2")], ValueError, "row 1 has a null key"),
        ([("a", b"1"), (2, b"2")], TypeError, "item 1: key 2 is a int"),
        ([("a", "text")], TypeError, "value 'text' is a str"),
        ([("a", b"1", 5)], TypeError, "expected a .key, value. pair"),
        ("ab", TypeError, "snapshot data is a str"),
        (42, TypeError, "snapshot data is a int"),
        ([pa.record_batch({"key": ["a"], "value": [b"1"]}), ("b", b"2")], TypeError, "item 1"),
        (
            [
                pa.record_batch({"key": ["a"], "value": [b"1"]}),
                pa.record_batch({"key": ["b"], "value": [2]}),
            ],
            ValueError,
            "do not share one schema",
        ),
    ],
)
def test_bad_state_is_refused_before_any_upload(backend: Backend, data, error, match):
    with pytest.raises(error, match=match):
        _writer(backend).write(10, 0, data)
    assert backend.store().list("") == []


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda w: w.write(True, 0, {}), TypeError, "lsn is a bool"),
        (lambda w: w.write("5", 0, {}), TypeError, "lsn is a str"),
        (lambda w: w.write(10**20, 0, {}), ValueError, "lsn=.* is out of range"),
        (lambda w: w.write(1, -1, {}), ValueError, "epoch=-1 is out of range"),
        (lambda w: w.write(1, 0, {}, offsets={"in": -1}), ValueError, "offsets.in"),
        (lambda w: w.write(1, 0, {}, offsets={"in": 1.5}), ValueError, "offsets.in"),
        (lambda w: w.write(1, 0, {}, created_at=datetime(2025, 1, 1)), ValueError, "time zone"),
    ],
)
def test_bad_arguments_are_refused_before_any_upload(file_backend, call, error, match):
    with pytest.raises(error, match=match):
        call(_writer(file_backend))
    assert file_backend.store().list("") == []


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"stream": "bad/name"}, InvalidKeyError, "stream name"),
        ({"partition": -1}, ValueError, "partition=-1"),
        ({"partition": 10**9}, ValueError, "partition=1000000000"),
        ({"checksum": "crc32"}, ValueError, "crc64nvme, crc32c, sha256, md5"),
        ({"target_file_rows": 0}, ValueError, "target_file_rows=0"),
        ({"row_group_rows": 0}, ValueError, "row_group_rows=0"),
        ({"producer": ""}, ValueError, "producer is not valid"),
    ],
)
def test_bad_writer_settings_are_refused(file_backend, options, error, match):
    arguments = {"stream": STREAM, "partition": PARTITION, **options}
    stream, partition = arguments.pop("stream"), arguments.pop("partition")
    with pytest.raises(error, match=match):
        SnapshotWriter(file_backend.root, stream, partition, **arguments)


def test_lossless_casts_are_accepted(file_backend: Backend):
    table = pa.table(
        {
            "key": pa.array(["b", "a"]).dictionary_encode(),
            "value": pa.array([b"12", None], pa.binary(2)),
            "lsn": pa.array([3, 4], pa.int32()),
        }
    )
    written = _writer(file_backend).write(4, 0, table)
    back = SnapshotReader(file_backend.root).open(written.prefix).to_arrow()
    assert back.to_pylist() == [
        {"key": "a", "value": None, "lsn": 4},
        {"key": "b", "value": b"12", "lsn": 3},
    ]


def test_the_manifest_json_leaves_out_unset_fields(file_backend: Backend):
    written = _writer(file_backend).write(1, 0, {"a": b"1"})
    document = json.loads(file_backend.read(written.manifest_key))
    assert "offsets" not in document
    assert "version" not in document["producer"]


def test_a_snapshot_answering_a_stream_snapshot_names_its_generation(file_backend: Backend):
    written = _writer(file_backend).write(500, 1, {"k": b"v"}, generation=7)
    assert _manifest(file_backend, written).generation == 7
    plain = _writer(file_backend).write(600, 1, {"k": b"v"})
    assert "generation" not in json.loads(file_backend.read(plain.manifest_key))
