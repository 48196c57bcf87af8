"""Parsing object arrivals from AWS's sample events, and keys relative to the store root."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from snapledger.entrypoints.s3_events import (
    InvalidRecord,
    ObjectArrival,
    key_in_store,
    parse_object_arrivals,
)
from tests.functions.support import sample_event


def test_the_sample_put_notification_is_one_created_object():
    arrivals = parse_object_arrivals(sample_event("s3-put.json"))
    assert arrivals == [
        ObjectArrival(
            bucket="snapledger-snapshots-example",
            key="snapshots/orders/3/00000000000000000100-01JW8Z3K9Q7N4M2P6R8T0V2X4Y/_manifest.json",
            request_id="D82B88E5F771F645",
            created=True,
            via="s3",
            write_token="0C0F6F405D6ED209E1",  # the sequencer: the FIFO deduplication id's
        )
    ]


def test_the_sample_eventbridge_event_is_one_created_object():
    (arrival,) = parse_object_arrivals(sample_event("s3-eventbridge-object-created.json"))
    assert (arrival.bucket, arrival.request_id, arrival.via, arrival.write_token) == (
        "snapledger-snapshots-example",
        "57H08PA84AB1JZW0",
        "eventbridge",
        "006408CAD69598B05E",
    )


def test_fields_aws_adds_later_are_ignored():
    # AWS's newer samples carry detail["event-version"]; such additions must not break us
    event = sample_event("s3-eventbridge-object-created.json")
    event["detail"]["event-version"] = "1.0"
    event["detail"]["object"]["version-id"] = "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e"
    assert len(parse_object_arrivals(event)) == 1


def test_a_record_that_is_not_from_s3_is_answered_on_its_own():
    event = sample_event("s3-put.json")
    event["Records"].append({**event["Records"][0], "eventSource": "aws:sqs"})
    ok, bad = parse_object_arrivals(event)
    assert isinstance(ok, ObjectArrival)
    assert isinstance(bad, InvalidRecord)
    assert bad.fields[0]["field"] == "Records[1].eventSource"


def test_an_event_of_neither_shape_is_a_validation_error():
    with pytest.raises(ValidationError):
        parse_object_arrivals(sample_event("eventbridge-scheduled.json"))


@pytest.mark.parametrize(
    ("root", "bucket", "key", "expected"),
    [
        ("s3://b", "b", "snapshots/x", "snapshots/x"),
        ("s3://b/team", "b", "team/snapshots/x", "snapshots/x"),
        ("s3://b/team/", "b", "team/snapshots/x", "snapshots/x"),
        ("s3://b/team", "b", "teams/snapshots/x", None),
        ("s3://b/team", "b", "snapshots/x", None),
        ("s3://b", "other", "snapshots/x", None),
        ("file:///data/root", "any-bucket", "snapshots/x", "snapshots/x"),
    ],
)
def test_keys_relative_to_the_store_root(root, bucket, key, expected):
    assert key_in_store(root, bucket, key) == expected


def test_a_record_that_is_not_an_object_is_named_by_its_index():
    event = sample_event("s3-put.json")
    event["Records"].insert(0, "not a record")
    bad, ok = parse_object_arrivals(event)
    assert isinstance(bad, InvalidRecord)
    assert [f["field"] for f in bad.fields] == ["Records[0]"]
    assert isinstance(ok, ObjectArrival)
