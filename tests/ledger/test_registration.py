"""Registration end to end on a file:// store and both DynamoDB backends."""

from __future__ import annotations

import hashlib
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from snapledger.core.checksums import compute
from snapledger.ids import new_ulid
from snapledger.layout import snapshot_prefix
from snapledger.models.ledger import LineageId, SnapshotStatus, snapshot_sort_key
from snapledger.services.registration import Outcome, register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import kv_parquet, manifest_document, write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)


def register(key, ledger, store, clock):
    return register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)


def test_newer_snapshot_becomes_latest_and_older_one_is_recorded(ledger, store, clock):
    # Given two snapshots, the newer one registered first
    newer = write_snapshot(store, lsn=200)
    older = write_snapshot(store, lsn=100)
    # When both are registered
    first = register(newer, ledger, store, clock)
    second = register(older, ledger, store, clock)
    # Then the newer is latest, the older recorded, and HEAD says so in one GetItem
    assert first.outcome is Outcome.BECAME_LATEST
    assert second.outcome is Outcome.RECORDED
    head = ledger.get_head(ORDERS_3)
    assert (head.latest_lsn, head.latest_snapshot_id) == (200, first.snapshot_id)
    assert head.version == 3


def test_redelivered_manifest_is_a_duplicate_and_writes_nothing(ledger, store, clock):
    key = write_snapshot(store, lsn=100)
    register(key, ledger, store, clock)
    again = register(key, ledger, store, clock)
    assert again.outcome is Outcome.DUPLICATE
    assert ledger.get_head(ORDERS_3).version == 2
    assert [e.seq for e in ledger.list_events(ORDERS_3).items] == [1, 2]


def test_registry_time_is_the_server_clock(ledger, store, clock):
    key = write_snapshot(store, lsn=100, created_at="1999-01-01T00:00:00Z")
    result = register(key, ledger, store, clock)
    record = ledger.get_snapshot(ORDERS_3, snapshot_sort_key(100, result.snapshot_id))
    assert record.registered_at == clock.now()


def test_same_id_rewritten_with_other_content_is_a_conflict(ledger, store, clock):
    sid = new_ulid()
    key = write_snapshot(store, lsn=100, snapshot_id=sid)
    register(key, ledger, store, clock)
    write_snapshot(store, lsn=100, snapshot_id=sid, epoch=9)
    result = register(key, ledger, store, clock)
    assert result.outcome is Outcome.CONFLICT
    assert "already recorded with other content" in result.reason
    record = ledger.get_snapshot(ORDERS_3, snapshot_sort_key(100, sid))
    assert record.status is SnapshotStatus.REGISTERED and record.epoch == 1


def test_older_epoch_is_fenced_and_recorded(ledger, store, clock):
    register(write_snapshot(store, lsn=100, epoch=5), ledger, store, clock)
    result = register(write_snapshot(store, lsn=500, epoch=4), ledger, store, clock)
    assert result.outcome is Outcome.FENCED
    record = ledger.get_snapshot(ORDERS_3, snapshot_sort_key(500, result.snapshot_id))
    assert record.status is SnapshotStatus.REJECTED and record.rejection_code == "fenced"
    assert ledger.get_head(ORDERS_3).latest_lsn == 100


# --- every rejection rule: recorded as REJECTED with its reason, pointer untouched ---------


def doc(sid, files):
    return manifest_document("orders", 3, 300, sid, {}) | {"files": files}


def _files(store, sid, lsn=300):
    prefix = snapshot_prefix("orders", 3, lsn, sid)
    store.put(prefix + "part-00000.parquet", b"12345")
    return prefix


REJECTIONS = {
    "not json": (lambda sid: b"{not json", "not valid UTF-8 JSON"),
    "schema": (
        lambda sid: manifest_document("orders", 3, 300, sid, {}, format_version=2),
        "does not match format v1",
    ),
    "negative size": (
        lambda sid: doc(sid, [{"path": "a.parquet", "size": -1}]),
        "files.0.size",
    ),
    "dot-dot": (
        lambda sid: doc(sid, [{"path": "../other/part-00000.parquet", "size": 5}]),
        "'.' and '..' segments are not allowed",
    ),
    "absolute": (
        lambda sid: doc(sid, [{"path": "/etc/passwd", "size": 5}]),
        "absolute paths are not allowed",
    ),
    "percent-encoded": (
        lambda sid: doc(sid, [{"path": "%2e%2e/x.parquet", "size": 5}]),
        "no percent-encoding",
    ),
    "other prefix": (
        lambda sid: doc(sid, [{"path": "snapshots//orders/x", "size": 5}]),
        "empty path segments",
    ),
    "look-alike dots": (
        lambda sid: doc(sid, [{"path": "\uff0e\uff0e/x.parquet", "size": 5}]),
        "NFKC",
    ),
    "key disagrees": (
        lambda sid: manifest_document("orders", 4, 301, sid, {"part-00000.parquet": b"12345"}),
        "the manifest says partition=4 but its key says partition=3",
    ),
    "missing file": (
        lambda sid: doc(sid, [{"path": "part-00001.parquet", "size": 5}]),
        "is not in the store",
    ),
    "wrong size": (
        lambda sid: doc(sid, [{"path": "part-00000.parquet", "size": 6}]),
        "is 5 bytes in the store but the manifest says 6",
    ),
    "over 1 MiB": (
        lambda sid: (
            manifest_document(
                "orders",
                3,
                300,
                sid,
                {"part-00000.parquet": b"12345"},
                producer={"name": "x" * 200, "version": "y" * 100},
            )
            | {"pad": "z" * (1024 * 1024)}
        ),
        "over the 1,048,576-byte limit",
    ),
}


@pytest.mark.parametrize("rule", sorted(REJECTIONS))
def test_each_rejection_rule_is_recorded_with_its_reason(rule, ledger, store, clock):
    # Given a latest snapshot and then a bad manifest at a higher LSN
    latest = register(write_snapshot(store, lsn=200), ledger, store, clock)
    sid = new_ulid()
    prefix = _files(store, sid)
    make, expected = REJECTIONS[rule]
    document = make(sid)
    store.put(
        prefix + "_manifest.json",
        document if isinstance(document, bytes) else json.dumps(document).encode(),
    )
    # When it is registered
    result = register(prefix + "_manifest.json", ledger, store, clock)
    # Then it is REJECTED with its reason, and the pointer did not move
    assert result.outcome is Outcome.REJECTED
    assert expected in result.reason
    record = ledger.get_snapshot(ORDERS_3, snapshot_sort_key(300, sid))
    assert record.status is SnapshotStatus.REJECTED
    assert expected in record.rejection_reason
    head = ledger.get_head(ORDERS_3)
    assert (head.latest_lsn, head.latest_snapshot_id) == (200, latest.snapshot_id)
    # and a redelivery is answered the same, without a second record
    assert register(prefix + "_manifest.json", ledger, store, clock).outcome is Outcome.DUPLICATE
    assert head.version == ledger.get_head(ORDERS_3).version


def test_manifest_at_a_key_outside_the_layout_is_kept_not_dropped(ledger, store, clock):
    store.put("snapshots/orders/3/not-a-snapshot/_manifest.json", b"{}")
    result = register("snapshots/orders/3/not-a-snapshot/_manifest.json", ledger, store, clock)
    assert result.outcome is Outcome.REJECTED
    assert "does not follow the snapshot layout" in result.reason
    item = ledger.client.get_item(
        TableName=ledger.table_name,
        Key={
            "pk": {"S": "REJECTED"},
            "sk": {"S": "KEY#snapshots/orders/3/not-a-snapshot/_manifest.json"},
        },
    )["Item"]
    assert "does not follow" in item["reason"]["S"]


def test_a_vanished_manifest_is_answered_vanished_and_records_nothing(ledger, store, clock):
    # Given a manifest key whose object is gone (deleted after its arrival)
    sid = new_ulid()
    key = snapshot_prefix("orders", 3, 100, sid) + "_manifest.json"
    # When it is registered
    result = register(key, ledger, store, clock)
    # Then there is nothing to reject: no event, no record
    assert result.outcome is Outcome.VANISHED
    assert key in result.reason and "gone when registration read it" in result.reason
    state = ledger.load(LineageId(stream="orders", partition=3), (snapshot_sort_key(100, sid),))
    assert state.head.version == 0 and not state.snapshots


def test_a_registered_manifest_gone_on_redelivery_is_a_duplicate(ledger, store, clock):
    # Given a recorded snapshot (not the latest) whose manifest was deleted since
    key = write_snapshot(store, "orders", 3, 100)
    assert register(key, ledger, store, clock).outcome is Outcome.BECAME_LATEST
    newer = write_snapshot(store, "orders", 3, 200)
    assert register(newer, ledger, store, clock).outcome is Outcome.BECAME_LATEST
    store.delete_many([key])
    # When its arrival is delivered again, it is what the ledger holds: a duplicate
    assert register(key, ledger, store, clock).outcome is Outcome.DUPLICATE


def test_format_and_offsets_are_recorded_with_the_snapshot_and_its_event(ledger, store, clock):
    # Given an opaque snapshot (a RocksDB checkpoint) with the processor's input offsets
    key = write_snapshot(
        store,
        files={"000042.sst": b"sst", "CURRENT": b"MANIFEST-000001\n"},
        format="opaque",
        offsets={"orders-3": 18213, "customers-3": 7},
    )
    # When it is registered
    result = register(key, ledger, store, clock)
    # Then the record and the SnapshotRegistered event keep both, as the producer wrote them
    assert result.outcome is Outcome.BECAME_LATEST
    record = ledger.get_snapshot(ORDERS_3, snapshot_sort_key(100, result.snapshot_id))
    assert (record.format, record.offsets) == ("opaque", {"orders-3": 18213, "customers-3": 7})
    event = ledger.get_event(ORDERS_3, 1)
    assert (event.format, event.offsets) == ("opaque", {"orders-3": 18213, "customers-3": 7})


def test_a_manifest_without_format_or_offsets_is_kv_parquet_with_none(ledger, store, clock):
    result = register(write_snapshot(store), ledger, store, clock)
    record = ledger.get_snapshot(ORDERS_3, snapshot_sort_key(100, result.snapshot_id))
    assert (record.format, record.offsets) == ("kv-parquet", None)


@pytest.mark.parametrize("offsets", [{"": 1}, {"orders-3": -1}, {"orders-3": "12"}])
def test_bad_offsets_are_rejected_with_the_field_named(ledger, store, clock, offsets):
    result = register(write_snapshot(store, offsets=offsets), ledger, store, clock)
    assert result.outcome is Outcome.REJECTED
    assert "offsets" in result.reason


@pytest.mark.parametrize("algorithm", ["crc64nvme", "crc32c", "sha256", "md5"])
def test_a_checksum_that_does_not_match_its_file_is_rejected_naming_both(
    ledger, store, clock, algorithm
):
    written, other = kv_parquet("written"), kv_parquet("other")
    data = {"part-00000.parquet": written, "part-00001.parquet": other}
    stated = compute(algorithm, kv_parquet("meant"))  # not what was stored
    right = compute(algorithm, other)
    files = [
        {
            "path": "part-00000.parquet",
            "size": len(written),
            "checksum": f"{algorithm}:{stated.s3_form}",
        },
        {"path": "part-00001.parquet", "size": len(other), "checksum": str(right)},
    ]
    result = register(write_snapshot(store, files=data, files_override=files), ledger, store, clock)
    assert result.outcome is Outcome.REJECTED
    stored = compute(algorithm, written)
    assert "part-00000.parquet" in result.reason
    assert stated.digest.hex() in result.reason and stored.digest.hex() in result.reason
    assert "part-00001.parquet" not in result.reason


def test_checksums_that_match_register(ledger, store, clock):
    data = {"part-00000.parquet": kv_parquet("abc")}
    files = [
        {
            "path": "part-00000.parquet",
            "size": len(data["part-00000.parquet"]),
            "checksum": str(compute("crc64nvme", data["part-00000.parquet"])),
        }
    ]
    result = register(write_snapshot(store, files=data, files_override=files), ledger, store, clock)
    assert result.outcome is Outcome.BECAME_LATEST


def _parquet(**columns) -> bytes:
    table = pa.table(columns)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


@pytest.mark.parametrize(
    ("columns", "named"),
    [
        # the processor's own column names
        (
            {"k": pa.array(["a"]), "v": pa.array([b"1"])},
            ["missing column 'key'", "missing column 'lsn'", "k BYTE_ARRAY STRING"],
        ),
        # the right names, wrong types
        (
            {"key": pa.array([1]), "value": pa.array([b"1"]), "lsn": pa.array([1], pa.int64())},
            ["column 'key' is INT64"],
        ),
        (
            {"key": pa.array(["a"]), "value": pa.array([b"1"]), "lsn": pa.array(["1"])},
            ["column 'lsn' is BYTE_ARRAY STRING"],
        ),
        (
            {"key": pa.array(["a"]), "value": pa.array([b"1"]), "lsn": pa.array([1], pa.int32())},
            ["column 'lsn' is INT32"],
        ),
    ],
)
def test_a_kv_parquet_file_without_the_columns_is_rejected_naming_file_and_columns(
    ledger, store, clock, columns, named
):
    good, bad = kv_parquet("good"), _parquet(**columns)
    data = {"part-00000.parquet": good, "part-00001.parquet": bad}
    result = register(write_snapshot(store, files=data), ledger, store, clock)
    assert result.outcome is Outcome.REJECTED
    assert "'part-00001.parquet'" in result.reason
    assert "part-00000.parquet" not in result.reason
    for words in named:
        assert words in result.reason
    assert result.latest_snapshot_id is None  # it did not become latest


def test_a_file_that_is_not_parquet_is_rejected_unless_the_snapshot_is_opaque(ledger, store, clock):
    data = {"part-00000.parquet": b"rocksdb bytes, not parquet"}
    refused = register(write_snapshot(store, lsn=100, files=data), ledger, store, clock)
    assert refused.outcome is Outcome.REJECTED
    assert "not a readable Parquet file" in refused.reason
    assert '"format": "opaque"' in refused.reason
    accepted = register(
        write_snapshot(store, lsn=200, files=data, format="opaque"), ledger, store, clock
    )
    assert accepted.outcome is Outcome.BECAME_LATEST


def test_a_long_footer_is_read_in_two_ranged_reads(ledger, store, clock, monkeypatch):
    from snapledger.core import parquet_footer

    monkeypatch.setattr(parquet_footer, "FIRST_READ", 64)  # shorter than any footer
    wide = _parquet(
        key=pa.array(["a"]),
        value=pa.array([b"1"]),
        lsn=pa.array([1], pa.int64()),
        **{f"extra{i}": pa.array([i]) for i in range(20)},
    )
    reads = []
    real = store.get_tail
    monkeypatch.setattr(store, "get_tail", lambda key, n: reads.append(n) or real(key, n))
    result = register(
        write_snapshot(store, files={"part-00000.parquet": wide}), ledger, store, clock
    )
    assert result.outcome is Outcome.BECAME_LATEST
    assert len(reads) == 2 and reads[0] == 64 and reads[1] > 64


def test_a_manifest_written_before_format_offsets_and_checksum_checks_registers_unchanged(
    ledger, store, clock
):
    # A manifest exactly as the jobs wrote them before manifest v1 gained format and
    # offsets: sha256 in hex, every v1 field of the time, nothing new.
    data = kv_parquet("before", rows=3)
    sid = new_ulid()
    prefix = snapshot_prefix("orders", 3, 700, sid)
    store.put(prefix + "part-00000.parquet", data)
    document = {
        "format_version": 1,
        "stream": "orders",
        "partition": 3,
        "lsn": 700,
        "snapshot_id": sid,
        "epoch": 2,
        "created_at": "2026-05-01T12:00:00Z",
        "producer": {"name": "snapledger-jobs", "version": "0.1.0"},
        "source": {
            "kind": "compaction",
            "base_snapshot_id": "01JW8Z3K9Q7N4M2P6R8T0V2X4Y",
            "base_lsn": 500,
            "changelog_from_lsn": 501,
            "job_id": "compaction-1",
        },
        "files": [
            {
                "path": "part-00000.parquet",
                "size": len(data),
                "rows": 3,
                "checksum": "sha256:" + hashlib.sha256(data).hexdigest(),
            }
        ],
        "row_count": 3,
    }
    store.put(prefix + "_manifest.json", json.dumps(document).encode())
    result = register(prefix + "_manifest.json", ledger, store, clock)
    assert result.outcome is Outcome.BECAME_LATEST, result.reason
    record = ledger.get_snapshot(
        LineageId(stream="orders", partition=3), snapshot_sort_key(700, sid)
    )
    assert (record.format, record.offsets, record.row_count) == ("kv-parquet", None, 3)
