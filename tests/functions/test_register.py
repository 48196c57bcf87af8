"""The register function on AWS's sample events, against moto and a file:// (or moto S3) store."""

from __future__ import annotations

import importlib
from typing import Any

import boto3
import pytest

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.object_store import open_object_store
from snapledger.entrypoints.register import RecordsFailedError
from snapledger.errors import StoreUnavailableError
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.runtime import runtime_override
from snapledger.services.queries import iter_snapshots
from tests.functions.support import (
    emitted_metrics,
    item_count,
    object_created_event,
    s3_put_event,
    sample_event,
)
from tests.support import create_ledger, make_runtime, write_snapshot

ORDERS_3 = LineageId(stream="orders", partition=3)
# The snapshot the sample events name (tests/events/*.json): LSN 100 of orders/3.
SAMPLE_ID = "01JW8Z3K9Q7N4M2P6R8T0V2X4Y"
SAMPLE_BUCKET = "snapledger-snapshots-example"


def correlation_id() -> str | None:
    """The correlation id the register function's logger stamped on the last invoke."""
    return importlib.import_module("functions.register").logger.get_correlation_id()


def unplaceable_item(ledger, key: str) -> dict[str, Any] | None:
    """The ``REJECTED`` item recorded for a manifest key outside the layout."""
    response = ledger.client.get_item(
        TableName=ledger.table_name,
        Key=codec.key(codec.UNPLACEABLE_PK, codec.UNPLACEABLE_PREFIX + key),
    )
    return response.get("Item")


def test_sample_put_notification_registers_its_manifest_as_latest(
    rt, ledger, store, context, register_handler, capsys
):
    # Given the snapshot the sample S3 Put notification names, written to the store
    key = write_snapshot(store, "orders", 3, 100, snapshot_id=SAMPLE_ID)
    event = sample_event("s3-put.json")
    assert event["Records"][0]["s3"]["object"]["key"] == key
    # When S3 delivers the notification
    answer = register_handler(event, context)
    # Then the manifest is the lineage's latest, answered and counted
    assert answer == {
        "ok": True,
        "records": [
            {
                "key": key,
                "outcome": "became_latest",
                "snapshot_id": SAMPLE_ID,
                "lsn": 100,
                "layout": "native",  # the layout whose strategy checked it
            }
        ],
        "counts": {"became_latest": 1},
    }
    assert ledger.get_head(ORDERS_3).latest_snapshot_id == SAMPLE_ID
    assert emitted_metrics(capsys.readouterr().out)["Registration_became_latest"] == 1
    # And the logs carry the S3 request id as the correlation id
    assert correlation_id() == "D82B88E5F771F645"


def test_encoded_keys_are_decoded_before_the_store_is_read(
    ledger, clock, context, register_handler
):
    # Given an S3 store rooted at a prefix with a space, holding a snapshot
    s3 = boto3.client("s3", region_name="us-east-1")
    s3.create_bucket(Bucket=SAMPLE_BUCKET)
    store = open_object_store(f"s3://{SAMPLE_BUCKET}/team data", s3_client=s3)
    key = write_snapshot(store, "orders", 3, 100)
    # ... and a notification naming it as S3 does: "team data/..." arrives as "team+data/..."
    event = s3_put_event(f"team data/{key}")
    assert event["Records"][0]["s3"]["object"]["key"].startswith("team+data/snapshots/")
    # When it is delivered
    with runtime_override(make_runtime(ledger, store, clock)):
        answer = register_handler(event, context)
    # Then the decoded key, relative to the root, was registered
    assert [(r["key"], r["outcome"]) for r in answer["records"]] == [(key, "became_latest")]
    assert ledger.get_head(ORDERS_3).latest_lsn == 100


def test_out_of_layout_keys_are_recorded_rejected_under_their_decoded_names(
    rt, ledger, context, register_handler
):
    # Given manifests whose keys hold a space and a plus sign (no stream may have either)
    spaced = "snapshots/my orders/3/00000000000000000100-01JW8Z3K9Q7N4M2P6R8T0V2X4Y/_manifest.json"
    plus = "snapshots/a+b/3/00000000000000000100-01JW8Z3K9Q7N4M2P6R8T0V2X4Y/_manifest.json"
    event = s3_put_event(spaced, plus)
    assert [r["s3"]["object"]["key"].split("/")[1] for r in event["Records"]] == [
        "my+orders",
        "a%2Bb",
    ]
    # When the notification is delivered
    answer = register_handler(event, context)
    # Then both are rejected and recorded under the real (decoded) keys, not the encoded ones
    assert [(r["key"], r["outcome"]) for r in answer["records"]] == [
        (spaced, "rejected"),
        (plus, "rejected"),
    ]
    assert unplaceable_item(ledger, spaced) is not None
    assert unplaceable_item(ledger, plus) is not None
    assert unplaceable_item(ledger, "snapshots/my+orders/3/" + spaced.split("/", 3)[3]) is None


def test_eventbridge_object_created_registers_its_manifest(
    rt, ledger, store, context, register_handler
):
    # Given the snapshot the sample EventBridge event names
    key = write_snapshot(store, "orders", 3, 100, snapshot_id=SAMPLE_ID)
    event = sample_event("s3-eventbridge-object-created.json")
    assert event["detail"]["object"]["key"] == key
    # When EventBridge delivers it
    answer = register_handler(event, context)
    # Then it is the latest
    assert [(r["key"], r["outcome"]) for r in answer["records"]] == [(key, "became_latest")]
    assert ledger.get_head(ORDERS_3).latest_snapshot_id == SAMPLE_ID
    # And the logs carry the EventBridge event id as the correlation id
    assert correlation_id() == event["id"]


def test_eventbridge_keys_are_taken_as_they_are(rt, ledger, context, register_handler):
    # Given an EventBridge event for a key with a literal '+' (EventBridge does not encode)
    key = "snapshots/a+b/3/00000000000000000100-01JW8Z3K9Q7N4M2P6R8T0V2X4Y/_manifest.json"
    # When it is delivered
    answer = register_handler(object_created_event(key), context)
    # Then the '+' is kept: the record names the key as written
    assert [(r["key"], r["outcome"]) for r in answer["records"]] == [(key, "rejected")]
    assert unplaceable_item(ledger, key) is not None


class FailingStore:
    """The file store, except that reading one manifest fails as an unreachable S3 would."""

    def __init__(self, inner, failing_key: str) -> None:
        self.inner = inner
        self.failing_key = failing_key

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get(self, key: str, *, max_bytes: int | None = None) -> bytes:
        if key == self.failing_key:
            raise StoreUnavailableError("S3 did not answer (simulated)")
        return self.inner.get(key, max_bytes=max_bytes)


def test_an_unexpected_failure_is_raised_after_every_other_record_is_processed(
    ledger, store, clock, context, register_handler, capsys
):
    # Given a batch: a manifest the store cannot read, an invalid manifest, a valid one
    unreadable = write_snapshot(store, lsn=300)
    invalid = write_snapshot(store, lsn=200, manifest=b"not json")
    valid = write_snapshot(store, lsn=100)
    event = s3_put_event(unreadable, invalid, valid)
    # When it is delivered while reading the first manifest fails
    failing = make_runtime(ledger, FailingStore(store, unreadable), clock)
    with runtime_override(failing), pytest.raises(RecordsFailedError) as raised:
        register_handler(event, context)
    # Then the invoke fails naming the record, from the store's error (so Lambda retries) ...
    assert raised.value.keys == [unreadable]
    assert isinstance(raised.value.__cause__, StoreUnavailableError)
    # ... after the other records were recorded: the valid one latest, the invalid rejected
    assert ledger.get_head(ORDERS_3).latest_lsn == 100
    statuses = {s.lsn: s.status for s in iter_snapshots(ledger, ORDERS_3)}
    assert statuses == {100: SnapshotStatus.REGISTERED, 200: SnapshotStatus.REJECTED}
    # ... and the failure was counted (metrics are flushed even though the invoke raised)
    assert emitted_metrics(capsys.readouterr().out)["Registration_failed"] == 1
    # When Lambda retries the same event and the store answers again
    with runtime_override(make_runtime(ledger, store, clock)):
        retried = register_handler(event, context)
    # Then the failed record is registered and the others are duplicates
    assert [r["outcome"] for r in retried["records"]] == ["became_latest", "duplicate", "duplicate"]


def test_malformed_and_ignored_records_are_answered_beside_the_good_ones(
    rt, ledger, store, context, register_handler, capsys
):
    # Given a notification with a record that is no S3 record, a manifest, a data file
    # and a deletion
    manifest = write_snapshot(store, lsn=100)
    data_file = manifest.replace("_manifest.json", "part-00000.parquet")
    event = s3_put_event(manifest, manifest, data_file, manifest)
    del event["Records"][0]["s3"]
    event["Records"][3]["eventName"] = "ObjectRemoved:Delete"
    # When it is delivered
    answer = register_handler(event, context)
    # Then each record has its answer, and the manifest is registered
    outcomes = [(r.get("key"), r["outcome"]) for r in answer["records"]]
    assert outcomes == [
        (None, "invalid_record"),
        (manifest, "became_latest"),
        (data_file, "ignored"),
        (manifest, "ignored"),
    ]
    assert "Records[0].s3: required" in answer["records"][0]["reason"]
    assert ledger.get_head(ORDERS_3).latest_lsn == 100
    metrics = emitted_metrics(capsys.readouterr().out)
    assert metrics["Registration_invalid_record"] == 1
    assert metrics["Registration_ignored"] == 2


def ledger_state(ledger) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """What a delivery order must not change: the pointer, the counts, every snapshot.

    ``version`` numbers are left out: they count events, and an out-of-order delivery
    rightly has fewer (an older snapshot arriving later is registered without a
    LatestAdvanced).
    """
    head = ledger.get_head(ORDERS_3, consistent=True)
    pointer = head.model_dump(
        include={"latest_snapshot_id", "latest_lsn", "max_epoch", "registered_count"}
        | {"rejected_count"}
    )
    snapshots = [s.model_dump(exclude={"version"}) for s in iter_snapshots(ledger, ORDERS_3)]
    return pointer, snapshots


def test_redelivery_and_reordering_leave_the_state_of_one_in_order_delivery(
    ledger, store, clock, context, register_handler
):
    # Given three snapshots and an invalid manifest, and three fresh ledgers
    keys = [write_snapshot(store, lsn=lsn) for lsn in (100, 200, 300)]
    keys.append(write_snapshot(store, lsn=400, manifest=b"[]"))
    in_order, twice, reversed_twice = (
        ledger,
        create_ledger(ledger.client),
        create_ledger(ledger.client),
    )

    def deliver(target, event) -> None:
        with runtime_override(make_runtime(target, store, clock)):
            register_handler(event, context)

    # When one ledger gets the batch once, in order
    deliver(in_order, s3_put_event(*keys))
    # ... another gets the same event twice
    deliver(twice, s3_put_event(*keys))
    deliver(twice, s3_put_event(*keys))
    # ... and a third gets each record on its own, in reverse order, each one twice
    for key in reversed(keys):
        deliver(reversed_twice, s3_put_event(key))
        deliver(reversed_twice, object_created_event(key))
    # Then all three hold the same pointer and the same snapshots
    expected = ledger_state(in_order)
    assert expected[0]["latest_lsn"] == 300
    assert [s["status"] for s in expected[1]] == [
        "REJECTED",
        "REGISTERED",
        "REGISTERED",
        "REGISTERED",
    ]
    assert ledger_state(twice) == expected
    assert ledger_state(reversed_twice) == expected
    # And the duplicate delivery wrote no event
    assert twice.get_head(ORDERS_3).version == in_order.get_head(ORDERS_3).version


@pytest.mark.parametrize(
    ("event", "fields"),
    [
        pytest.param(
            sample_event("eventbridge-scheduled.json"),
            {"source", "detail-type", "detail.bucket", "detail.object"},
            id="scheduled-event",
        ),
        pytest.param(
            sample_event("emr-serverless-job-run-state-change.json"),
            {"source", "detail-type", "detail.bucket", "detail.object"},
            id="emr-event",
        ),
        pytest.param({"hello": "world"}, {"Records"}, id="neither-shape"),
        pytest.param({"Records": "all of them"}, {"Records"}, id="records-not-a-list"),
        pytest.param(["Records"], {"(payload)"}, id="not-an-object"),
    ],
)
def test_a_malformed_event_gets_a_validation_answer_and_writes_nothing(
    rt, ledger, context, register_handler, capsys, event, fields
):
    # Given an event that is neither an S3 notification nor an S3 Object Created event
    # When it is delivered
    answer = register_handler(event, context)
    # Then the answer names the fields and what was expected, and nothing is written
    assert answer["ok"] is False
    assert answer["error"] == "validation"
    assert {f["field"] for f in answer["fields"]} == fields
    assert "Expected an S3 event notification" in answer["message"]
    assert item_count(ledger) == 0
    assert emitted_metrics(capsys.readouterr().out)["Registration_malformed_event"] == 1
