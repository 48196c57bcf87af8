"""Stream snapshots by generation on both DynamoDB backends: request, count, complete, fail."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from snapledger.adapters.dynamodb_stream_log import DynamoStreamLog
from snapledger.errors import InvalidRequestError, NotFoundError, StoreUnavailableError
from snapledger.models.events import (
    StreamSnapshotCompleted,
    StreamSnapshotFailed,
    StreamSnapshotMemberCounted,
    StreamSnapshotRequested,
)
from snapledger.models.generations import GenerationStatus
from snapledger.models.ledger import LineageId, snapshot_sort_key
from snapledger.models.pointer import GenerationPointer
from snapledger.services import generation_reads, generations
from snapledger.services.registration import (
    Outcome,
    RegistrationFailed,
    register_manifest,
    register_manifests,
)
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import write_snapshot

STREAM = "orders"


@pytest.fixture
def streams(ledger) -> DynamoStreamLog:
    return DynamoStreamLog(ledger.table_name, client=ledger.client)


def register(key, ledger, streams, store, clock):
    return register_manifest(
        key, ledger=ledger, store=store, clock=clock, streams=streams, layouts=NATIVE_ONLY
    )


def request(streams, clock, partitions=(0, 1, 2), **options):
    result = generations.request_stream_snapshot(
        streams, STREAM, partitions, clock=clock, **options
    )
    return result.generation.generation


def member(store, partition, lsn, generation, **overrides):
    return write_snapshot(
        store, STREAM, partition, lsn, generation=generation, offsets={"t": lsn}, **overrides
    )


def stream_events(streams):
    return streams.list_events(STREAM, limit=100).items


def test_a_generation_completes_when_every_member_has_counted(ledger, streams, store, clock):
    g = request(streams, clock, min_lsn={1: 50})
    answers = [
        register(member(store, p, 100 + p, g), ledger, streams, store, clock) for p in (0, 1, 2)
    ]
    assert [a.outcome for a in answers] == [Outcome.BECAME_LATEST] * 3
    assert [a.generation_counted for a in answers] == [True, True, True]
    assert [a.generation_completed for a in answers] == [None, None, True]
    record = generation_reads.get_generation(streams, STREAM, g)
    assert record.status is GenerationStatus.COMPLETED
    assert [(m.partition, m.lsn, m.offsets) for m in record.member_list()] == [
        (0, 100, {"t": 100}),
        (1, 101, {"t": 101}),
        (2, 102, {"t": 102}),
    ]
    events = stream_events(streams)
    assert [type(e) for e in events] == [
        StreamSnapshotRequested,
        StreamSnapshotMemberCounted,
        StreamSnapshotMemberCounted,
        StreamSnapshotMemberCounted,
        StreamSnapshotCompleted,
    ]
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    completed = events[-1]
    assert [(m.partition, m.snapshot_id) for m in completed.members] == [
        (a.partition, a.snapshot_id) for a in answers
    ]
    head = streams.get_head(STREAM)
    assert (head.open_generation, head.completed_generations) == (None, (g,))
    # the member snapshot's record says which generation it counted for
    first = ledger.get_snapshot(
        LineageId(stream=STREAM, partition=0), snapshot_sort_key(100, answers[0].snapshot_id)
    )
    assert (first.generation, first.member_of) == (g, g)


def test_a_snapshot_below_the_minimum_is_recorded_but_does_not_count(ledger, streams, store, clock):
    g = request(streams, clock, partitions=(0, 1), min_lsn={0: 500})
    answer = register(member(store, 0, 400, g), ledger, streams, store, clock)
    assert answer.outcome is Outcome.BECAME_LATEST
    assert answer.generation_counted is False
    assert "LSN 400 is below generation 1's minimum 500 for partition 0" in (
        answer.generation_reason
    )
    record = generation_reads.get_generation(streams, STREAM, g)
    assert record.status is GenerationStatus.REQUESTED and record.missing == (0, 1)
    # a later one at the minimum counts
    later = register(member(store, 0, 500, g), ledger, streams, store, clock)
    assert later.generation_counted is True


def test_redelivery_counts_once_and_answers_counted(ledger, streams, store, clock):
    g = request(streams, clock, partitions=(0, 1))
    key = member(store, 0, 100, g)
    first = register(key, ledger, streams, store, clock)
    again = register(key, ledger, streams, store, clock)
    assert again.outcome is Outcome.DUPLICATE
    assert (first.generation_counted, again.generation_counted) == (True, True)
    assert len(stream_events(streams)) == 2  # requested + one count


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("not_member", "partition 7 is not a member of generation 1 (0, 1)"),
        ("never", "generation 9 of orders was never requested (the newest is 1)"),
        ("second", "partition 0 already counted for generation 1 with snapshot"),
    ],
)
def test_what_does_not_count_says_why(ledger, streams, store, clock, case, expected):
    g = request(streams, clock, partitions=(0, 1))
    if case == "second":
        register(member(store, 0, 100, g), ledger, streams, store, clock)
    partition, generation = {"not_member": (7, g), "never": (0, 9), "second": (0, g)}[case]
    answer = register(member(store, partition, 200, generation), ledger, streams, store, clock)
    assert answer.outcome is Outcome.BECAME_LATEST
    assert answer.generation_counted is False
    assert expected in answer.generation_reason


def test_a_newer_request_supersedes_an_open_one(ledger, streams, store, clock):
    first = request(streams, clock, partitions=(0, 1))
    register(member(store, 0, 100, first), ledger, streams, store, clock)
    second = request(streams, clock, partitions=(0, 1))
    assert second == first + 1
    old = generation_reads.get_generation(streams, STREAM, first)
    assert old.status is GenerationStatus.FAILED
    assert (old.failure_cause.value, old.superseded_by, old.missing) == ("superseded", 2, (1,))
    late = register(member(store, 1, 100, first), ledger, streams, store, clock)
    assert late.generation_counted is False
    assert "generation 1 had failed: superseded by generation 2" in late.generation_reason
    failed, requested = stream_events(streams)[-2:]
    assert isinstance(failed, StreamSnapshotFailed) and failed.missing == (1,)
    assert isinstance(requested, StreamSnapshotRequested) and requested.supersedes == first


def test_past_the_deadline_the_generation_fails_naming_the_missing(ledger, streams, store, clock):
    g = request(streams, clock, partitions=(0, 1, 2), deadline=clock.now() + timedelta(minutes=5))
    register(member(store, 1, 100, g), ledger, streams, store, clock)
    clock.advance(timedelta(minutes=6))
    assert generation_reads.get_generation(streams, STREAM, g).overdue(clock.now())
    failed = generations.fail_overdue(streams, STREAM, clock=clock)
    assert failed is not None and failed.status is GenerationStatus.FAILED
    assert failed.missing == (0, 2)
    assert "deadline" in failed.failure_reason and "partitions 0, 2" in failed.failure_reason
    assert generations.fail_overdue(streams, STREAM, clock=clock) is None  # once


def test_a_registration_past_the_deadline_fails_the_generation(ledger, streams, store, clock):
    g = request(streams, clock, partitions=(0, 1), deadline=clock.now() + timedelta(minutes=1))
    clock.advance(timedelta(minutes=2))
    answer = register(member(store, 0, 100, g), ledger, streams, store, clock)
    assert answer.outcome is Outcome.BECAME_LATEST and answer.generation_counted is False
    assert "had failed" in answer.generation_reason
    assert generation_reads.get_generation(streams, STREAM, g).status is GenerationStatus.FAILED


def test_requests_are_idempotent_and_refuse_bad_input(ledger, streams, clock):
    first = request(streams, clock, request_id="r1")
    request(streams, clock, request_id="r2")  # a newer one in between
    again = generations.request_stream_snapshot(
        streams, STREAM, (0, 1, 2), clock=clock, request_id="r1"
    )
    # the redelivered request answers the generation it opened, not the newest
    assert (again.created, again.generation.generation) == (False, first)
    assert len(stream_events(streams)) == 3  # requested, failed (superseded), requested
    with pytest.raises(InvalidRequestError, match="has passed"):
        request(streams, clock, deadline=clock.now() - timedelta(seconds=1))
    with pytest.raises(InvalidRequestError, match=r"min_lsn names partitions \[5\]"):
        request(streams, clock, min_lsn={5: 1})
    with pytest.raises(InvalidRequestError, match="1 to 64 partitions"):
        request(streams, clock, partitions=range(65))
    with pytest.raises(NotFoundError, match="no generation 7"):
        generation_reads.get_generation(streams, STREAM, 7)


def test_a_failed_generation_goes_with_the_ttl_window_a_completed_one_stays(
    ledger, streams, store, clock
):
    from datetime import timedelta as td

    from snapledger.adapters import dynamodb_codec as codec

    window = DynamoStreamLog(ledger.table_name, client=ledger.client, ttl_window=td(days=30))
    failed = request(window, clock, partitions=(0,))
    completed = request(window, clock, partitions=(0,))  # supersedes the first
    register(member(store, 0, 100, completed), ledger, window, store, clock)

    def ttl(number):
        item = ledger.client.get_item(
            TableName=ledger.table_name,
            Key=codec.key(codec.stream_pk(STREAM), codec.generation_sk(number)),
        )["Item"]
        return item.get(codec.TTL_ATTRIBUTE)

    assert ttl(failed) is not None and ttl(completed) is None


def test_generations_list_newest_first(ledger, streams, clock):
    for _ in range(3):
        request(streams, clock)
    page = streams.list_generations(STREAM, limit=2)
    assert [g.generation for g in page.items] == [3, 2]
    rest = streams.list_generations(STREAM, limit=2, cursor=page.cursor)
    assert [g.generation for g in rest.items] == [1]
    assert generation_reads.current_generation(streams, STREAM).generation == 3


GENERATION_JSON = "snapshots/orders/generation.json"


class CrashingGenerationWrites:
    """The store, with ``generation.json`` writes failing while ``crash`` is set."""

    def __init__(self, store) -> None:
        self._store = store
        self.crash = False

    def __getattr__(self, name):
        return getattr(self._store, name)

    def create(self, key, data):
        self._check(key)
        self._store.create(key, data)

    def replace(self, key, data, *, if_match):
        self._check(key)
        self._store.replace(key, data, if_match=if_match)

    def _check(self, key) -> None:
        if key == GENERATION_JSON and self.crash:
            raise StoreUnavailableError("injected: the process died before generation.json")


def generation_json(store) -> GenerationPointer | None:
    try:
        return GenerationPointer.model_validate_json(store.get(GENERATION_JSON))
    except NotFoundError:
        return None


def test_the_completing_registration_publishes_generation_json(ledger, streams, store, clock):
    g = request(streams, clock, partitions=(0, 1))
    first = register(member(store, 0, 100, g), ledger, streams, store, clock)
    assert generation_json(store) is None  # not complete yet
    second = register(member(store, 1, 200, g), ledger, streams, store, clock)
    pointer = generation_json(store)
    assert pointer is not None and pointer.generation == g
    assert [(m.partition, m.snapshot_id, m.lsn, m.offsets) for m in pointer.members] == [
        (0, first.snapshot_id, 100, {"t": 100}),
        (1, second.snapshot_id, 200, {"t": 200}),
    ]
    manifest = store.get(pointer.members[1].manifest_key)  # each member's manifest is there
    assert json.loads(manifest)["generation"] == g


def test_a_crash_before_generation_json_is_repaired_by_the_redelivery(
    ledger, streams, store, clock
):
    crashing = CrashingGenerationWrites(store)
    g = request(streams, clock, partitions=(0,))
    key = member(store, 0, 100, g)
    crashing.crash = True
    [failed] = register_manifests(
        [key], ledger=ledger, store=crashing, clock=clock, streams=streams, layouts=NATIVE_ONLY
    )
    assert isinstance(failed, RegistrationFailed)  # retried by its queue
    assert generation_reads.get_generation(streams, STREAM, g).status is GenerationStatus.COMPLETED
    assert generation_json(store) is None
    crashing.crash = False
    [again] = register_manifests(
        [key], ledger=ledger, store=crashing, clock=clock, streams=streams, layouts=NATIVE_ONLY
    )
    assert again.outcome is Outcome.DUPLICATE
    assert generation_json(store).generation == g


def test_generation_json_never_goes_back(ledger, streams, store, clock):
    old = request(streams, clock, partitions=(0,))
    old_key = member(store, 0, 100, old)
    register(old_key, ledger, streams, store, clock)
    new = request(streams, clock, partitions=(0,))
    register(member(store, 0, 200, new), ledger, streams, store, clock)
    assert generation_json(store).generation == new
    register(old_key, ledger, streams, store, clock)  # a late redelivery of the older one
    assert generation_json(store).generation == new
