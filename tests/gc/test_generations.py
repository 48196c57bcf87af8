"""GC and stream snapshots: the newest ``min_generations`` completed generations' members are
kept (reason ``generation``), older ones go; an overdue generation is failed by a run."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from snapledger.core.retention import plan
from snapledger.gc_settings import GcConfig
from snapledger.models.generations import GenerationStatus, ProtectedGenerations
from snapledger.models.ledger import Head, SnapshotRecord, SnapshotStatus
from snapledger.models.policy import RetentionPolicy
from snapledger.models.retention_reasons import KeepReason
from snapledger.services import generation_reads, generations
from snapledger.services.gc import run_gc
from snapledger.services.policies import set_policy
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
from tests.gc.support import gc_deps, records, stream_log
from tests.support import write_snapshot

DAY = timedelta(days=1)
POLICY = RetentionPolicy(min_count=1, min_age_hours=1)


def record(lsn: int, member_of: int | None, registered_at) -> SnapshotRecord:
    return SnapshotRecord(
        stream="orders",
        partition=0,
        lsn=lsn,
        snapshot_id=f"01JW8Z3K9Q7N4M2P6R8T0V2X{lsn:02d}",
        status=SnapshotStatus.REGISTERED,
        epoch=1,
        manifest_key="k",
        manifest_digest="d",
        registered_at=registered_at,
        member_of=member_of,
        version=1,
    )


@pytest.mark.parametrize(
    ("member_of", "guard", "kept"),
    [
        (None, ProtectedGenerations(completed=(3,), newest=3), False),  # not a member
        (3, ProtectedGenerations(completed=(3,), newest=3), True),  # newest completed
        (2, ProtectedGenerations(completed=(3,), newest=3), False),  # older completed
        (2, ProtectedGenerations(completed=(3, 2), newest=3), True),  # min_generations 2
        (4, ProtectedGenerations(completed=(3,), open=4, newest=4), True),  # open
        (5, ProtectedGenerations(completed=(3,), newest=4), True),  # newer than the read
        (2, None, True),  # no guard: every member is kept
    ],
)
def test_the_plan_keeps_the_members_it_must(clock, member_of, guard, kept):
    now = clock.now()
    old = record(10, member_of, now - 10 * DAY)
    latest = record(20, None, now - 9 * DAY)
    head = Head(stream="orders", partition=0, latest_lsn=20, latest_snapshot_id=latest.snapshot_id)
    result = plan([old, latest], head, POLICY, now, generations=guard)
    reasons = {k.record.lsn: k.reasons for k in result.kept}
    assert (10 in reasons) is kept
    if kept:
        assert reasons[10] == (KeepReason.GENERATION,)


def generation_of_one(ledger, streams, store, clock, lsn):
    """A generation of orders/0 alone, completed by a snapshot at ``lsn``."""
    result = generations.request_stream_snapshot(streams, "orders", [0], clock=clock)
    number = result.generation.generation
    key = write_snapshot(store, "orders", 0, lsn, generation=number)
    answer = register_manifest(
        key, ledger=ledger, store=store, clock=clock, streams=streams, layouts=NATIVE_ONLY
    )
    assert answer.generation_completed
    return answer.snapshot_id


def test_gc_keeps_the_newest_completed_generations_members(ledger, store, clock):
    streams = stream_log(ledger)
    deps = gc_deps(ledger, store, clock)
    set_policy(
        streams,
        "orders",
        {"min_count": 1, "min_age_hours": 1, "min_generations": 2},
        default=GcConfig().default_policy(),
        clock=clock,
    )
    first = generation_of_one(ledger, streams, store, clock, 100)
    second = generation_of_one(ledger, streams, store, clock, 200)
    plain = register_manifest(
        write_snapshot(store, "orders", 0, 250),
        ledger=ledger,
        store=store,
        clock=clock,
        layouts=NATIVE_ONLY,
    )
    third = generation_of_one(ledger, streams, store, clock, 300)
    register_manifest(
        write_snapshot(store, "orders", 0, 400),
        ledger=ledger,
        store=store,
        clock=clock,
        layouts=NATIVE_ONLY,
    )
    clock.advance(DAY)
    report = run_gc(deps, dry_run=True).to_dict()
    [lineage] = report["lineages"]
    kept = {k["snapshot_id"]: k["reasons"] for k in lineage["kept"]}
    assert kept[third] == ["generation"] and kept[second] == ["generation"]
    assert {d["snapshot_id"] for d in lineage["deleted"]} == {first, plain.snapshot_id}
    run_gc(deps)
    found = by_id(ledger)
    assert (found[first], found[second]) == ("DELETED", "REGISTERED")
    # a newer completion pushes the second out
    generation_of_one(ledger, streams, store, clock, 500)
    clock.advance(DAY)
    run_gc(deps)
    assert (by_id(ledger)[second], by_id(ledger)[third]) == ("DELETED", "REGISTERED")
    # generation.json (beside the lineages' folders) is neither an orphan nor garbage
    pointer = json.loads(store.get("snapshots/orders/generation.json"))
    assert pointer["generation"] == 4


def by_id(ledger) -> dict[str, str]:
    return {r.snapshot_id: r.status.value for r in records(ledger, "orders", 0).values()}


def test_a_run_fails_an_overdue_generation_and_a_dry_run_does_not(ledger, store, clock):
    streams = stream_log(ledger)
    deps = gc_deps(ledger, store, clock)
    generations.request_stream_snapshot(
        streams, "orders", [0, 1], clock=clock, deadline=clock.now() + timedelta(minutes=10)
    )
    key = write_snapshot(store, "orders", 0, 100, generation=1)
    register_manifest(
        key, ledger=ledger, store=store, clock=clock, streams=streams, layouts=NATIVE_ONLY
    )
    clock.advance(timedelta(minutes=11))
    assert run_gc(deps, dry_run=True).to_dict()["generations_failed"] == []
    assert (
        generation_reads.get_generation(streams, "orders", 1).status is GenerationStatus.REQUESTED
    )
    report = run_gc(deps).to_dict()
    assert report["generations_failed"] == [{"stream": "orders", "generation": 1, "missing": [1]}]
    assert report["counts"]["generations_failed"] == 1
    failed = generation_reads.get_generation(streams, "orders", 1)
    assert failed.status is GenerationStatus.FAILED and failed.failure_cause.value == "deadline"
    assert streams.get_head("orders").open_generation is None
