"""A stream generation's member (partition, snapshot id, LSN, epoch, offsets) is one model
(models/snapshot.py ``GenerationMember``), composed into every model that names one, with
one name for the partition; StreamSnapshotMemberCounted's JSON keeps ``member``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import BaseModel

from snapledger.core.stream import StreamState, decide_stream, evolve_stream_all
from snapledger.models.commands import CountGenerationMember, RequestStreamSnapshot
from snapledger.models.events import (
    STREAM_EVENT_ADAPTER,
    StreamSnapshotCompleted,
    StreamSnapshotMemberCounted,
)
from snapledger.models.generations import CountedMember, StreamMember
from snapledger.models.pointer import GenerationPointerMember
from snapledger.models.snapshot import GenerationMember, SnapshotFields
from tests.unit.model_scan import declared_models

T0 = datetime(2026, 1, 1, tzinfo=UTC)
MEMBER_FIELDS = set(GenerationMember.model_fields)
COMPOSED = (
    CountGenerationMember,
    StreamSnapshotMemberCounted,
    StreamMember,
    CountedMember,
    GenerationPointerMember,
)


@pytest.mark.parametrize("model", COMPOSED, ids=lambda m: m.__name__)
def test_every_model_naming_a_member_is_composed_of_the_one_declaration(
    model: type[BaseModel],
) -> None:
    # Then it is a GenerationMember, with the member's fields under their one name
    assert issubclass(model, GenerationMember)
    assert set(model.model_fields) >= MEMBER_FIELDS


def test_no_other_model_declares_a_members_fields_again() -> None:
    # Given every model of snapledger.models
    # Then any that names a snapshot by its id, LSN, epoch and offsets alone (not a whole
    # snapshot's description, SnapshotFields, nor a manifest or pointer with its files) is a
    # member, composed of the one model
    members = [
        model
        for model in declared_models()
        if {"snapshot_id", "lsn", "epoch", "offsets"} <= set(model.model_fields)
        and not issubclass(model, SnapshotFields)
        and "files" not in model.model_fields
    ]
    assert {m.__name__ for m in members} >= {m.__name__ for m in COMPOSED}
    for model in members:
        assert issubclass(model, GenerationMember), model.__name__
    # And only generation.json's member narrows the fields (to their bounds): none renames
    for model in COMPOSED:
        own = set(model.__annotations__) & MEMBER_FIELDS
        allowed = {"partition", "snapshot_id", "lsn", "epoch"}
        assert own <= (allowed if model is GenerationPointerMember else set()), model.__name__


def test_member_counted_names_the_partition_member_on_the_wire_and_partition_in_code() -> None:
    # Given a StreamSnapshotMemberCounted as stored (its JSON names the partition member)
    stored = {
        "seq": 2,
        "at": "2026-01-01T00:00:00Z",
        "stream": "orders",
        "command_id": "c",
        "type": "StreamSnapshotMemberCounted",
        "generation": 1,
        "member": 3,
        "snapshot_id": "s",
        "lsn": 10,
        "epoch": 1,
        "offsets": None,
        "missing": [4],
    }
    # When it is read
    event = STREAM_EVENT_ADAPTER.validate_python(stored)
    # Then code reads .partition, and it writes back exactly what was stored
    assert isinstance(event, StreamSnapshotMemberCounted)
    assert event.partition == 3
    assert event.model_dump(mode="json") == stored
    assert "partition" not in StreamSnapshotMemberCounted.model_json_schema()["properties"]


def test_the_last_count_completes_with_the_members_fields_unchanged() -> None:
    # Given a generation of one partition, requested
    state = StreamState.empty("orders")
    request = RequestStreamSnapshot(
        stream="orders", partitions=(3,), deadline=T0.replace(year=2027), request_id="r"
    )
    state = evolve_stream_all(state, decide_stream(state, request, T0))
    count = CountGenerationMember(
        stream="orders",
        generation=1,
        partition=3,
        snapshot_id="s",
        lsn=10,
        epoch=1,
        offsets={"t-3": 9},
        registration_command_id="reg",
    )
    # When its member counts
    events = decide_stream(state, count, T0)
    # Then the completed event's member is the command's member, field for field
    completed = events[-1]
    assert isinstance(completed, StreamSnapshotCompleted)
    expected = count.model_dump(include=MEMBER_FIELDS)
    assert [m.model_dump() for m in completed.members] == [expected]
    state = evolve_stream_all(state, events)
    assert state.generations[1].members[3].model_dump(include=MEMBER_FIELDS) == expected
