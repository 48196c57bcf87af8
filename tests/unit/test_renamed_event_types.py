"""A renamed event type: items stored under its old name read, list and publish as the new
type; the renames and upcasters are declared beside their event classes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from snapledger.adapters import dynamodb_codec as codec
from snapledger.entrypoints.ledger_events import publish_records
from snapledger.models import event_evolution, events
from snapledger.models.bus_events import event_type_name, ledger_event_models
from snapledger.models.event_docs import render_schemas_part
from snapledger.models.event_evolution import UpcasterChainError, renamed_type
from snapledger.models.event_schema import event_json_schema
from snapledger.models.events import SnapshotEvicted
from snapledger.models.ledger import LineageId
from snapledger.models.upcasting import _UPCASTERS, CURRENT_VERSIONS, check_chains
from tests.bus_events_support import STREAM_RECORDS, stream_record
from tests.support import moto_ledger

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "2026-11-28"


def _stored_as(old_name: str) -> dict[str, Any]:
    """The golden SnapshotEvicted item as a release that called the type ``old_name``
    stored it."""
    item: dict[str, Any] = json.loads((GOLDEN / "SnapshotEvicted.json").read_text())["item"]
    return {**item, "type": {"S": old_name}}


@pytest.fixture
def evicted_was_purged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Given SnapshotEvicted was called SnapshotPurged by an earlier release."""
    monkeypatch.setattr(event_evolution, "RENAMED_TYPES", {})
    renamed_type("SnapshotPurged", SnapshotEvicted)


@pytest.mark.usefixtures("evicted_was_purged")
def test_an_item_stored_under_the_old_name_reads_as_the_new_type() -> None:
    item = _stored_as("SnapshotPurged")
    for read in (codec.event_from_item, codec.any_event_from_item):
        event = read(item)
        assert isinstance(event, SnapshotEvicted)
        assert event.type == "SnapshotEvicted" and event.reason == "reason-example"


@pytest.mark.usefixtures("evicted_was_purged")
def test_the_ledger_lists_an_old_name_item_among_the_lineages_events() -> None:
    with moto_ledger() as ledger:
        item = _stored_as("SnapshotPurged")
        ledger.client.put_item(TableName=ledger.table_name, Item=item)
        lineage = LineageId(stream=item["stream"]["S"], partition=int(item["partition"]["N"]))
        page = ledger.list_events(lineage)
    assert [type(e).__name__ for e in page.items] == ["SnapshotEvicted"]


@pytest.mark.usefixtures("evicted_was_purged")
def test_the_bus_publishes_an_old_name_item_under_the_new_type() -> None:
    record = stream_record(_stored_as("SnapshotPurged"), view_type="NEW_IMAGE")
    published = publish_records([record], STREAM_RECORDS)
    assert published.undecodable == []
    # the Pipe sets detail-type from the element's type: the new name
    assert [e["type"] for e in published.events] == ["SnapshotEvicted"]


def test_without_the_rename_an_old_name_item_is_skipped_by_listings_and_undecodable() -> None:
    record = stream_record(_stored_as("SnapshotPurged"), view_type="NEW_IMAGE")
    (undecodable,) = publish_records([record], STREAM_RECORDS).undecodable
    assert "unknown event type 'SnapshotPurged'" in undecodable.reason


def test_a_rename_must_lead_from_a_retired_name_to_a_current_type() -> None:
    with pytest.raises(UpcasterChainError) as refused:
        check_chains(
            CURRENT_VERSIONS,
            _UPCASTERS,
            {"SnapshotDeleted": "SnapshotEvicted", "SnapshotPurged": "SnapshotVanished"},
        )
    assert "'SnapshotDeleted' is renamed to 'SnapshotEvicted' but is still an event type" in str(
        refused.value
    )
    assert "'SnapshotPurged' is renamed to 'SnapshotVanished', which is not an event type" in str(
        refused.value
    )


@pytest.mark.usefixtures("evicted_was_purged")
def test_a_name_is_renamed_once() -> None:
    with pytest.raises(UpcasterChainError, match="'SnapshotPurged' is renamed twice"):
        renamed_type("SnapshotPurged", events.SnapshotDeleted)


def test_every_upcaster_is_declared_in_its_event_classs_module() -> None:
    models = {event_type_name(m): m for m in ledger_event_models()}
    assert _UPCASTERS, "the first version step (StreamSnapshotCompleted v2) is declared"
    for (event_type, _), function in _UPCASTERS.items():
        assert function.__module__ == models[event_type].__module__


def test_a_types_schema_names_its_version() -> None:
    completed = event_json_schema(events.StreamSnapshotCompleted)["description"]
    evicted = event_json_schema(SnapshotEvicted)["description"]
    assert "Version 2 of StreamSnapshotCompleted" in completed
    assert "Version 1 of SnapshotEvicted" in evicted


@pytest.mark.usefixtures("evicted_was_purged")
def test_the_docs_table_lists_a_types_version_and_former_names() -> None:
    rows = {row.split("|")[1].strip(): row for row in render_schemas_part().splitlines()}
    assert rows["`SnapshotEvicted`"].split("|")[4].strip() == "1"
    assert rows["`SnapshotEvicted`"].split("|")[5].strip() == "`SnapshotPurged`"
    assert rows["`StreamSnapshotCompleted`"].split("|")[4].strip() == "2"
