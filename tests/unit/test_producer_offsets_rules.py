"""The producer-offsets registry's pure rules (core/producer_offsets.py) and its record's
validation: CREATED when nothing or only an expired entry stands, else the live entry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from snapledger.core.producer_offsets import AlreadyExists, Create, decide_register, live, to_sweep
from snapledger.models.producer_offsets import BucketOffset, ProducerOffsets

NOW = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
DAY = timedelta(hours=24)
OFFSETS = (
    BucketOffset(table_id=7, bucket=0, offset=12),
    BucketOffset(table_id=7, bucket=1, offset=40),
)


def entry(registered: datetime, ttl: timedelta = DAY) -> ProducerOffsets:
    return ProducerOffsets(
        producer_id="job-1", offsets=OFFSETS, registered_at=registered, expires_at=registered + ttl
    )


def test_nothing_registered_creates_on_condition_that_nothing_is():
    decision = decide_register(None, "job-1", OFFSETS, now=NOW, ttl=DAY)
    assert decision == Create(entry(NOW), replacing=None)


def test_a_live_entry_stands():
    standing = entry(NOW - timedelta(hours=23))
    assert decide_register(standing, "job-1", OFFSETS[:1], now=NOW, ttl=DAY) == AlreadyExists(
        standing
    )


def test_an_expired_entry_is_replaced_on_condition_that_it_is_still_there():
    expired = entry(NOW - DAY)  # expires exactly now
    decision = decide_register(expired, "job-1", OFFSETS, now=NOW, ttl=DAY)
    assert decision == Create(entry(NOW), replacing=expired)


def test_readers_and_the_sweep_see_an_expired_entry_as_gone():
    fresh, old = entry(NOW - timedelta(hours=1)), entry(NOW - 2 * DAY)
    assert live(fresh, NOW) == fresh
    assert live(old, NOW) is None
    assert live(None, NOW) is None
    assert to_sweep([fresh, old], NOW) == [old]


def test_a_bucket_listed_twice_is_refused_naming_it():
    with pytest.raises(ValidationError, match="bucket 1 of table 7 is listed twice"):
        ProducerOffsets(
            producer_id="job-1",
            offsets=(*OFFSETS, BucketOffset(table_id=7, bucket=1, offset=3)),
            registered_at=NOW,
            expires_at=NOW + DAY,
        )
    # the same bucket number of another partition is another bucket
    ProducerOffsets(
        producer_id="job-1",
        offsets=(
            BucketOffset(table_id=7, partition_id=1, bucket=0, offset=1),
            BucketOffset(table_id=7, partition_id=2, bucket=0, offset=1),
        ),
        registered_at=NOW,
        expires_at=NOW + DAY,
    )


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"producer_id": ""}, "producer_id"),
        ({"producer_id": "a" * 129}, "producer_id"),
        ({"producer_id": "job#1"}, "producer_id"),
        ({"offsets": ()}, "offsets"),
    ],
)
def test_bad_fields_are_named(fields, named):
    document = {
        "producer_id": "job-1",
        "offsets": OFFSETS,
        "registered_at": NOW,
        "expires_at": NOW + DAY,
        **fields,
    }
    with pytest.raises(ValidationError) as refused:
        ProducerOffsets.model_validate(document)
    assert refused.value.errors()[0]["loc"][0] == named
