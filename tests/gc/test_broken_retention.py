"""Retention counts only what can be restored: a snapshot found broken (heal's check,
``SnapshotRecord.broken``) fills no newest-``min_count`` slot, is no witness, is not
counted by ``max_count``, and the commit-time re-check (``decide_expire``) counts as the
planner does. Kept for its own reasons, it says ``broken_not_counted`` in the dry run."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings

from snapledger.core.gc_rules import expiry_refusal, restorable_newer
from snapledger.core.lineage import decide
from snapledger.core.retention import plan
from snapledger.gc_settings import GcConfig
from snapledger.models.commands import RecordBrokenSnapshot
from snapledger.models.events import SnapshotExpiring
from snapledger.models.gc_commands import ExpireSnapshots, ExpiryTarget
from snapledger.models.ledger import SnapshotStatus, snapshot_sort_key
from snapledger.models.policy import RetentionPolicy
from snapledger.models.retention_reasons import KeepReason
from snapledger.services.commands import execute
from snapledger.services.gc import run_gc
from tests.gc.builders import T0, head_for, record, state_of
from tests.gc.support import gc_deps, register, statuses
from tests.gc.test_planner import policies, snapshot_sets

BROKEN = ("part-00000.sst is missing",)
KEEP_TWO = RetentionPolicy(min_count=2, min_age_hours=1)


def reasons_by_lsn(result) -> dict[int, tuple[str, ...]]:
    return {k.record.lsn: tuple(r.value for r in k.reasons) for k in result.kept}


def expire(*targets, policy=KEEP_TWO, cause="unprotected") -> ExpireSnapshots:
    return ExpireSnapshots(
        stream="orders",
        partition=3,
        run_id="run-1",
        targets=tuple(ExpiryTarget(sort_key=t.sort_key, cause=cause) for t in targets),
        policy=policy,
        grace_hours=24,
    )


def test_a_healed_broken_latest_leaves_two_restorable_snapshots_with_min_count_two():
    # Given min count 2; the latest (40) found broken, latest.json healed to 30
    records = [record(40, broken=BROKEN), record(30), record(20), record(10)]
    named = {records[1].sort_key: (KeepReason.NAMED_BY_LATEST_JSON,)}
    # When planned
    result = plan(records, head_for(*records), KEEP_TWO, T0, named=named)
    # Then the broken latest is kept (latest) without counting, 30 and 20 are the newest
    # two, and only 10 goes
    assert reasons_by_lsn(result) == {
        40: ("latest", "broken_not_counted"),
        30: ("newest", "named_by_latest_json"),
        20: ("newest",),
    }
    assert [d.record.lsn for d in result.doomed] == [10]
    assert result.witnesses == (records[1].sort_key, records[2].sort_key)
    # And the dry run's entry says why it does not count
    [entry] = [k for k in result.to_dict()["kept"] if k["lsn"] == 40]
    assert entry["reasons"] == ["latest", "broken_not_counted"]
    assert entry["broken"] == list(BROKEN)


def test_a_broken_snapshot_below_the_latest_takes_no_newest_slot():
    # Given a native lineage whose second newest was found broken, old and unprotected
    records = [record(40), record(30, broken=BROKEN), record(20), record(10)]
    result = plan(records, head_for(*records), KEEP_TWO, T0)
    # Then it is deleted (nothing of its own keeps it) and 20 is the second newest
    assert reasons_by_lsn(result) == {40: ("latest", "newest"), 20: ("newest",)}
    assert [d.record.lsn for d in result.doomed] == [30, 10]


def test_a_young_broken_snapshot_is_kept_but_counts_for_nothing():
    records = [record(40, broken=BROKEN, age=timedelta(minutes=5)), record(30), record(20)]
    policy = RetentionPolicy(min_count=1, min_age_hours=1)
    result = plan(records, head_for(records[1]), policy, T0)
    assert reasons_by_lsn(result) == {
        40: ("too_young", "broken_not_counted"),
        30: ("latest", "newest"),
    }
    assert [d.record.lsn for d in result.doomed] == [20]


def test_max_count_does_not_count_a_broken_snapshot_it_keeps():
    # Given min count 1 and max count 2, and a broken snapshot within the cap
    records = [record(50), record(40, broken=BROKEN), record(30), record(20), record(10)]
    policy = RetentionPolicy(min_count=1, min_age_hours=1, max_count=2)
    result = plan(records, head_for(*records), policy, T0)
    # Then the cap keeps two restorable ones (50 and 30), the broken one beside them
    assert reasons_by_lsn(result) == {
        50: ("latest", "newest"),
        40: ("within_caps", "broken_not_counted"),
        30: ("within_caps",),
    }
    assert [d.record.lsn for d in result.doomed] == [20, 10]


def test_the_commit_refuses_what_the_broken_latest_would_have_let_go():
    # Given the planner's case: the latest broken, min count 2
    latest, healed, older = record(40, broken=BROKEN), record(30), record(20)
    state = state_of(latest, healed, older)
    # When a (stale) plan asks to expire 20
    events = decide(state, expire(older), T0)
    # Then the re-check refuses: 20 is among the newest two restorable
    assert events == []
    why = expiry_refusal(
        older,
        ExpiryTarget(sort_key=older.sort_key, cause="unprotected"),
        state.head,
        KEEP_TWO,
        T0,
        grace=timedelta(hours=24),
        registered_newer=restorable_newer(state.snapshots, older.sort_key),
    )
    assert why == "it is kept: newest"


@settings(max_examples=300, deadline=None)
@given(snapshot_sets(), policies())
def test_the_commit_agrees_with_the_planner(data, policy):
    """Every REGISTERED snapshot the planner deletes is expired by the commit on the same
    records, and every REGISTERED one it protects is refused, broken ones among them."""
    records, head = data
    uncapped = policy.model_copy(update={"max_count": None, "max_age_hours": None})
    result = plan(records, head, uncapped, T0)
    state = state_of(*records, head=head)
    doomed = [d.record for d in result.doomed if d.record.status is SnapshotStatus.REGISTERED]
    if doomed:
        events = decide(state, expire(*doomed, policy=uncapped), T0)
        expired = {e.lsn for e in events if isinstance(e, SnapshotExpiring)}
        assert expired == {r.lsn for r in doomed}
    for kept in result.kept:
        if kept.record.status is SnapshotStatus.REGISTERED:
            assert decide(state, expire(kept.record, policy=uncapped), T0) == []


def test_gc_of_a_native_lineage_whose_latest_was_found_broken_keeps_two_restorable(
    ledger, store, clock
):
    # Given four old native snapshots, min count 2, and the latest (40) found broken
    ids = {lsn: register(ledger, store, clock, lsn) for lsn in (10, 20, 30, 40)}
    clock.advance(timedelta(days=10))
    execute(
        ledger,
        RecordBrokenSnapshot(
            stream="orders", partition=3, lsn=40, snapshot_id=ids[40], problems=BROKEN
        ),
        clock.now(),
        snapshot_keys=(snapshot_sort_key(40, ids[40]),),
    )
    config = GcConfig(default_min_count=2, default_min_age_hours=1)
    deps = gc_deps(ledger, store, clock)
    # When GC plans (dry run) and then runs
    planned = run_gc(deps, config=config, dry_run=True).to_dict()["lineages"][0]
    report = run_gc(deps, config=config)
    # Then both keep 30 and 20 as the newest two restorable, beside the broken latest
    expected = [
        (40, ["latest", "broken_not_counted"]),
        (30, ["newest"]),
        (20, ["newest"]),
    ]
    assert [(k["lsn"], k["reasons"]) for k in planned["kept"]] == expected
    assert [(k["lsn"], k["reasons"]) for k in report.to_dict()["lineages"][0]["kept"]] == expected
    assert statuses(ledger) == {
        10: "DELETED",
        20: "REGISTERED",
        30: "REGISTERED",
        40: "REGISTERED",
    }
