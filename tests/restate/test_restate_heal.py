"""Heal a broken Restate latest, and restore from a chosen snapshot (no server: fixtures.py).

The server-backed test (test_restate_end_to_end.py) shows the partition recovering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from snapledger.errors import InvalidRequestError, NotFoundError
from snapledger.limits import MAX_RECORDED_PROBLEMS
from snapledger.models.ledger import LineageId
from snapledger.services.registration import register_manifest
from snapledger.services.restate_heal import (
    HEALED,
    HEALTHY,
    NO_POINTER,
    UNHEALED,
    WOULD_HEAL,
    heal_partition,
    restore_from_chosen,
)
from snapledger.strategies.catalog import LayoutCatalog
from tests.gc.support import events_of
from tests.ledger.conftest import clock, ledger, store
from tests.restate.fixtures import PREFIX, STREAM, write_latest, write_restate_snapshot

__all__ = ["clock", "ledger", "store"]

LAYOUTS = LayoutCatalog.of({PREFIX: STREAM})
LAYOUT = LAYOUTS.restate_for(STREAM)
LINEAGE = LineageId(stream=STREAM, partition=0)
LATEST = f"{PREFIX}/0/latest.json"


@pytest.fixture
def three(ledger, store, clock):
    """Snapshots at LSN 1000, 2000, 3000 registered; latest.json names 3000, retains all."""
    written = [write_restate_snapshot(store, lsn) for lsn in (1000, 2000, 3000)]
    for w in written:
        register_manifest(
            w.location.metadata_key, ledger=ledger, store=store, clock=clock, layouts=LAYOUTS
        )
    write_latest(store, written[-1], list(reversed(written)))
    return written


def pointer(store) -> dict:
    return json.loads(store.get(LATEST))


def damage(store, written, index: int = 0) -> str:
    key = written.sst_keys[index]
    store.put(key, store.get(key)[:-10])  # truncated: the size differs
    return key


def heal(ledger, store, clock, **kw):
    return heal_partition(ledger, store, clock, LAYOUT, 0, **kw)


def test_a_healthy_latest_is_left_alone(ledger, store, clock, three):
    before = store.get(LATEST)
    outcome = heal(ledger, store, clock)
    assert (outcome.state, outcome.names, outcome.problems) == (
        HEALTHY,
        three[2].location.snapshot_id,
        [],
    )
    assert store.get(LATEST) == before
    assert heal_partition(ledger, store, clock, LAYOUT, 7).state == NO_POINTER


def test_a_broken_latest_is_recorded_and_repointed_to_the_newest_healthy_retained(
    ledger, store, clock, three
):
    before = pointer(store)
    victim = damage(store, three[2])
    outcome = heal(ledger, store, clock)
    assert outcome.state == HEALED, outcome
    assert outcome.healed_to == three[1].location.snapshot_id
    assert victim in outcome.problems[0]
    after = pointer(store)
    assert (after["snapshot_id"], after["min_applied_lsn"], after["path"]) == (
        three[1].location.snapshot_id,
        2000,
        three[1].location.path,
    )
    # Restate's other fields (and its retained list) stay as Restate wrote them
    for name in ("cluster_name", "cluster_fingerprint", "node_name", "retained_snapshots"):
        assert after[name] == before[name]
    events = [e for e in events_of(ledger, STREAM, 0) if e.type != "SnapshotRegistered"]
    broken, repointed = events[-2], events[-1]
    assert broken.type == "SnapshotFoundBroken" and victim in broken.problems[0]
    assert broken.snapshot_id == three[2].location.snapshot_id
    assert repointed.type == "ProducerLatestRepointed" and repointed.cause == "heal"
    assert (repointed.previous_snapshot_id, repointed.snapshot_id) == (
        three[2].location.snapshot_id,
        three[1].location.snapshot_id,
    )
    record = ledger.find_snapshot(LINEAGE, three[2].location.snapshot_id)
    assert record.broken and victim in record.broken[0]
    # nothing deleted by healing, and healing again changes nothing
    assert all(store.head(k) is not None for k in three[2].sst_keys)
    count = len(events_of(ledger, STREAM, 0))
    assert heal(ledger, store, clock).state == HEALTHY
    assert len(events_of(ledger, STREAM, 0)) == count


def test_heal_skips_a_broken_candidate_and_says_when_none_is_left(ledger, store, clock, three):
    damage(store, three[2])
    damage(store, three[1], 1)
    outcome = heal(ledger, store, clock)
    assert outcome.healed_to == three[0].location.snapshot_id
    damage(store, three[0])
    outcome = heal(ledger, store, clock)
    assert outcome.state == UNHEALED and "num-retained" in outcome.note
    assert pointer(store)["snapshot_id"] == three[0].location.snapshot_id


def test_heal_never_repoints_to_a_snapshot_restate_no_longer_retains(ledger, store, clock, three):
    write_latest(store, three[2], [three[2]])  # Restate retains only the latest
    damage(store, three[2])
    outcome = heal(ledger, store, clock)
    assert outcome.state == UNHEALED
    assert pointer(store)["snapshot_id"] == three[2].location.snapshot_id


def test_a_dry_run_says_what_heal_would_do_and_writes_nothing(ledger, store, clock, three):
    damage(store, three[2])
    before, count = store.get(LATEST), len(events_of(ledger, STREAM, 0))
    outcome = heal(ledger, store, clock, dry_run=True)
    assert (outcome.state, outcome.healed_to) == (WOULD_HEAL, three[1].location.snapshot_id)
    assert store.get(LATEST) == before
    assert len(events_of(ledger, STREAM, 0)) == count


def test_restore_from_a_chosen_snapshot_holds_it_and_records_who(ledger, store, clock, three):
    chosen = three[0].location.snapshot_id
    result = restore_from_chosen(
        ledger,
        store,
        clock,
        LAYOUT,
        0,
        snapshot_id=chosen,
        request_id="req-1",
        by="alice",
        reason="store lost on node-2",
    )
    assert (result.snapshot_id, result.lsn, result.previous_snapshot_id) == (
        chosen,
        1000,
        three[2].location.snapshot_id,
    )
    assert pointer(store)["snapshot_id"] == chosen
    record = ledger.find_snapshot(LINEAGE, chosen)
    assert [h.by for h in record.holds] == ["alice"]
    last = events_of(ledger, STREAM, 0)[-1]
    assert (last.type, last.cause, last.by, last.reason) == (
        "ProducerLatestRepointed",
        "restore",
        "alice",
        "store lost on node-2",
    )
    # the same request again: no second hold, no second event
    count = len(events_of(ledger, STREAM, 0))
    restore_from_chosen(
        ledger, store, clock, LAYOUT, 0, snapshot_id=chosen, request_id="req-1", by="alice"
    )
    assert len(events_of(ledger, STREAM, 0)) == count


@pytest.mark.parametrize("case", ["not_retained", "broken", "unknown", "files"])
def test_restore_from_a_snapshot_restate_cannot_use_is_refused_with_the_reason(
    ledger, store, clock, three, case
):
    chosen = three[0].location.snapshot_id
    if case == "not_retained":
        write_latest(store, three[2], [three[2], three[1]])
        words, error = "does not retain", InvalidRequestError
    elif case == "broken":
        damage(store, three[2])
        damage(store, three[1])
        damage(store, three[0])
        heal(ledger, store, clock)
        words, error = "found broken", InvalidRequestError
    elif case == "unknown":
        chosen, words, error = "snap_NoSuchOne", "has no snapshot", NotFoundError
    else:
        damage(store, three[0])
        words, error = "fails the check", InvalidRequestError
    before = store.get(LATEST)
    with pytest.raises(error, match=words):
        restore_from_chosen(
            ledger, store, clock, LAYOUT, 0, snapshot_id=chosen, request_id="r", by="bob"
        )
    assert store.get(LATEST) == before


def zero_footer(store, key: str) -> None:
    """The SST written again with the same size, its footer zeros."""
    body = store.get(key)
    store.put(key, body[:-8] + bytes(8))


def test_heal_names_every_file_at_fault_and_each_check_it_failed(ledger, store, clock, three):
    # Given the latest's first SST truncated (its size and its footer wrong) and its second
    # written again with the same size and a zeroed footer
    truncated = damage(store, three[2], 0)
    zeroed = three[2].sst_keys[1]
    zero_footer(store, zeroed)
    # When heal checks it
    outcome = heal(ledger, store, clock)
    # Then one line per file at fault, each naming the file and every check it failed
    assert outcome.state == HEALED
    first, second = outcome.problems
    assert first.startswith(f"{truncated!r}: it is ") and "metadata.json says" in first
    assert "does not end with RocksDB's block-based table magic" in first
    assert second.startswith(f"{zeroed!r}: it does not end with RocksDB's")
    assert "bytes in the store" not in second
    # and the ledger records both lines
    [broken] = [e for e in events_of(ledger, STREAM, 0) if e.type == "SnapshotFoundBroken"]
    assert list(broken.problems) == outcome.problems


def test_past_sixteen_files_at_fault_the_last_line_says_how_many_more(ledger, store, clock):
    # Given a registered latest of 20 SSTs, every one since deleted
    many = write_restate_snapshot(store, 1000, files=20)
    register_manifest(
        many.location.metadata_key, ledger=ledger, store=store, clock=clock, layouts=LAYOUTS
    )
    write_latest(store, many, [many])
    store.delete_many(list(many.sst_keys))
    # When heal checks it
    outcome = heal(ledger, store, clock)
    # Then 15 files are named, and the 16th line counts the other 5
    assert outcome.state == UNHEALED and len(outcome.problems) == 16
    assert all(
        f"{key!r}: it is missing" in line
        for key, line in zip(many.sst_keys[:15], outcome.problems[:15], strict=True)
    )
    assert outcome.problems[15].startswith("and 5 more problem(s) of this snapshot")
    # as console.md says
    console = " ".join(Path("docs/console.md").read_text().split())
    assert f"at most {MAX_RECORDED_PROBLEMS} lines (`MAX_RECORDED_PROBLEMS`)" in console
    [broken] = [e for e in events_of(ledger, STREAM, 0) if e.type == "SnapshotFoundBroken"]
    assert list(broken.problems) == outcome.problems
