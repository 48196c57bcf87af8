"""Stored events carry their type's version; reading passes older ones through upcasters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from snapledger.adapters import dynamodb_codec as codec
from snapledger.entrypoints.ledger_events import publish_records
from snapledger.models import upcasting
from snapledger.models.events import SnapshotEvicted, StreamSnapshotCompleted
from snapledger.models.upcasting import (
    CURRENT_VERSIONS,
    EventVersionError,
    UpcasterChainError,
    check_chains,
)
from tests.bus_events_support import STREAM_RECORDS, stream_record

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "2026-11-28"


def _golden_item(event_type: str) -> dict[str, Any]:
    item: dict[str, Any] = json.loads((GOLDEN / f"{event_type}.json").read_text())["item"]
    return item


def _noop(fields: dict[str, Any]) -> dict[str, Any]:
    return fields


# --- the chain is checked when the module is imported ------------------------------------------


def test_the_declared_upcasters_lead_every_type_to_its_current_version() -> None:
    check_chains(CURRENT_VERSIONS, upcasting._UPCASTERS)


def test_a_gap_in_a_types_chain_is_refused() -> None:
    # Given a type at version 4 with upcasters from v1 and v3 only (none from v2)
    versions = {**CURRENT_VERSIONS, "SnapshotEvicted": 4}
    planted = {("SnapshotEvicted", 1): _noop, ("SnapshotEvicted", 3): _noop}
    # Then the check refuses it, naming the type and the missing step
    with pytest.raises(UpcasterChainError, match=r"SnapshotEvicted: no upcaster from v2 to v3"):
        check_chains(versions, planted)


def test_an_upcaster_of_no_type_or_past_the_current_version_is_refused() -> None:
    planted = {("SnapshotTeleported", 1): _noop, ("SnapshotEvicted", 1): _noop}
    with pytest.raises(UpcasterChainError) as refused:
        check_chains(CURRENT_VERSIONS, planted)
    assert "'SnapshotTeleported', which is not an event type" in str(refused.value)
    assert "SnapshotEvicted: an upcaster from v1, but the type is at v1" in str(refused.value)


def test_two_upcasters_for_one_step_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(upcasting._UPCASTERS, ("SnapshotEvicted", 1), _noop)
    with pytest.raises(UpcasterChainError, match="SnapshotEvicted v1 has two upcasters"):
        upcasting.upcaster(SnapshotEvicted, from_version=1)(_noop)


# --- reading applies the chain ---------------------------------------------------------------


def test_reading_applies_each_upcaster_from_the_stored_version_to_the_current_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given SnapshotEvicted at v3, with a step from v1 and one from v2 that each mark reason
    monkeypatch.setitem(upcasting.CURRENT_VERSIONS, "SnapshotEvicted", 3)
    for step in (1, 2):
        monkeypatch.setitem(
            upcasting._UPCASTERS,
            ("SnapshotEvicted", step),
            lambda f, step=step: {**f, "reason": f"{f['reason']}+v{step + 1}"},
        )
    item = _golden_item("SnapshotEvicted")  # stored before versions: version 1
    # When it is read as stored (v1), and as if stored at v2 and at v3
    read = {
        stored: codec.event_from_item({**item, "schema_version": {"N": str(stored)}})
        for stored in (1, 2, 3)
    }
    unversioned = codec.event_from_item(item)
    # Then each step ran once, in order, from the stored version on
    assert isinstance(unversioned, SnapshotEvicted)
    assert unversioned.reason == "reason-example+v2+v3"
    assert {v: e.reason for v, e in read.items() if isinstance(e, SnapshotEvicted)} == {
        1: "reason-example+v2+v3",
        2: "reason-example+v3",
        3: "reason-example",
    }


def test_a_version_newer_than_this_release_reads_is_refused_saying_to_deploy_it() -> None:
    # Given an item a later release wrote: SnapshotEvicted at a version this one lacks
    newer = CURRENT_VERSIONS["SnapshotEvicted"] + 1
    item = {**_golden_item("SnapshotEvicted"), "schema_version": {"N": str(newer)}}
    # Then reading it names the type and both versions, and says what to do
    with pytest.raises(EventVersionError) as refused:
        codec.event_from_item(item)
    assert str(refused.value) == (
        f"a stored SnapshotEvicted event is version {newer}, and this release reads "
        "SnapshotEvicted up to version 1: it was written by a newer release of snapledger. "
        "Deploy that release (or a later one) to read it"
    )


@pytest.mark.parametrize("value", [{"S": "2"}, {"N": "1.5"}, {"N": "-1"}, "2", {"N": "0"}])
def test_a_version_attribute_that_is_no_version_is_refused(value: Any) -> None:
    item = {**_golden_item("SnapshotEvicted"), "schema_version": value}
    with pytest.raises(EventVersionError, match=r"not a version|versions start at 1"):
        codec.event_from_item(item)


def test_the_enrichment_publishes_a_too_new_event_as_undecodable_with_the_reason() -> None:
    # Given a stream record of an item stored at a version this release does not know
    item = {**_golden_item("PolicySet"), "schema_version": {"N": "9"}}
    record = stream_record(item, view_type="NEW_IMAGE")
    # When the Pipe's enrichment reads it
    published = publish_records([record], STREAM_RECORDS)
    # Then it is published as LedgerEventUndecodable, saying which versions and what to do
    (undecodable,) = published.undecodable
    assert undecodable.event_type == "PolicySet"
    assert "PolicySet event is version 9" in undecodable.reason
    assert "Deploy that release" in undecodable.reason


# --- writing ------------------------------------------------------------------------------------


def test_an_item_is_written_with_its_types_version_above_1_and_without_one_at_1(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    event = codec.event_from_item(_golden_item("SnapshotEvicted"))
    assert "schema_version" not in codec.event_item(event)  # as every earlier release wrote it
    monkeypatch.setattr(SnapshotEvicted, "schema_version", 2)
    assert codec.event_item(event)["schema_version"] == {"N": "2"}
    assert codec.stored_event_version(codec.event_item(event)) == 2


def test_no_event_has_a_field_named_as_the_version_attribute() -> None:
    from snapledger.models.bus_events import ledger_event_models

    clashes = [m.__name__ for m in ledger_event_models() if "schema_version" in m.model_fields]
    assert clashes == []


# --- the first version step: StreamSnapshotCompleted v2, members[].member → partition ------


def test_a_stream_snapshot_completed_stored_at_v1_reads_with_each_members_partition() -> None:
    # Given a StreamSnapshotCompleted as the release before versions stored it (``member``)
    item = _golden_item("StreamSnapshotCompleted")
    (stored_member,) = item["members"]["L"]
    assert "schema_version" not in item and "member" in stored_member["M"]
    # When this release reads it
    event = codec.stream_event_from_item(item)
    # Then each member names its partition ``partition``, everything else as stored
    assert isinstance(event, StreamSnapshotCompleted)
    assert [m.partition for m in event.members] == [int(stored_member["M"]["member"]["N"])]
    assert event.model_dump(mode="json")["members"] == [
        {"partition": 42, "snapshot_id": "snapshot_id-example", "lsn": 42, "epoch": 42,
         "offsets": {"key": 42}}
    ]  # fmt: skip


def test_a_stream_snapshot_completed_is_written_at_v2_and_reads_back_unchanged() -> None:
    event = codec.stream_event_from_item(_golden_item("StreamSnapshotCompleted"))
    item = codec.stream_event_item(event)
    assert item["schema_version"] == {"N": "2"}
    assert set(item["members"]["L"][0]["M"]) == {"partition", "snapshot_id", "lsn", "epoch",
                                                 "offsets"}  # fmt: skip
    assert codec.stream_event_from_item(item) == event


def test_the_bus_publishes_a_v1_stream_snapshot_completed_with_the_new_name() -> None:
    record = stream_record(_golden_item("StreamSnapshotCompleted"), view_type="NEW_IMAGE")
    published = publish_records([record], STREAM_RECORDS)
    assert published.undecodable == []
    ((detail_member,),) = [event["members"] for event in published.events]
    assert detail_member["partition"] == 42 and "member" not in detail_member
