"""The pure retention planner: examples of each reason, then properties over any input."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from snapledger.core.retention import plan
from snapledger.models.jobs import JobKind
from snapledger.models.ledger import ActiveJob, Head, SnapshotStatus, snapshot_sort_key
from snapledger.models.policy import RetentionPolicy
from snapledger.models.retention_reasons import DeleteCause, KeepReason
from tests.gc.builders import HOUR, T0, head_for, hold, record

DEFAULT = RetentionPolicy()  # min_count 3, min_age 24h, no caps
GRACE = timedelta(hours=24)


def reasons_by_lsn(result) -> dict[int, tuple[str, ...]]:
    return {k.record.lsn: tuple(r.value for r in k.reasons) for k in result.kept}


def doomed_lsns(result) -> list[int]:
    return [d.record.lsn for d in result.doomed]


def test_without_caps_everything_unprotected_beyond_the_newest_min_count_is_deleted():
    # Given six old REGISTERED snapshots and the default policy (min_count 3, no caps)
    records = [record(lsn) for lsn in (10, 20, 30, 40, 50, 60)]
    # When planned
    result = plan(records, head_for(*records), DEFAULT, T0)
    # Then the newest three are kept (the latest with both reasons) and the rest deleted
    assert reasons_by_lsn(result) == {60: ("latest", "newest"), 50: ("newest",), 40: ("newest",)}
    assert doomed_lsns(result) == [30, 20, 10]
    assert all(d.causes == (DeleteCause.UNPROTECTED,) for d in result.doomed)


def test_each_protection_is_reported_and_all_of_them_at_once():
    # Given old snapshots that are young, pinned, held (live), held (expired)
    records = [
        record(100),  # latest
        record(90, pins=1, age=HOUR, holds=(hold(),)),  # pinned, young and held all at once
        record(80, age=HOUR),
        record(70, pins=1),
        record(60, holds=(hold(expires_at=T0 + HOUR),)),
        record(50, holds=(hold(expires_at=T0 - HOUR),)),  # expired hold: no protection
        record(40),
    ]
    policy = RetentionPolicy(min_count=1, min_age_hours=24)
    # When planned
    result = plan(records, head_for(*records), policy, T0)
    # Then every protection is named, and only the unprotected go
    assert reasons_by_lsn(result) == {
        100: ("latest", "newest"),
        90: ("too_young", "pinned", "held"),
        80: ("too_young",),
        70: ("pinned",),
        60: ("held",),
    }
    assert doomed_lsns(result) == [50, 40]


def test_age_is_by_registry_time_and_exactly_min_age_is_still_young():
    records = [record(30), record(20, age=timedelta(hours=24)), record(10, age=timedelta(hours=25))]
    result = plan(records, head_for(*records), RetentionPolicy(min_count=1), T0)
    assert reasons_by_lsn(result)[20] == ("too_young",)
    assert doomed_lsns(result) == [10]


def test_rejected_files_wait_for_the_grace_window_unless_held():
    rejected = SnapshotStatus.REJECTED
    records = [
        record(100),
        record(50, status=rejected, age=timedelta(hours=2)),
        record(40, status=rejected, age=timedelta(hours=30)),
        record(30, status=rejected, age=timedelta(hours=30), holds=(hold(),)),
    ]
    result = plan(records, head_for(*records), DEFAULT, T0, grace=GRACE)
    assert reasons_by_lsn(result) == {100: ("latest", "newest"), 50: ("in_grace",), 30: ("held",)}
    assert [(d.record.lsn, d.causes) for d in result.doomed] == [(40, (DeleteCause.REJECTED,))]


def test_expiring_snapshots_are_finished_and_deleted_ones_ignored():
    records = [
        record(100),
        record(50, status=SnapshotStatus.EXPIRING),
        record(40, status=SnapshotStatus.DELETED),
    ]
    result = plan(records, head_for(*records), DEFAULT, T0)
    assert [(d.record.lsn, d.causes, d.fresh) for d in result.doomed] == [
        (50, (DeleteCause.EXPIRING,), False)
    ]
    assert [k.record.lsn for k in result.kept] == [100]


def test_max_count_keeps_that_many_and_deletes_the_unprotected_beyond():
    # Given ten old snapshots, min_count 2, max_count 4, and an old pinned one far back
    records = [record(lsn, pins=1 if lsn == 20 else 0) for lsn in range(10, 110, 10)]
    policy = RetentionPolicy(min_count=2, max_count=4)
    # When planned
    result = plan(records, head_for(*records), policy, T0)
    # Then the newest two are protected, the next two kept within the cap, the pinned one
    # kept whatever the cap says, and the others deleted by the cap
    assert reasons_by_lsn(result) == {
        100: ("latest", "newest"),
        90: ("newest",),
        80: ("within_caps",),
        70: ("within_caps",),
        20: ("pinned",),
    }
    assert doomed_lsns(result) == [60, 50, 40, 30, 10]
    assert {d.causes for d in result.doomed} == {(DeleteCause.BEYOND_MAX_COUNT,)}


def test_max_age_deletes_only_unprotected_snapshots_older_than_it():
    records = [
        record(40, age=timedelta(days=1)),
        record(30, age=timedelta(days=3)),
        record(20, age=timedelta(days=8)),
        record(10, age=timedelta(days=9), holds=(hold(),)),
    ]
    policy = RetentionPolicy(min_count=1, min_age_hours=1, max_age_hours=24 * 7)
    result = plan(records, head_for(*records), policy, T0)
    assert reasons_by_lsn(result) == {
        40: ("latest", "newest"),
        30: ("within_caps",),
        10: ("held",),
    }
    assert [(d.record.lsn, d.causes) for d in result.doomed] == [
        (20, (DeleteCause.OLDER_THAN_MAX_AGE,))
    ]


def test_trim_point_is_the_oldest_retained_and_a_bootstrap_holds_it_back():
    records = [record(lsn) for lsn in (10, 20, 30, 40)]
    head = head_for(*records)
    result = plan(records, head, RetentionPolicy(min_count=2), T0)
    assert result.trim is not None
    assert (result.trim.lsn, result.trim.snapshot_key) == (30, records[2].sort_key)
    running = ActiveJob(kind=JobKind.BOOTSTRAP.value, state="RUNNING", target_lsn=99)
    busy = head.model_copy(update={"active_jobs": {"boot": running}})
    assert plan(records, busy, RetentionPolicy(min_count=2), T0).trim is None


def test_the_same_snapshot_twice_is_refused():
    with pytest.raises(ValueError, match="listed twice"):
        plan([record(10), record(10)], head_for(record(10)), DEFAULT, T0)


# --- properties -----------------------------------------------------------------------

STATUSES = st.sampled_from(
    [SnapshotStatus.REGISTERED] * 5
    + [SnapshotStatus.REJECTED, SnapshotStatus.EXPIRING, SnapshotStatus.DELETED]
)
HOLDS = st.sampled_from(["none", "live", "expired", "forever"])


@st.composite
def snapshot_sets(draw):
    keys = draw(
        st.lists(
            st.tuples(st.integers(0, 30), st.integers(0, 3)), min_size=0, max_size=14, unique=True
        )
    )
    records = []
    for lsn, n in keys:
        kind = draw(HOLDS)
        holds = {
            "none": (),
            "live": (hold(expires_at=T0 + HOUR),),
            "expired": (hold(expires_at=T0 - HOUR),),
            "forever": (hold(),),
        }[kind]
        records.append(
            record(
                lsn,
                lsn * 10 + n,
                status=draw(STATUSES),
                age=timedelta(hours=draw(st.integers(0, 100))),
                pins=draw(st.integers(0, 1)),
                holds=holds,
                broken=("an SST is missing",) if draw(st.integers(0, 4)) == 0 else (),
            )
        )
    registered = [r for r in records if r.status is SnapshotStatus.REGISTERED]
    latest = draw(st.sampled_from(registered)) if registered else None
    head = Head(
        stream="orders",
        partition=3,
        latest_snapshot_id=None if latest is None else latest.snapshot_id,
        latest_lsn=None if latest is None else latest.lsn,
    )
    return records, head


@st.composite
def policies(draw):
    min_count = draw(st.integers(1, 6))
    min_age = draw(st.integers(0, 48))
    max_count = draw(st.none() | st.integers(min_count, 10))
    max_age = draw(st.none() | st.integers(min_age, 96))
    return RetentionPolicy(
        min_count=min_count, min_age_hours=min_age, max_count=max_count, max_age_hours=max_age
    )


def _registered_newer(records, target) -> int:
    """The restorable REGISTERED snapshots newer than ``target`` (none found broken)."""
    return sum(
        1
        for r in records
        if r.status is SnapshotStatus.REGISTERED and not r.broken and r.sort_key > target.sort_key
    )


@settings(max_examples=400, deadline=None)
@given(snapshot_sets(), policies())
def test_no_deleted_snapshot_breaks_the_rule(data, policy):
    records, head = data
    result = plan(records, head, policy, T0, grace=GRACE)
    # Every non-DELETED snapshot is decided exactly once
    decided = [k.record.sort_key for k in result.kept] + [d.record.sort_key for d in result.doomed]
    assert sorted(decided) == sorted(
        r.sort_key for r in records if r.status is not SnapshotStatus.DELETED
    )
    latest = (
        snapshot_sort_key(head.latest_lsn, head.latest_snapshot_id)
        if head.latest_snapshot_id is not None and head.latest_lsn is not None
        else None
    )
    for doomed in result.doomed:
        r = doomed.record
        live_holds = [h for h in r.holds if h.is_live(T0)]
        if r.status is SnapshotStatus.EXPIRING:
            continue  # committed by an earlier run, under the rule as it was then
        assert not live_holds, r
        if r.status is SnapshotStatus.REJECTED:
            assert T0 - r.registered_at > GRACE
            continue
        assert r.status is SnapshotStatus.REGISTERED
        assert r.sort_key != latest
        # a snapshot found broken fills no newest slot: min_count keeps restorable ones
        assert r.broken or _registered_newer(records, r) >= policy.min_count
        assert T0 - r.registered_at > policy.min_age
        assert not r.pins


@settings(max_examples=300, deadline=None)
@given(snapshot_sets(), policies(), st.randoms(use_true_random=False))
def test_the_plan_does_not_depend_on_input_order(data, policy, rng: random.Random):
    records, head = data
    shuffled = list(records)
    rng.shuffle(shuffled)
    first = plan(records, head, policy, T0)
    second = plan(shuffled, head, policy, T0)
    assert first == second


@settings(max_examples=300, deadline=None)
@given(snapshot_sets(), policies())
def test_caps_only_ever_select_among_the_unprotected(data, policy):
    records, head = data
    uncapped = policy.model_copy(update={"max_count": None, "max_age_hours": None})
    with_caps = plan(records, head, policy, T0)
    without = plan(records, head, uncapped, T0)
    # Then caps delete a subset of what no caps would delete...
    assert {d.record.sort_key for d in with_caps.doomed} <= {
        d.record.sort_key for d in without.doomed
    }
    # ...and everything protected without caps is kept, for the same reasons, with them
    protected = {k.record.sort_key: k.reasons for k in without.kept}
    capped = {k.record.sort_key: k.reasons for k in with_caps.kept}
    for key, reasons in protected.items():
        assert capped[key] == reasons
    # ...and no kept-within-caps snapshot has max_count retained newer than it
    if policy.max_count is not None:
        retained = [
            k.record
            for k in with_caps.kept
            if k.record.status is SnapshotStatus.REGISTERED and not k.record.broken
        ]
        for kept in with_caps.kept:
            if kept.reasons[0] is KeepReason.WITHIN_CAPS:
                newer = sum(1 for r in retained if r.sort_key > kept.record.sort_key)
                assert newer < policy.max_count


@settings(max_examples=300, deadline=None)
@given(snapshot_sets(), policies())
def test_applying_the_plan_leaves_nothing_more_to_delete(data, policy):
    records, head = data
    first = plan(records, head, policy, T0)
    survivors = [k.record for k in first.kept]
    again = plan(survivors, head, policy, T0)
    assert again.doomed == ()
    assert again.kept == first.kept
