"""The lineage Decider: registration outcomes and the latest pointer's invariants."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from snapledger.core.lineage import LineageState, decide, evolve_all
from snapledger.models.commands import ManifestSummary, RegisterSnapshot
from snapledger.models.events import LatestAdvanced, SnapshotRegistered, SnapshotRejected
from snapledger.models.ledger import SnapshotStatus, snapshot_sort_key

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ULIDS = [f"01J{n:023d}" for n in range(64)]


def register(lsn: int, n: int = 0, epoch: int = 1, digest: str | None = None, **kw: object):
    sid = ULIDS[n]
    return RegisterSnapshot(
        stream="orders",
        partition=3,
        lsn=lsn,
        snapshot_id=sid,
        manifest_key=f"snapshots/orders/3/{lsn:020d}-{sid}/_manifest.json",
        manifest_digest=digest or f"sha256:{lsn}-{n}",
        summary=None
        if "rejection" in kw
        else ManifestSummary(epoch=epoch, file_count=1, total_bytes=10),
        **kw,  # type: ignore[arg-type]
    )


def run(state: LineageState, *commands: RegisterSnapshot, now: datetime = T0):
    produced = []
    for command in commands:
        events = decide(state, command, now)
        state = evolve_all(state, events)
        produced.append(events)
    return state, produced


def empty() -> LineageState:
    return LineageState.empty("orders", 3)


def test_first_snapshot_becomes_latest():
    state, [events] = run(empty(), register(100))
    assert [type(e) for e in events] == [SnapshotRegistered, LatestAdvanced]
    assert (state.head.latest_lsn, state.head.latest_snapshot_id, state.head.version) == (
        100,
        ULIDS[0],
        2,
    )


def test_older_snapshot_is_recorded_but_pointer_stays():
    state, [_, late] = run(empty(), register(100, 0), register(50, 1))
    assert [type(e) for e in late] == [SnapshotRegistered]
    assert state.head.latest_lsn == 100
    assert state.snapshots[snapshot_sort_key(50, ULIDS[1])].status is SnapshotStatus.REGISTERED


def test_same_lsn_as_latest_keeps_the_pointer_on_the_first():
    state, [_, same] = run(empty(), register(100, 0), register(100, 1))
    assert [type(e) for e in same] == [SnapshotRegistered]
    assert state.head.latest_snapshot_id == ULIDS[0]


def test_older_epoch_is_fenced_and_recorded_rejected_with_reason():
    state, [_, fenced] = run(empty(), register(100, 0, epoch=5), register(200, 1, epoch=4))
    assert isinstance(fenced[0], SnapshotRejected) and fenced[0].code == "fenced"
    assert "epoch 4 is below" in fenced[0].reason
    record = state.snapshots[snapshot_sort_key(200, ULIDS[1])]
    assert record.status is SnapshotStatus.REJECTED and record.rejection_code == "fenced"
    assert state.head.latest_lsn == 100


def test_invalid_manifest_is_rejected_with_its_reason_and_pointer_untouched():
    state, [_, bad] = run(
        empty(), register(100, 0), register(300, 1, rejection="files[0].path: '..' is not allowed")
    )
    assert isinstance(bad[0], SnapshotRejected) and bad[0].code == "invalid"
    assert bad[0].reason == "files[0].path: '..' is not allowed"
    assert state.head.latest_lsn == 100


def test_redelivery_of_the_same_manifest_is_a_no_op():
    state, [_, again] = run(empty(), register(100, 0), register(100, 0))
    assert again == []
    assert state.head.version == 2


def test_same_id_with_other_content_is_a_conflict_recorded_once():
    state, [_, conflict, again] = run(
        empty(),
        register(100, 0, digest="sha256:a"),
        register(100, 0, digest="sha256:b"),
        register(100, 0, digest="sha256:b"),
    )
    assert isinstance(conflict[0], SnapshotRejected) and conflict[0].code == "conflict"
    assert again == []
    record = state.snapshots[snapshot_sort_key(100, ULIDS[0])]
    assert record.status is SnapshotStatus.REGISTERED and record.manifest_digest == "sha256:a"
    assert record.conflicting_digests == ("sha256:b",)


def test_vanished_manifest_records_nothing_whether_recorded_or_not():
    state, [_, vanished_known] = run(
        empty(), register(100, 0), register(100, 0, digest="x", manifest_missing=True)
    )
    assert vanished_known == []
    # Never seen and gone before it was read: nothing to reject (the caller counts it)
    after, [unknown] = run(
        state, register(200, 1, digest="missing", manifest_missing=True, rejection=None)
    )
    assert unknown == []
    assert snapshot_sort_key(200, ULIDS[1]) not in after.snapshots
    assert after.head.version == state.head.version


def test_registry_time_is_the_server_clock_not_the_producers():
    later = T0 + timedelta(hours=5)
    state, _ = run(empty(), register(100), now=later)
    assert state.snapshots[snapshot_sort_key(100, ULIDS[0])].registered_at == later


# --- property: any sequence with redeliveries and reordering --------------------------


@dataclass(frozen=True)
class Spec:
    n: int
    epoch: int
    valid: bool
    variant: int  # a different digest for the same id: a conflicting rewrite


specs = st.lists(
    st.builds(
        Spec,
        n=st.integers(0, 63),
        epoch=st.integers(0, 4),
        valid=st.booleans(),
        variant=st.integers(0, 1),
    ),
    min_size=1,
    max_size=40,
)


def to_command(spec: Spec) -> RegisterSnapshot:
    # The id determines the LSN (as in the key); distinct ids may share an LSN
    lsn = spec.n * 7 % 41
    digest = f"sha256:{spec.n}:{spec.variant}"
    if spec.valid:
        return register(lsn, spec.n, epoch=spec.epoch, digest=digest)
    return register(lsn, spec.n, digest=digest, rejection="bad", epoch_hint=spec.epoch)


def oracle_latest(commands: list[RegisterSnapshot]) -> tuple[int, str] | None:
    """Independent model: the first content per id decides; fencing against epochs so far;
    the first snapshot to reach the highest LSN keeps the pointer."""
    seen: set[str] = set()
    max_epoch: int | None = None
    latest: tuple[int, str] | None = None
    for c in commands:
        if c.snapshot_id in seen:
            continue
        seen.add(c.snapshot_id)
        if c.summary is None:
            continue
        if max_epoch is not None and c.summary.epoch < max_epoch:
            continue
        max_epoch = max(max_epoch or 0, c.summary.epoch)
        if latest is None or c.lsn > latest[0]:
            latest = (c.lsn, c.snapshot_id)
    return latest


@settings(max_examples=300, deadline=None)
@given(specs, st.data())
def test_any_delivery_order_with_redeliveries_keeps_the_pointer_right(spec_list, data):
    # Given commands, delivered in a shuffled order with some delivered again
    commands = [to_command(s) for s in spec_list]
    redelivered = data.draw(st.lists(st.sampled_from(commands), max_size=15))
    order = data.draw(st.permutations(commands + redelivered))
    # When they are decided one by one
    state = empty()
    all_events = []
    pointer_history = []
    for command in order:
        events = decide(state, command, T0)
        state = evolve_all(state, events)
        all_events.extend(events)
        pointer_history.append(state.head.latest_lsn)
    # Then the pointer is the highest LSN among valid, unfenced snapshots
    expected = oracle_latest(list(order))
    actual = (
        None
        if state.head.latest_lsn is None
        else (state.head.latest_lsn, state.head.latest_snapshot_id)
    )
    assert actual == expected
    # and it never decreased
    seen = [p for p in pointer_history if p is not None]
    assert seen == sorted(seen)
    # and event sequence numbers are gapless from 1
    assert [e.seq for e in all_events] == list(range(1, len(all_events) + 1))
    assert state.head.version == len(all_events)
    # and the latest always names a REGISTERED snapshot
    if state.head.latest_snapshot_id is not None:
        record = state.snapshots[
            snapshot_sort_key(state.head.latest_lsn, state.head.latest_snapshot_id)
        ]
        assert record.status is SnapshotStatus.REGISTERED
    # and every distinct id is recorded exactly once
    ids = {c.snapshot_id for c in order}
    assert {r.snapshot_id for r in state.snapshots.values()} == ids


def test_every_lineage_command_has_its_rule():
    """A command added to the union without a rule would fail only when first sent."""
    from typing import get_args

    from snapledger.core import lineage

    assert set(get_args(lineage.Command)) == set(lineage._DECIDERS)


def test_an_event_no_rule_applies_moves_only_the_version():
    """An informational event type (a fact the log keeps) needs no entry in ``evolve``."""
    from typing import Literal

    from snapledger.models.events import EventBase

    class NoteTaken(EventBase):
        type: Literal["NoteTaken"] = "NoteTaken"
        text: str

    state, _ = run(empty(), register(100))
    note = NoteTaken(
        seq=3,
        at=T0 + timedelta(hours=1),
        stream="orders",
        partition=3,
        command_id="note",
        text="hello",
    )
    after = evolve_all(state, [note])  # type: ignore[list-item]
    assert after.head == state.head.model_copy(update={"version": 3, "updated_at": note.at})
    assert after.snapshots == state.snapshots


def test_the_events_that_change_no_lineage_state_are_the_ones_meant():
    """A state-changing event type left out of ``evolve``'s rules would be replayed as a
    no-op: the types without a rule are named here on purpose."""
    from typing import get_args

    from snapledger.core import lineage
    from snapledger.models.events import ChangelogSegmentRejected, LedgerEvent

    union = set(get_args(get_args(LedgerEvent)[0]))
    assert union - set(lineage._EVOLVERS) == {ChangelogSegmentRejected}
    assert set(lineage._EVOLVERS) <= union
