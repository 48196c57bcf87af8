"""Issue 27 row 7: a registration naming a generation is conditioned on the stream HEAD it
read. A request that commits between that read and the registration's commit makes the
commit lose the race; the retry sees the generation open and counts. Redeliveries answer
consistently: never ``generation_counted=false`` with the reason "counted"."""

from __future__ import annotations

from typing import Any

import pytest

from snapledger.adapters.dynamodb_stream_log import DynamoStreamLog
from snapledger.models.events import StreamSnapshotMemberCounted, StreamSnapshotRequested
from snapledger.models.generations import GenerationStatus
from snapledger.services import generation_reads, generations
from snapledger.services.registration import Outcome, register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import write_snapshot

STREAM = "orders"


@pytest.fixture
def streams(ledger) -> DynamoStreamLog:
    return DynamoStreamLog(ledger.table_name, client=ledger.client)


class RequestAfterFirstRead:
    """The stream's log, but right after the first load (the registration's HEAD read),
    another caller requests a generation of the stream and commits."""

    def __init__(self, streams: DynamoStreamLog, clock: Any, partitions: tuple[int, ...]) -> None:
        self._streams, self._clock, self._partitions = streams, clock, partitions
        self.loads = 0

    def load(self, stream: str, numbers: Any = ()) -> Any:
        state = self._streams.load(stream, numbers)
        self.loads += 1
        if self.loads == 1:
            generations.request_stream_snapshot(
                self._streams, STREAM, self._partitions, clock=self._clock
            )
        return state

    def __getattr__(self, name: str) -> Any:
        return getattr(self._streams, name)


def register(key, ledger, streams, store, clock):
    return register_manifest(
        key, ledger=ledger, store=store, clock=clock, streams=streams, layouts=NATIVE_ONLY
    )


def test_a_request_committing_between_the_head_read_and_the_commit_is_seen(
    ledger, streams, store, clock
):
    # Given a manifest naming generation 1, which is requested just after its HEAD read
    key = write_snapshot(store, STREAM, 0, 100, generation=1)
    racing = RequestAfterFirstRead(streams, clock, partitions=(0, 1))
    # When it registers
    answer = register(key, ledger, racing, store, clock)
    # Then its first commit lost the race and the retry counted it for the open generation
    assert racing.loads >= 2
    assert answer.outcome is Outcome.BECAME_LATEST
    assert (answer.generation_counted, answer.generation_reason) == (True, "counted")
    record = generation_reads.get_generation(streams, STREAM, 1)
    assert record.status is GenerationStatus.REQUESTED and set(record.members) == {0}
    events = streams.list_events(STREAM, limit=10).items
    assert [type(e) for e in events] == [StreamSnapshotRequested, StreamSnapshotMemberCounted]
    # And its redelivery answers the same
    again = register(key, ledger, streams, store, clock)
    assert again.outcome is Outcome.DUPLICATE
    assert (again.generation_counted, again.generation_reason) == (True, "counted")


def test_a_registration_before_the_request_never_answers_counted_when_it_did_not(
    ledger, streams, store, clock
):
    # Given a member registered while its generation did not exist yet
    key = write_snapshot(store, STREAM, 0, 100, generation=1)
    first = register(key, ledger, streams, store, clock)
    assert first.generation_counted is False
    assert "generation 1 of orders was never requested" in first.generation_reason
    # When the generation is then requested and the manifest is delivered again
    generations.request_stream_snapshot(streams, STREAM, (0, 1), clock=clock)
    again = register(key, ledger, streams, store, clock)
    # Then it still did not count, and the reason says why (not "counted")
    assert again.outcome is Outcome.DUPLICATE
    assert again.generation_counted is False
    assert again.generation_reason != "counted"
    assert "requested after this snapshot registered" in again.generation_reason
    assert set(generation_reads.get_generation(streams, STREAM, 1).members) == set()


def test_a_registration_that_did_not_count_commits_without_creating_the_stream_head(
    ledger, streams, store, clock
):
    # A manifest naming a generation of a stream that never had one: the commit checks the
    # stream HEAD is still absent, writes none, and a later request still works.
    key = write_snapshot(store, STREAM, 0, 100, generation=3)
    answer = register(key, ledger, streams, store, clock)
    assert answer.generation_counted is False
    assert streams.get_head(STREAM) is None
    g = generations.request_stream_snapshot(streams, STREAM, (0,), clock=clock)
    assert g.generation.generation == 1
