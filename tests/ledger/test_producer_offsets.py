"""The producer-offsets registry on the ledger table (services/producer_offsets.py over
adapters/dynamodb_producer_offsets.py), on moto and DynamoDB Local: Fluss's contract
(apache/fluss#2434): atomic check-and-create, CREATED or ALREADY_EXISTS, an expired entry
replaced atomically, get, delete, and the sweep of expired entries."""

from __future__ import annotations

from datetime import timedelta

import pytest

from snapledger.adapters import dynamodb_codec as codec
from snapledger.adapters.dynamodb_producer_offsets import DynamoProducerOffsets, producer_key
from snapledger.models.producer_offsets import BucketOffset, ProducerOffsets, RegisterResult
from snapledger.services import producer_offsets as registry

START = (
    BucketOffset(table_id=3, bucket=0, offset=952),
    BucketOffset(table_id=3, bucket=1, offset=1045),
)
LATER = (BucketOffset(table_id=3, bucket=0, offset=5000),)


@pytest.fixture
def store(ledger) -> DynamoProducerOffsets:
    return DynamoProducerOffsets(ledger.table_name, client=ledger.client)


def test_the_first_registration_is_created_and_a_second_finds_it(store, clock):
    first = registry.register(store, clock, "job-1", START)
    again = registry.register(store, clock, "job-1", LATER)

    assert first.result is RegisterResult.CREATED and not first.replaced_expired
    assert again.result is RegisterResult.ALREADY_EXISTS
    assert again.entry == first.entry  # the first offsets stand, the second are not written
    got = registry.get(store, clock, "job-1")
    assert got is not None and got.offsets == START
    assert got.expires_at == clock.now() + timedelta(hours=24)  # the default TTL


def test_an_expired_entry_reads_as_absent_and_is_replaced(store, clock):
    registry.register(store, clock, "job-1", START, ttl_seconds=60)
    clock.advance(timedelta(seconds=60))

    assert registry.get(store, clock, "job-1") is None
    replaced = registry.register(store, clock, "job-1", LATER)
    assert replaced.result is RegisterResult.CREATED and replaced.replaced_expired
    got = registry.get(store, clock, "job-1")
    assert got is not None and got.offsets == LATER


def test_a_registration_that_loses_the_race_answers_already_exists(store, clock):
    # Given a registration that read "nothing there" ...
    class Racing:
        def __init__(self) -> None:
            self.raced = False

        def get(self, producer_id: str) -> ProducerOffsets | None:
            return store.get(producer_id)

        def create(self, entry, *, replacing):
            if not self.raced:  # ... and another registration creates it before it writes
                self.raced = True
                assert registry.register(store, clock, "job-1", LATER).result.value == "CREATED"
            return store.create(entry, replacing=replacing)

        def delete(self, producer_id, *, only=None):
            return store.delete(producer_id, only=only)

        def expired(self, now, *, limit):
            return store.expired(now, limit=limit)

    # Then its conditional write fails, it reads again and finds the winner's entry
    lost = registry.register(Racing(), clock, "job-1", START)
    assert lost.result is RegisterResult.ALREADY_EXISTS
    assert lost.entry.offsets == LATER
    assert store.get("job-1").offsets == LATER  # type: ignore[union-attr]


def test_two_replacements_of_one_expired_entry_write_once(store, clock):
    registry.register(store, clock, "job-1", START, ttl_seconds=60)
    clock.advance(timedelta(minutes=5))
    expired = store.get("job-1")
    assert expired is not None
    first = ProducerOffsets(
        producer_id="job-1",
        offsets=LATER,
        registered_at=clock.now(),
        expires_at=clock.now() + timedelta(hours=1),
    )
    second = first.model_copy(update={"offsets": START})
    assert store.create(first, replacing=expired) is True
    assert store.create(second, replacing=expired) is False  # the expired one is gone
    assert store.create(second, replacing=None) is False  # and something is there
    assert store.get("job-1") == first


def test_delete_removes_the_entry_once(store, clock):
    registry.register(store, clock, "job-1", START)
    assert registry.delete(store, "job-1") is True
    assert registry.get(store, clock, "job-1") is None
    assert registry.delete(store, "job-1") is False
    assert registry.register(store, clock, "job-1", LATER).result is RegisterResult.CREATED


def test_the_sweep_deletes_expired_entries_only(store, clock):
    registry.register(store, clock, "old-1", START, ttl_seconds=60)
    registry.register(store, clock, "old-2", START, ttl_seconds=60)
    registry.register(store, clock, "live", START)
    clock.advance(timedelta(minutes=2))

    assert sorted(registry.sweep(store, clock)) == ["old-1", "old-2"]
    assert store.get("old-1") is None and store.get("old-2") is None
    assert store.get("live") is not None
    assert registry.sweep(store, clock) == []


def test_the_sweep_keeps_an_entry_replaced_after_it_was_listed(store, clock):
    registry.register(store, clock, "job-1", START, ttl_seconds=60)
    clock.advance(timedelta(minutes=2))
    [listed] = store.expired(clock.now(), limit=10)
    registry.register(store, clock, "job-1", LATER)  # replaced between listing and deleting

    assert store.delete("job-1", only=listed) is False
    assert store.get("job-1").offsets == LATER  # type: ignore[union-attr]


def test_the_item_has_its_own_key_prefix_kind_and_ttl(store, ledger, clock):
    done = registry.register(store, clock, "job-1", START)
    item = ledger.client.get_item(TableName=ledger.table_name, Key=producer_key("job-1"))["Item"]
    assert item["pk"] == {"S": "PRODUCER#job-1"} and item["sk"] == {"S": "OFFSETS"}
    assert item["kind"] == {"S": codec.PRODUCER_OFFSETS_KIND}
    assert int(item["ttl"]["N"]) == int(done.entry.expires_at.timestamp())
