"""The snapshot's fields, declared once (models/snapshot.py) and composed into the manifest's
summary, the SnapshotRegistered event and the snapshot's record; events built from typed
common fields (core/state.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import get_type_hints

import pytest
from pydantic import BaseModel

from snapledger.core.lineage import LineageState, decide, evolve_all
from snapledger.core.state import EventFields, Sequencer, StreamEventFields, StreamSequencer
from snapledger.models.commands import ArrivedManifest, ManifestSummary, RegisterSnapshot
from snapledger.models.events import (
    EventBase,
    SnapshotRegistered,
    SnapshotRejected,
    StreamEventBase,
)
from snapledger.models.ledger import Head, SnapshotRecord, snapshot_sort_key
from snapledger.models.snapshot import GenerationMembership, ProducerFields, SnapshotFields

T0 = datetime(2026, 1, 1, tzinfo=UTC)

SUMMARY = ManifestSummary(
    epoch=2,
    file_count=3,
    total_bytes=40,
    row_count=7,
    source_kind="restate",
    format="restate-rocksdb",
    offsets={"orders-3": 12},
    generation=4,
    origin="cluster-a",
    files_digest="sha256:files",
)


def _command(**kw: object) -> RegisterSnapshot:
    arrived: ArrivedManifest = {
        "stream": "orders",
        "partition": 3,
        "lsn": 10,
        "snapshot_id": "01J0",
        "manifest_key": "snapshots/orders/3/10/_manifest.json",
    }
    return RegisterSnapshot(**arrived, manifest_digest="sha256:m", **kw)


@pytest.mark.parametrize(
    ("model", "groups"),
    [
        (ManifestSummary, (SnapshotFields, ProducerFields)),
        (SnapshotRegistered, (SnapshotFields, GenerationMembership, ProducerFields)),
        (SnapshotRecord, (SnapshotFields, GenerationMembership, ProducerFields)),
    ],
)
def test_each_model_is_composed_of_the_groups_declared_once(
    model: type[BaseModel], groups: tuple[type[BaseModel], ...]
) -> None:
    for group in groups:
        assert issubclass(model, group)
        for name, declared in group.model_fields.items():
            assert model.model_fields[name].description == declared.description


def test_the_published_models_keep_their_field_order() -> None:
    """An event's JSON and its schema list its fields in this order: the composition
    must not move them (bases' fields first, from the last base)."""
    snapshot = [
        "file_count",
        "total_bytes",
        "row_count",
        "source_kind",
        "format",
        "offsets",
        "generation",
        "changelog",
        "references",
        "member_of",
        "origin",
        "files_digest",
    ]
    manifest = ["epoch", "manifest_key", "manifest_digest"]
    common = ["seq", "at", "stream", "partition", "command_id", "type"]
    assert list(SnapshotRegistered.model_fields) == [
        *common,
        "snapshot_id",
        "lsn",
        *manifest,
        *snapshot,
    ]
    assert list(SnapshotRejected.model_fields) == [
        *common,
        "snapshot_id",
        "lsn",
        *manifest,
        "code",
        "reason",
    ]
    assert list(SnapshotRecord.model_fields)[: 5 + len(manifest) + len(snapshot) + 1] == [
        "stream",
        "partition",
        "lsn",
        "snapshot_id",
        "status",
        *manifest,
        *snapshot,
        "registered_at",
    ]


def test_a_registered_snapshots_record_keeps_every_field_its_event_carries() -> None:
    state = LineageState.empty("orders", 3)
    events = decide(state, _command(summary=SUMMARY), T0)
    registered = events[0]
    assert isinstance(registered, SnapshotRegistered)
    assert registered.model_dump(include=set(ManifestSummary.model_fields)) == (
        SUMMARY.model_dump()
    )
    record = evolve_all(state, events).snapshots[snapshot_sort_key(10, "01J0")]
    shared = set(SnapshotRecord.model_fields) & set(SnapshotRegistered.model_fields)
    assert shared >= set(SnapshotFields.model_fields) | set(ProducerFields.model_fields)
    assert record.model_dump(include=shared) == registered.model_dump(include=shared)
    assert (record.registered_at, record.version) == (T0, registered.seq)


def test_a_rejected_snapshots_record_keeps_its_key_and_manifest() -> None:
    state = LineageState.empty("orders", 3)
    events = decide(state, _command(rejection="no files", epoch_hint=5), T0)
    record = evolve_all(state, events).snapshots[snapshot_sort_key(10, "01J0")]
    assert (record.epoch, record.manifest_digest, record.rejection_reason) == (
        5,
        "sha256:m",
        "no files",
    )
    assert (record.file_count, record.total_bytes, record.origin) == (0, 0, None)


def test_the_typed_common_fields_are_exactly_each_logs_base_fields() -> None:
    assert set(get_type_hints(EventFields)) == set(EventBase.model_fields) - {"type"}
    assert set(get_type_hints(StreamEventFields)) == set(StreamEventBase.model_fields) - {"type"}
    assert set(get_type_hints(ArrivedManifest)) <= set(RegisterSnapshot.model_fields)


def test_sequencers_number_a_decisions_events_after_the_head() -> None:
    state = LineageState(head=Head(stream="orders", partition=3, version=7))
    ev = Sequencer(state, "cmd", T0)
    first, second = ev.next(), ev.next()
    assert (first["seq"], second["seq"]) == (8, 9)
    assert first == {**second, "seq": 8}
    assert first == {"seq": 8, "at": T0, "stream": "orders", "partition": 3, "command_id": "cmd"}
    stream = StreamSequencer(4, "orders", "cmd", T0)
    assert [stream.next()["seq"], stream.next()["seq"]] == [5, 6]
