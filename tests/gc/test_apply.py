"""GC runs against the ledger (moto and DynamoDB Local) and a file:// store."""

from __future__ import annotations

from datetime import timedelta

import pytest

from snapledger.gc_settings import GcConfig
from snapledger.layout import lineage_changelog_prefix
from snapledger.models.commands import RequestJob
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.services.commands import execute
from snapledger.services.gc import run_gc
from snapledger.services.holds import hold_snapshot, release_hold
from snapledger.services.policies import set_policy
from tests.gc.support import (
    assert_ledger_and_store_agree,
    event_types,
    gc_deps,
    listing,
    prefix_of,
    records,
    register,
    statuses,
    stream_log,
)
from tests.support import write_segments, write_snapshot

DAY = timedelta(days=1)
ORDERS_3 = LineageId(stream="orders", partition=3)
CONFIG = GcConfig()  # min_count 3, min_age 24h, grace 24h


@pytest.fixture
def deps(ledger, store, clock):
    return gc_deps(ledger, store, clock)


def six_old_snapshots(ledger, store, clock) -> dict[int, str]:
    ids = {lsn: register(ledger, store, clock, lsn) for lsn in (10, 20, 30, 40, 50, 60)}
    clock.advance(10 * DAY)
    return ids


def test_gc_deletes_what_the_rule_allows_and_records_every_step(deps, ledger, store, clock):
    # Given six ten-day-old snapshots under the default policy
    six_old_snapshots(ledger, store, clock)
    # When GC runs
    report = run_gc(deps, config=CONFIG)
    # Then the newest three are kept, the rest are DELETED with their objects gone
    assert statuses(ledger) == {
        10: "DELETED",
        20: "DELETED",
        30: "DELETED",
        40: "REGISTERED",
        50: "REGISTERED",
        60: "REGISTERED",
    }
    assert_ledger_and_store_agree(ledger, store)
    # and each step is an event, the trim point moved to the oldest retained snapshot
    assert event_types(ledger)[-7:] == ["SnapshotExpiring"] * 3 + ["SnapshotDeleted"] * 3 + [
        "TrimPointAdvanced"
    ]
    assert ledger.get_head(ORDERS_3).trim_lsn == 40
    # and the report says so, with reasons and counts
    assert report.complete
    counts = report.counts()
    assert (counts["snapshots_deleted"], counts["objects_deleted"], counts["errors"]) == (3, 9, 0)
    [lineage] = report.to_dict()["lineages"]
    assert [(k["lsn"], k["reasons"]) for k in lineage["kept"]] == [
        (60, ["latest", "newest"]),
        (50, ["newest"]),
        (40, ["newest"]),
    ]


def test_a_second_run_changes_nothing(deps, ledger, store, clock):
    six_old_snapshots(ledger, store, clock)
    run_gc(deps, config=CONFIG)
    before = (event_types(ledger), listing(store))
    report = run_gc(deps, config=CONFIG)
    assert (event_types(ledger), listing(store)) == before
    assert report.counts()["snapshots_deleted"] == 0


def test_a_dry_run_returns_the_plan_and_changes_nothing(deps, ledger, store, clock):
    # Given old snapshots, an old orphan prefix and a REJECTED snapshot past its grace
    six_old_snapshots(ledger, store, clock)
    write_snapshot(store, "orders", 3, 5)  # never registered
    from tests.gc.support import age_objects

    age_objects(store, "snapshots/orders/3/", clock.now() - 2 * DAY)
    before = (event_types(ledger), listing(store), statuses(ledger))
    # When a dry run is asked for
    report = run_gc(deps, dry_run=True, config=CONFIG)
    # Then nothing changed at all
    assert (event_types(ledger), listing(store), statuses(ledger)) == before
    assert deps.lineages.load_checkpoint() is None
    # and the answer is the plan with reasons
    answer = report.to_dict()
    assert answer["dry_run"] is True
    [lineage] = answer["lineages"]
    assert [d["lsn"] for d in lineage["deleted"]] == [30, 20, 10]
    assert [d["causes"] for d in lineage["deleted"]] == [["unprotected"]] * 3
    # (the prefix holds a well-formed manifest: registered, never deleted; issue 27 row 1)
    assert [(o["action"], o["objects"]) for o in lineage["orphans"]] == [("would_register", 2)]


def test_a_streams_policy_is_applied_and_the_default_elsewhere(deps, ledger, store, clock):
    # Given two streams, and a policy keeping 5 on one of them
    for lsn in (10, 20, 30, 40, 50, 60):
        register(ledger, store, clock, lsn, stream="payments", partition=0)
    six_old_snapshots(ledger, store, clock)
    set_policy(
        stream_log(ledger),
        "payments",
        {"min_count": 5},
        default=CONFIG.default_policy(),
        clock=clock,
    )
    # When GC runs
    run_gc(deps, config=CONFIG)
    # Then payments keeps 5, orders the default 3
    assert list(statuses(ledger, "payments", 0).values()).count("DELETED") == 1
    assert list(statuses(ledger).values()).count("DELETED") == 3


def test_holds_and_pins_protect_and_a_released_or_expired_hold_does_not(deps, ledger, store, clock):
    # Given six old snapshots; 10 is held until released, 20 held for an hour, 30 pinned
    ids = six_old_snapshots(ledger, store, clock)
    hold_snapshot(deps.ledger, ORDERS_3, ids[10], clock=clock, reason="audit", by="ops")
    hold_snapshot(
        deps.ledger, ORDERS_3, ids[20], clock=clock, expires_at=clock.now() + timedelta(hours=1)
    )
    pin = RequestJob(
        stream="orders",
        partition=3,
        job_id="restore-1",
        job_kind="restore",
        base_snapshot_id=ids[30],
        base_lsn=30,
        target_lsn=99,
    )
    execute(ledger, pin, clock.now(), snapshot_keys=(records(ledger)[30].sort_key,))
    # When GC runs
    report = run_gc(deps, config=CONFIG)
    # Then all three are kept, each for its reason, and the trim point stays at 10
    [lineage] = report.to_dict()["lineages"]
    reasons = {k["lsn"]: k["reasons"] for k in lineage["kept"]}
    assert (reasons[10], reasons[20], reasons[30]) == (["held"], ["held"], ["pinned"])
    assert ledger.get_head(ORDERS_3).trim_lsn == 10
    # When the first hold is released and the second expires
    release_hold(deps.ledger, ORDERS_3, ids[10], clock=clock)
    clock.advance(timedelta(hours=2))
    run_gc(deps, config=CONFIG)
    # Then both go, the pinned one stays
    assert statuses(ledger)[10] == statuses(ledger)[20] == "DELETED"
    assert statuses(ledger)[30] == "REGISTERED"
    assert event_types(ledger).count("SnapshotHeld") == 2
    assert event_types(ledger).count("SnapshotReleased") == 1
    assert_ledger_and_store_agree(ledger, store)


def test_the_trim_point_advances_and_never_goes_back(deps, ledger, store, clock):
    six_old_snapshots(ledger, store, clock)
    run_gc(deps, config=CONFIG)
    assert ledger.get_head(ORDERS_3).trim_lsn == 40
    # Given a late snapshot registered below the trim point (an old writer's)
    register(ledger, store, clock, 15)
    run_gc(deps, config=CONFIG)
    # Then the trim point does not move back (the late one is young, so it is retained)
    assert ledger.get_head(ORDERS_3).trim_lsn == 40
    # When newer snapshots arrive and time passes
    for lsn in (70, 80, 90):
        register(ledger, store, clock, lsn)
    clock.advance(2 * DAY)
    run_gc(deps, config=CONFIG)
    # Then it moves forward to the new oldest retained
    assert ledger.get_head(ORDERS_3).trim_lsn == 70
    trims = [
        e
        for e in deps.ledger.list_events(ORDERS_3, limit=1000).items
        if e.type == "TrimPointAdvanced"
    ]
    assert [(t.previous_lsn, t.lsn) for t in trims] == [(None, 40), (40, 70)]


def test_changelog_below_the_trim_point_is_deleted_only_when_the_policy_says_so(
    deps, ledger, store, clock
):
    six_old_snapshots(ledger, store, clock)
    write_segments(store, "orders", 3, (0, 19), (20, 39), (40, 59), (60, 79))
    prefix = lineage_changelog_prefix("orders", 3)
    run_gc(deps, config=CONFIG)
    assert len(listing(store, prefix)) == 4  # off by default
    set_policy(
        stream_log(ledger),
        "orders",
        {"delete_changelog_below_trim": True},
        default=CONFIG.default_policy(),
        clock=clock,
    )
    report = run_gc(deps, config=CONFIG)
    # Then segments wholly below 40 go; the one starting at the trim point stays
    assert [k for k, _ in listing(store, prefix)] == [
        "changelog/orders/3/00000000000000000040-00000000000000000059.parquet",
        "changelog/orders/3/00000000000000000060-00000000000000000079.parquet",
    ]
    assert report.counts()["segments_deleted"] == 2


def test_rejected_snapshots_files_go_after_the_grace_window(deps, ledger, store, clock):
    # Given a latest snapshot and a fenced (REJECTED) one
    register(ledger, store, clock, 100, epoch=5)
    register(ledger, store, clock, 90, epoch=4)
    assert statuses(ledger)[90] == "REJECTED"
    # When GC runs within the window, then after it
    clock.advance(timedelta(hours=23))
    run_gc(deps, config=CONFIG)
    assert statuses(ledger)[90] == "REJECTED"
    clock.advance(timedelta(hours=2))
    run_gc(deps, config=CONFIG)
    # Then its files are gone and the record says why
    rejected = records(ledger)[90]
    assert rejected.status is SnapshotStatus.DELETED
    assert (rejected.expiry_cause, rejected.rejection_code) == ("rejected", "fenced")
    assert listing(store, prefix_of(rejected)) == []
    assert_ledger_and_store_agree(ledger, store)


def test_a_run_out_of_time_stops_cleanly_and_the_next_resumes(deps, ledger, store, clock):
    # Given five lineages with deletable snapshots
    for partition in range(5):
        for lsn in (10, 20, 30, 40, 50):
            register(ledger, store, clock, lsn, partition=partition)
    clock.advance(2 * DAY)
    # When the first run has time for two lineages only, and then its reserve (30 s) to
    # finish the deletes it has in flight
    calls = iter([100.0] * 7 + [20.0] * 20 + [0.0] * 10_000)
    config = GcConfig(page_size=2, gc_workers=1)  # the budget counts calls: one thread
    first = run_gc(deps, config=config, remaining_seconds=lambda: next(calls))
    # Then it stopped, said where, and saved a checkpoint after the lineages it finished
    assert not first.complete and first.resume_after is not None
    checkpoint = deps.lineages.load_checkpoint()
    assert checkpoint is not None and checkpoint.phase == "lineages" and checkpoint.after
    last_done = int(checkpoint.after.rpartition("/")[2])
    done_first = set(range(last_done + 1))
    assert 0 < len(done_first) < 5
    for partition in done_first:
        assert list(statuses(ledger, partition=partition).values()).count("DELETED") == 2
    # When the next run has time enough
    second = run_gc(deps, config=config)
    # Then it started after the checkpoint, finished, and cleared it
    assert second.complete and deps.lineages.load_checkpoint() is None
    assert {r.lineage.partition for r in second.lineages} | done_first == set(range(5))
    for partition in range(5):
        assert list(statuses(ledger, partition=partition).values()).count("DELETED") == 2
        assert_ledger_and_store_agree(ledger, store, partition=partition)


class HoldBeforeCommit:
    """The ledger, with an operator's hold landing just after GC planned (once)."""

    def __init__(self, inner, hold) -> None:
        self._inner, self._hold = inner, hold

    def commit(self, before, events, after, *, request_token):
        if self._hold is not None:
            hold, self._hold = self._hold, None
            hold()
        return self._inner.commit(before, events, after, request_token=request_token)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_a_hold_landing_between_plan_and_apply_wins(ledger, store, clock):
    # Given six old snapshots, GC having planned to delete 10, 20 and 30
    ids = six_old_snapshots(ledger, store, clock)

    def hold():
        hold_snapshot(ledger, ORDERS_3, ids[20], clock=clock, reason="just in time")

    deps = gc_deps(HoldBeforeCommit(ledger, hold), store, clock)
    # When the hold lands after the plan, before the expiry commits
    report = run_gc(deps, config=CONFIG)
    # Then 20 is spared, with the reason, and still whole; the others went
    [lineage] = report.lineages
    assert lineage.spared == {ids[20]: "it is kept: held"}
    assert statuses(ledger) == {
        10: "DELETED",
        20: "REGISTERED",
        30: "DELETED",
        40: "REGISTERED",
        50: "REGISTERED",
        60: "REGISTERED",
    }
    assert ledger.get_head(ORDERS_3).trim_lsn == 20  # the spared one is retained
    assert_ledger_and_store_agree(ledger, store)
