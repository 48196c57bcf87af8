"""The GC commands' decide/evolve: the commit-time re-check, holds, trim, orphan claims."""

from __future__ import annotations

from datetime import timedelta

import pytest

from snapledger.core.lineage import decide, evolve_all
from snapledger.errors import InvalidRequestError, NotFoundError
from snapledger.models.commands import HoldSnapshot, ReleaseHold
from snapledger.models.events import SnapshotDeleted, SnapshotExpiring, TrimPointAdvanced
from snapledger.models.gc_commands import (
    AdvanceTrimPoint,
    ClaimOrphan,
    DeletedPrefix,
    ExpireSnapshots,
    ExpiryTarget,
    MarkSnapshotsDeleted,
    TrimProposal,
)
from snapledger.models.jobs import JobKind
from snapledger.models.ledger import ActiveJob, SnapshotStatus
from snapledger.models.policy import RetentionPolicy
from tests.gc.builders import HOUR, T0, head_for, hold, record, sid, state_of

POLICY = RetentionPolicy(min_count=2, min_age_hours=24)


def expire(*targets, witnesses=(), policy=POLICY, cause="unprotected") -> ExpireSnapshots:
    return ExpireSnapshots(
        stream="orders",
        partition=3,
        run_id="run-1",
        targets=tuple(ExpiryTarget(sort_key=t.sort_key, cause=cause) for t in targets),
        witnesses=tuple(w.sort_key for w in witnesses),
        policy=policy,
        grace_hours=24,
    )


def expired_lsns(events) -> list[int]:
    return [e.lsn for e in events if isinstance(e, SnapshotExpiring)]


def test_expiring_an_unprotected_snapshot_moves_it_to_expiring_with_its_reason():
    # Given three old snapshots and min_count 2
    a, b, c = record(30), record(20), record(10)
    state = state_of(a, b, c)
    # When the oldest is expired with the newest two as witnesses
    events = decide(state, expire(c, witnesses=(a, b)), T0)
    after = evolve_all(state, events)
    # Then it is EXPIRING, with the rule's words, and nothing else changed
    [event] = events
    assert isinstance(event, SnapshotExpiring) and event.cause == "unprotected"
    assert "not among the newest 2" in event.reason
    assert after.snapshots[c.sort_key].status is SnapshotStatus.EXPIRING
    assert after.snapshots[c.sort_key].version == event.seq == after.head.version
    assert after.snapshots[a.sort_key] == a


def test_a_pin_or_hold_that_arrived_after_the_plan_wins():
    # Given the plan chose c and d, but since then c was pinned and d held
    a, b = record(40), record(30)
    c, d = record(20, pins=1), record(10, holds=(hold(),))
    state = state_of(a, b, c, d)
    # When the expiry is decided on the fresh state
    events = decide(state, expire(c, d, witnesses=(a, b)), T0)
    # Then neither is expired
    assert events == []


def test_witnesses_that_are_gone_protect_the_target():
    # Given min_count 2, but one witness was expired meanwhile (by a run with another policy)
    a, b, c = record(30), record(20, status=SnapshotStatus.EXPIRING), record(10)
    # When c is to be expired
    events = decide(state_of(a, b, c), expire(c, witnesses=(a, b)), T0)
    # Then it is now among the newest two REGISTERED: kept
    assert events == []


def test_the_latest_and_the_young_are_never_expired_whatever_the_command_says():
    a, b = record(30), record(20, age=timedelta(hours=23))
    state = state_of(a, b)
    assert decide(state, expire(a, b, policy=RetentionPolicy(min_count=1)), T0) == []


def test_each_target_is_checked_after_the_ones_above_it_in_the_same_command():
    # Given min_count 1 and four snapshots, all targeted (a bad plan)
    a, b, c, d = record(40), record(30), record(20), record(10)
    events = decide(
        state_of(a, b, c, d), expire(a, b, c, d, policy=RetentionPolicy(min_count=1)), T0
    )
    # Then the latest stays and the others go
    assert expired_lsns(events) == [30, 20, 10]


def test_rejected_snapshots_wait_for_the_grace_window_and_causes_must_match():
    young = record(20, status=SnapshotStatus.REJECTED, age=HOUR)
    old = record(10, status=SnapshotStatus.REJECTED, age=timedelta(hours=30))
    latest = record(30)
    state = state_of(latest, young, old)
    assert expired_lsns(decide(state, expire(young, old, cause="rejected"), T0)) == [10]
    assert decide(state, expire(old, cause="unprotected"), T0) == []


def test_max_age_is_rechecked_but_max_count_comes_from_the_plan():
    policy = RetentionPolicy(min_count=1, min_age_hours=1, max_age_hours=48, max_count=5)
    a, b = record(20), record(10, age=timedelta(hours=30))
    state = state_of(a, b)
    assert decide(state, expire(b, policy=policy, cause="older_than_max_age"), T0) == []
    assert expired_lsns(decide(state, expire(b, policy=policy, cause="beyond_max_count"), T0)) == [
        10
    ]
    # and "unprotected" is refused when caps exist: only a cap may choose then
    assert decide(state, expire(b, policy=policy, cause="unprotected"), T0) == []


def test_expiring_twice_and_marking_deleted_are_idempotent():
    a, b, c = record(30), record(20), record(10)
    state = state_of(a, b, c)
    state = evolve_all(state, decide(state, expire(c, witnesses=(a, b)), T0))
    assert decide(state, expire(c, witnesses=(a, b)), T0) == []
    mark = MarkSnapshotsDeleted(
        stream="orders",
        partition=3,
        run_id="r",
        deleted=(
            DeletedPrefix(sort_key=c.sort_key, objects_deleted=2),
            DeletedPrefix(sort_key=b.sort_key, objects_deleted=2),  # not EXPIRING: ignored
        ),
    )
    events = decide(state, mark, T0)
    assert [(type(e), e.lsn) for e in events] == [(SnapshotDeleted, 10)]
    state = evolve_all(state, events)
    assert state.snapshots[c.sort_key].status is SnapshotStatus.DELETED
    assert state.snapshots[c.sort_key].objects_deleted == 2
    assert decide(state, mark, T0) == []


def trim(target, lsn=None) -> AdvanceTrimPoint:
    return AdvanceTrimPoint(
        stream="orders",
        partition=3,
        lsn=target.lsn if lsn is None else lsn,
        snapshot_key=target.sort_key,
    )


def test_the_trim_point_only_moves_forward_and_only_to_a_registered_snapshot():
    a, b = record(30), record(20)
    state = state_of(a, b)
    [event] = decide(state, trim(b), T0)
    assert isinstance(event, TrimPointAdvanced) and (event.lsn, event.previous_lsn) == (20, None)
    state = evolve_all(state, [event])
    assert state.head.trim_lsn == 20
    assert decide(state, trim(b), T0) == []  # same point
    older = record(10)
    state = state_of(a, b, older, head=state.head)
    assert decide(state, trim(older), T0) == []  # never backwards
    gone = record(25, status=SnapshotStatus.EXPIRING)
    assert decide(state_of(a, gone, head=state.head), trim(gone), T0) == []


def test_a_running_job_holds_the_trim_point_back():
    a, b = record(30), record(20)
    bootstrap = ActiveJob(kind=JobKind.BOOTSTRAP.value, state="RUNNING", target_lsn=50)
    head = head_for(a, b).model_copy(update={"active_jobs": {"j": bootstrap}})
    assert decide(state_of(a, b, head=head), trim(b), T0) == []


def claim(lsn=5, newest_age=timedelta(hours=30)) -> ClaimOrphan:
    return ClaimOrphan(
        stream="orders",
        partition=3,
        lsn=lsn,
        snapshot_id=sid(lsn),
        manifest_key=f"snapshots/orders/3/{lsn:020d}-{sid(lsn)}/_manifest.json",
        object_count=2,
        newest_object_at=T0 - newest_age,
        grace_hours=24,
    )


def test_an_orphan_is_claimed_only_if_unrecorded_and_past_the_window():
    state = state_of(record(30))
    events = decide(state, claim(), T0)
    after = evolve_all(state, events)
    claimed = after.snapshots[record(5).sort_key]
    assert (claimed.status, claimed.expiry_cause) == (SnapshotStatus.EXPIRING, "orphan")
    assert decide(after, claim(), T0) == []  # already recorded
    assert decide(state, claim(newest_age=timedelta(hours=23)), T0) == []  # in flight
    assert decide(state_of(record(5)), claim(), T0) == []  # registered meanwhile


def hold_cmd(target, hold_id="h1", **kw) -> HoldSnapshot:
    return HoldSnapshot(
        stream="orders",
        partition=3,
        lsn=target.lsn,
        snapshot_id=target.snapshot_id,
        hold_id=hold_id,
        **kw,
    )


def test_holds_are_added_once_released_one_or_all_and_refused_when_meaningless():
    a = record(30)
    state = state_of(a)
    state = evolve_all(state, decide(state, hold_cmd(a, "h1", reason="audit", by="ops"), T0))
    assert decide(state, hold_cmd(a, "h1"), T0) == []  # the same hold again
    state = evolve_all(state, decide(state, hold_cmd(a, "h2", expires_at=T0 + HOUR), T0))
    assert [h.hold_id for h in state.snapshots[a.sort_key].holds] == ["h1", "h2"]
    assert state.snapshots[a.sort_key].holds[0].reason == "audit"

    def release(hold_id):
        return ReleaseHold(
            stream="orders",
            partition=3,
            lsn=a.lsn,
            snapshot_id=a.snapshot_id,
            hold_id=hold_id,
            request_id=f"req-{hold_id}",
        )

    one = evolve_all(state, decide(state, release("h2"), T0))
    assert [h.hold_id for h in one.snapshots[a.sort_key].holds] == ["h1"]
    assert decide(one, release("h2"), T0) == []  # already released
    every = evolve_all(state, decide(state, release(None), T0))
    assert every.snapshots[a.sort_key].holds == ()


def test_a_hold_on_an_expiring_snapshot_or_in_the_past_is_refused_with_a_reason():
    expiring = record(20, status=SnapshotStatus.EXPIRING)
    with pytest.raises(InvalidRequestError, match=r"EXPIRING.*cannot be held"):
        decide(state_of(record(30), expiring), hold_cmd(expiring), T0)
    with pytest.raises(InvalidRequestError, match="not in the future"):
        decide(state_of(record(30)), hold_cmd(record(30), expires_at=T0 - HOUR), T0)
    with pytest.raises(NotFoundError, match="no snapshot"):
        decide(state_of(record(30)), hold_cmd(record(10)), T0)


def test_marking_deleted_can_advance_the_trim_point_in_the_same_transaction():
    a, b, c = record(30), record(20), record(10, status=SnapshotStatus.EXPIRING)
    state = state_of(a, b, c)

    def mark(trim_to):
        return MarkSnapshotsDeleted(
            stream="orders",
            partition=3,
            run_id="r",
            deleted=(DeletedPrefix(sort_key=c.sort_key, objects_deleted=1),),
            trim=TrimProposal(lsn=trim_to.lsn, snapshot_key=trim_to.sort_key),
        )

    events = decide(state, mark(b), T0)
    assert [e.type for e in events] == ["SnapshotDeleted", "TrimPointAdvanced"]
    assert evolve_all(state, events).head.trim_lsn == 20
    # a trim proposal naming a snapshot that is not REGISTERED is dropped, the mark stays
    assert [e.type for e in decide(state, mark(c), T0)] == ["SnapshotDeleted"]
