"""The client library against the functions: SnapshotWriter → S3 (moto) → the register
function's S3 event → the ledger → Snapledger (control) and SnapshotReader.

kv-parquet: written, registered with its checksums compared to S3's, read back equal.
opaque (a RocksDB-like checkpoint): registered, retained as latest, collected by GC when
old, downloaded intact, and refused as Arrow.
"""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import Any

import boto3
import pyarrow as pa
import pytest
from moto import mock_aws

from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.client import Snapledger, SnapshotFormatError, SnapshotReader, SnapshotWriter
from snapledger.local.handlers import invoke
from snapledger.runtime import runtime_override
from tests.functions.support import FakeLambdaContext, object_created_event
from tests.support import make_runtime

BUCKET = "snapledger-e2e"


class InProcess:
    """The functions' handlers, called as Lambda would call them."""

    def invoke(self, function: str, payload: dict[str, Any]) -> dict[str, Any]:
        return invoke(function, payload)


@pytest.fixture
def deployment(ledger, clock, powertools_env):
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        runtime = make_runtime(ledger, S3ObjectStore(BUCKET, "", client=s3), clock)
        with runtime_override(runtime):
            yield s3, runtime


def register(key: str) -> dict[str, Any]:
    handler = importlib.import_module("functions.register").handler
    event = object_created_event(key)
    event["detail"]["bucket"]["name"] = BUCKET
    return handler(event, FakeLambdaContext())


@pytest.mark.parametrize("checksum", ["crc32c", "crc64nvme", "sha256"])
def test_a_written_snapshot_registers_from_its_event_and_reads_back_equal(deployment, checksum):
    s3, _ = deployment
    rows = [(f"k{i:04d}", f"value-{i}".encode()) for i in range(300)]
    writer = SnapshotWriter(f"s3://{BUCKET}", "orders", 3, s3_client=s3, checksum=checksum)
    written = writer.write(
        lsn=1_000, epoch=2, data=list(reversed(rows)), offsets={"orders-3": 1_000}
    )

    answer = register(written.manifest_key)

    assert answer["counts"] == {"became_latest": 1}, answer
    registry = Snapledger(InProcess())
    head = registry.latest("orders", 3)["head"]
    assert (head["latest_snapshot_id"], head["latest_lsn"]) == (written.snapshot_id, 1_000)
    record = registry.snapshot("orders", 3, written.snapshot_id)["snapshot"]
    assert (record["format"], record["offsets"]) == ("kv-parquet", {"orders-3": 1_000})
    # S3 holds a full-object checksum of each file, which registration compared
    for file in written.files:
        held = s3.head_object(Bucket=BUCKET, Key=written.prefix + file.path, ChecksumMode="ENABLED")
        assert any(k.startswith("Checksum") and k != "ChecksumType" for k in held)
    table = SnapshotReader(f"s3://{BUCKET}", s3_client=s3).open(written.prefix).to_arrow()
    assert list(zip(table["key"].to_pylist(), table["value"].to_pylist(), strict=True)) == rows
    assert set(table["lsn"].to_pylist()) == {1_000}


def test_a_processor_bootstraps_from_latest_json_with_the_registry_unreachable(deployment):
    from snapledger.errors import NotFoundError

    s3, _ = deployment
    reader = SnapshotReader(f"s3://{BUCKET}", s3_client=s3)
    with pytest.raises(NotFoundError):
        reader.latest_pointer("orders", 3)
    writer = SnapshotWriter(f"s3://{BUCKET}", "orders", 3, s3_client=s3)
    first = writer.write(lsn=100, epoch=1, data=[("a", b"1")])
    second = writer.write(lsn=200, epoch=1, data=[("a", b"2"), ("b", b"3")], offsets={"o-3": 7})
    for written in (second, first):  # delivered out of order
        register(written.manifest_key)

    # From here on only the bucket is read: no function, no table
    counted: list[str] = []
    s3.meta.events.register("before-send.s3.GetObject", lambda **_: counted.append("get"))
    pointer = reader.latest_pointer("orders", 3)
    assert counted == ["get"]  # the latest, found with one GET
    assert (pointer.snapshot_id, pointer.lsn, pointer.offsets) == (
        second.snapshot_id,
        200,
        {"o-3": 7},
    )
    state = reader.open_latest("orders", 3).to_arrow()
    assert state["key"].to_pylist() == ["a", "b"]


def test_a_snapshot_whose_file_changed_before_registration_is_rejected(deployment):
    s3, _ = deployment
    writer = SnapshotWriter(f"s3://{BUCKET}", "orders", 3, s3_client=s3, checksum="sha256")
    written = writer.write(lsn=10, epoch=1, data=[("a", b"1"), ("b", b"2")])
    # Another writer replaces the data file after the manifest named its checksum
    other = SnapshotWriter(f"s3://{BUCKET}", "scratch", 0, s3_client=s3, checksum="sha256")
    replacement = other.write(lsn=10, epoch=1, data=[("a", b"9"), ("b", b"9")])
    path = written.files[0].path
    body = s3.get_object(Bucket=BUCKET, Key=replacement.prefix + path)["Body"].read()
    s3.put_object(Bucket=BUCKET, Key=written.prefix + path, Body=body, ChecksumAlgorithm="SHA256")

    register(written.manifest_key)

    registry = Snapledger(InProcess())
    record = registry.snapshot("orders", 3, written.snapshot_id)["snapshot"]
    assert record["status"] == "REJECTED"
    assert path in record["rejection_reason"] and "sha256" in record["rejection_reason"]


def test_an_opaque_checkpoint_is_registered_retained_collected_and_downloaded(
    deployment, tmp_path, clock
):
    s3, runtime = deployment
    writer = SnapshotWriter(f"s3://{BUCKET}", "orders", 3, s3_client=s3)
    written = []
    for lsn in (100, 200, 300):
        checkpoint = tmp_path / f"checkpoint-{lsn}"
        (checkpoint / "sst").mkdir(parents=True)
        (checkpoint / "CURRENT").write_bytes(b"MANIFEST-000007\n")
        (checkpoint / "sst" / "000042.sst").write_bytes(bytes(range(256)) * (lsn // 10))
        written.append(writer.write_files(lsn=lsn, epoch=1, paths_or_dir=checkpoint))
        assert register(written[-1].manifest_key)["ok"] is True
        clock.advance(timedelta(days=2))
    registry = Snapledger(InProcess())
    assert registry.latest("orders", 3)["head"]["latest_snapshot_id"] == written[-1].snapshot_id

    registry.set_policy("orders", min_count=1, min_age_hours=1)
    report = registry.gc("orders")["report"]

    assert report["dry_run"] is False
    statuses = {s["snapshot_id"]: s["status"] for s in registry.snapshots("orders", 3)["snapshots"]}
    assert [statuses[w.snapshot_id] for w in written] == ["DELETED", "DELETED", "REGISTERED"]
    assert not runtime.store.head(written[0].prefix + "CURRENT")
    reader = SnapshotReader(f"s3://{BUCKET}", s3_client=s3)
    latest = reader.open(written[-1].prefix)
    assert latest.format == "opaque"
    folder = latest.download(tmp_path / "restored")
    assert (folder / "sst" / "000042.sst").read_bytes() == bytes(range(256)) * 30
    assert (folder / "CURRENT").read_bytes() == b"MANIFEST-000007\n"
    with pytest.raises(SnapshotFormatError, match="opaque"):
        latest.to_arrow()
    assert isinstance(pa.table({"x": [1]}), pa.Table)  # pyarrow is the client's, here too


def test_a_processor_snapshot_with_its_own_column_names_is_rejected_by_the_function(
    deployment,
):
    import io
    import json

    import pyarrow.parquet as pq

    from snapledger.ids import new_ulid
    from snapledger.layout import snapshot_prefix
    from tests.support import manifest_document

    s3, _ = deployment
    sink = io.BytesIO()
    pq.write_table(pa.table({"k": ["a", "b"], "v": [b"1", b"2"]}), sink)
    sid = new_ulid()
    prefix = snapshot_prefix("orders", 3, 50, sid)
    s3.put_object(Bucket=BUCKET, Key=prefix + "part-00000.parquet", Body=sink.getvalue())
    document = manifest_document("orders", 3, 50, sid, {"part-00000.parquet": sink.getvalue()})
    s3.put_object(Bucket=BUCKET, Key=prefix + "_manifest.json", Body=json.dumps(document))

    answer = register(prefix + "_manifest.json")

    assert answer["counts"] == {"rejected": 1}, answer
    record = Snapledger(InProcess()).snapshot("orders", 3, sid)["snapshot"]
    assert record["status"] == "REJECTED"
    assert "missing column 'key'" in record["rejection_reason"]
    assert "columns found: k BYTE_ARRAY STRING, v BYTE_ARRAY" in record["rejection_reason"]
