"""Registration of Restate snapshots from their metadata.json (no server: fixtures.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.clock import ManualClock
from snapledger.errors import InvalidRequestError
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.services.registration import Outcome, register_manifest
from snapledger.strategies.catalog import LayoutCatalog
from tests.restate.fixtures import (
    FINGERPRINT,
    PREFIX,
    STREAM,
    write_latest,
    write_restate_snapshot,
)
from tests.support import moto_ledger

LAYOUTS = LayoutCatalog.of({PREFIX: STREAM})
LINEAGE = LineageId(stream=STREAM, partition=0)


@pytest.fixture
def store(tmp_path: Path) -> FileObjectStore:
    return FileObjectStore(tmp_path / "root")


@pytest.fixture
def ledger() -> Iterator[object]:
    with moto_ledger() as moto:
        yield moto


def register(key: str, ledger, store):
    return register_manifest(key, ledger=ledger, store=store, clock=ManualClock(), layouts=LAYOUTS)


def test_a_restate_snapshot_is_registered_from_its_metadata_json(ledger, store):
    written = write_restate_snapshot(store, 1435, files=3)
    result = register(written.location.metadata_key, ledger, store)
    assert result.outcome is Outcome.BECAME_LATEST
    assert (result.stream, result.partition, result.lsn) == (STREAM, 0, 1435)
    assert result.snapshot_id == written.location.snapshot_id
    record = ledger.find_snapshot(LINEAGE, written.location.snapshot_id)
    assert record.status is SnapshotStatus.REGISTERED
    assert (record.format, record.file_count, record.epoch) == ("restate", 3, 0)
    assert record.total_bytes == sum(f["size"] for f in written.metadata["files"])
    assert record.origin == f"Restate cluster 'snapledger-test' (fingerprint {FINGERPRINT})"
    # Restate owns latest.json: registration writes no pointer, native or Restate's
    assert not any(info.key.endswith("latest.json") for info in store.list("")), (
        "registration wrote a pointer"
    )
    # a redelivery is a duplicate
    assert register(written.location.metadata_key, ledger, store).outcome is Outcome.DUPLICATE


def test_an_older_restate_snapshot_is_recorded_without_becoming_latest(ledger, store):
    newer = write_restate_snapshot(store, 2000)
    older = write_restate_snapshot(store, 1000)
    assert register(newer.location.metadata_key, ledger, store).outcome is Outcome.BECAME_LATEST
    answer = register(older.location.metadata_key, ledger, store)
    assert answer.outcome is Outcome.RECORDED
    assert answer.latest_snapshot_id == newer.location.snapshot_id


def test_a_snapshot_from_another_cluster_in_the_same_prefix_is_rejected(ledger, store):
    ours = write_restate_snapshot(store, 1000)
    theirs = write_restate_snapshot(store, 2000, fingerprint=FINGERPRINT + 1)
    assert register(ours.location.metadata_key, ledger, store).outcome is Outcome.BECAME_LATEST
    answer = register(theirs.location.metadata_key, ledger, store)
    assert answer.outcome is Outcome.REJECTED
    assert str(FINGERPRINT + 1) in answer.reason and str(FINGERPRINT) in answer.reason
    assert "give each its own destination" in answer.reason
    head = ledger.get_head(LINEAGE)
    assert head.latest_snapshot_id == ours.location.snapshot_id
    renamed = write_restate_snapshot(store, 3000, cluster_name="other")
    assert register(renamed.location.metadata_key, ledger, store).outcome is Outcome.REJECTED


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        ("missing", "is missing"),
        ("resized", "bytes in the store but metadata.json says"),
        ("footer", "block-based table magic"),
    ],
)
def test_a_snapshot_whose_files_cannot_be_restored_is_rejected_with_the_file_at_fault(
    ledger, store, damage, words
):
    written = write_restate_snapshot(store, 1435)
    victim = written.sst_keys[1]
    body = store.get(victim)
    if damage == "missing":
        store.delete_many([victim])
    elif damage == "resized":
        store.put(victim, body + b"x")
    else:
        store.put(victim, body[:-1] + b"\x00")
    answer = register(written.location.metadata_key, ledger, store)
    assert answer.outcome is Outcome.REJECTED
    assert victim in answer.reason and words in answer.reason
    record = ledger.find_snapshot(LINEAGE, written.location.snapshot_id)
    assert record.status is SnapshotStatus.REJECTED and victim in record.rejection_reason


def test_a_metadata_json_that_disagrees_with_its_key_is_rejected(ledger, store):
    written = write_restate_snapshot(store, 1435)
    moved = replace(written.location, lsn=1436)
    store.put(moved.metadata_key, store.get(written.location.metadata_key))
    answer = register(moved.metadata_key, ledger, store)
    assert answer.outcome is Outcome.REJECTED
    assert "min_applied_lsn" in answer.reason


def test_a_garbage_metadata_json_is_rejected_and_a_vanished_one_records_nothing(ledger, store):
    written = write_restate_snapshot(store, 1435)
    store.put(written.location.metadata_key, b"\x00not json")
    assert register(written.location.metadata_key, ledger, store).outcome is Outcome.REJECTED
    before = ledger.load(LineageId(stream=STREAM, partition=0)).head.version
    # Restate evicted a snapshot before its metadata.json was read: nothing to reject
    gone = write_restate_snapshot(store, 1500)
    store.delete_many([gone.location.metadata_key])
    answer = register(gone.location.metadata_key, ledger, store)
    assert answer.outcome is Outcome.VANISHED and gone.location.metadata_key in answer.reason
    assert ledger.load(LineageId(stream=STREAM, partition=0)).head.version == before


def test_restate_latest_json_is_left_as_restate_wrote_it(ledger, store):
    old = write_restate_snapshot(store, 1000)
    new = write_restate_snapshot(store, 2000)
    body = write_latest(store, new, [new, old])
    for written in (old, new):
        register(written.location.metadata_key, ledger, store)
    assert store.get(f"{PREFIX}/0/latest.json") == body


@pytest.mark.parametrize(
    ("prefixes", "words"),
    [
        ({"snapshots/restate": "a"}, "inside snapshots/"),
        ({"restate": "a", "restate/b": "b"}, "overlap"),
        ({"restate/a": "s", "restate/b": "s"}, "is also entry"),
        ({"": "s"}, "bucket's root"),
        ({"restate/../x": "s"}, "not usable"),
        ({"restate/a": "no spaces"}, "stream name"),
    ],
)
def test_a_restate_prefix_setting_that_cannot_work_is_refused_with_the_reason(prefixes, words):
    with pytest.raises(InvalidRequestError, match=words):
        LayoutCatalog.of(prefixes)


def test_registration_runs_every_check_and_names_each_file_with_its_failures(ledger, store):
    # Given a snapshot whose first SST grew by a byte (so its footer moved) and whose
    # second SST ends in zeros
    written = write_restate_snapshot(store, 1435)
    resized, zeroed = written.sst_keys
    store.put(resized, store.get(resized) + b"x")
    body = store.get(zeroed)
    store.put(zeroed, body[:-8] + bytes(8))
    # When it registers
    answer = register(written.location.metadata_key, ledger, store)
    # Then it is rejected naming both files, the first with both checks it failed
    assert answer.outcome is Outcome.REJECTED
    first, second = answer.reason.split("; Restate cannot restore from it; ")
    assert first.startswith(f"{resized!r}: it is 165 bytes in the store but metadata.json")
    assert "does not end with RocksDB's block-based table magic" in first
    assert second.startswith(f"{zeroed!r}: it does not end with RocksDB's")
