"""docs/multi-region.md's claims about today's code, checked by what the code does: the
single-region behaviours the design builds on (a manifest with missing files is rejected for
good, the trim point is the oldest retained snapshot's LSN and its event carries ``lsn``, a
lower writer epoch is fenced), that none of the design is built yet, and that every section
of the other docs it cites is there."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import pytest

from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.clock import ManualClock
from snapledger.core.retention import trim_point
from snapledger.ids import new_ulid
from snapledger.models.events import LedgerEvent, TrimPointAdvanced
from snapledger.models.ledger import LineageId, SnapshotStatus, StreamHead, snapshot_sort_key
from snapledger.services.registration import Outcome, register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.support import manifest_document, moto_ledger, write_snapshot

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "multi-region.md").read_text()
ORDERS_3 = LineageId(stream="orders", partition=3)


@pytest.fixture
def ledger() -> Iterator[DynamoLedger]:
    with moto_ledger() as moto:
        yield moto


@pytest.fixture
def store(tmp_path: Path) -> FileObjectStore:
    return FileObjectStore(tmp_path / "root")


def register(key: str, ledger: DynamoLedger, store: FileObjectStore) -> Outcome:
    return register_manifest(
        key, ledger=ledger, store=store, clock=ManualClock(), layouts=NATIVE_ONLY
    ).outcome


def test_today_a_manifest_whose_files_are_missing_is_rejected_for_good(ledger, store) -> None:
    # "Today a manifest whose files are missing is `REJECTED` for good"
    data = {"part-00000.parquet": b"12345", "part-00001.parquet": b"67890"}
    sid = new_ulid()
    listed = manifest_document("orders", 3, 100, sid, data)
    # the manifest arrives before one of its files, as a replica's may
    present = {"part-00000.parquet": data["part-00000.parquet"]}
    key = write_snapshot(store, lsn=100, snapshot_id=sid, files=present, manifest=listed)
    late = key.removesuffix("_manifest.json") + "part-00001.parquet"
    first = register_manifest(
        key, ledger=ledger, store=store, clock=ManualClock(), layouts=NATIVE_ONLY
    )
    assert first.outcome is Outcome.REJECTED
    # the file arriving afterwards changes nothing: the answer is recorded, not retried
    store.put(late, data["part-00001.parquet"])
    assert register(key, ledger, store) is Outcome.DUPLICATE
    record = ledger.get_snapshot(ORDERS_3, snapshot_sort_key(100, first.snapshot_id))
    assert record is not None and record.status is SnapshotStatus.REJECTED


def test_today_the_trim_lsn_is_the_oldest_retained_registered_snapshots(ledger, store) -> None:
    # "each lineage's trim LSN is the LSN of its oldest retained REGISTERED snapshot"
    for lsn in (300, 100, 200):
        assert register(write_snapshot(store, lsn=lsn), ledger, store) in (
            Outcome.BECAME_LATEST,
            Outcome.RECORDED,
        )
    retained = ledger.list_snapshots(ORDERS_3).items
    head = ledger.get_head(ORDERS_3)
    assert head is not None
    point = trim_point(retained, head)
    assert point is not None and point.lsn == 100
    # "the event already carries `lsn`": a region can forward it as it is
    assert "lsn" in TrimPointAdvanced.model_fields


def test_a_late_snapshot_of_a_lower_epoch_is_fenced(ledger, store) -> None:
    # "the new home's producers write with a higher epoch, so a late snapshot of the old
    # home's writer is fenced": the existing writer-epoch rule, per region
    assert register(write_snapshot(store, lsn=100, epoch=2), ledger, store) is Outcome.BECAME_LATEST
    assert register(write_snapshot(store, lsn=200, epoch=1), ledger, store) is Outcome.FENCED


def test_none_of_the_design_is_built() -> None:
    # "**None of it is built.**": a change that builds part of it updates the doc and this
    # no pending answer for a replica's missing files, no home region, no effective trim
    assert "pending" not in {outcome.value for outcome in Outcome}
    assert "home_region" not in StreamHead.model_fields
    [union] = get_args(LedgerEvent)[:1]
    types = {event.model_fields["type"].default for event in get_args(union)}
    assert "TrimPointAdvanced" in types and "EffectiveTrimPointAdvanced" not in types


def test_every_cited_section_exists() -> None:
    cited = re.findall(r"`docs/(\w+\.md)`,\s+\"([^\"]+)\"", DOC)
    assert len(cited) >= 4
    for doc, spaced in cited:
        section = " ".join(spaced.split())  # a citation may wrap across lines
        headings = re.findall(r"^#+ (.+)$", (REPO / "docs" / doc).read_text(), re.M)
        assert any(h.startswith(section) for h in headings), (doc, section)
