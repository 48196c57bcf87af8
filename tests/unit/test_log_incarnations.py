"""Log incarnations (issue 43, item 1; DESIGN invariant 18): a changelog topic deleted and
recreated under the same name is another incarnation, whose offsets restart. Registration
lets a new incarnation's first snapshot (an epoch above the lineage's highest) become the
latest whatever its LSN, the old incarnation's late snapshots are fenced, and the latest
never moves back within an incarnation; the rule that tells incarnations apart."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from snapledger.core.changelog_horizon import other_incarnation
from snapledger.core.lineage import LineageState, decide, evolve_all
from snapledger.models.commands import ManifestSummary, RegisterSnapshot
from snapledger.models.events import LatestAdvanced, SnapshotRegistered, SnapshotRejected
from snapledger.models.snapshot import ChangelogHorizon
from tests.unit.test_lineage_decider import T0, ULIDS

OLD, NEW = "mAvqbi8XSciGoHpHwTMETA", "J_a_Mo_xStyarpEDTjEqtA"
TOPIC = "app-totals-changelog"


def register(lsn: int, n: int, epoch: int, topic_id: str | None) -> RegisterSnapshot:
    sid = ULIDS[n]
    changelog = ChangelogHorizon(log_start_offset=0, end_offset=lsn + 1, topic_id=topic_id)
    return RegisterSnapshot(
        stream=TOPIC,
        partition=0,
        lsn=lsn,
        snapshot_id=sid,
        manifest_key=f"snapshots/{TOPIC}/0/{lsn:020d}-{sid}/_manifest.json",
        manifest_digest=f"sha256:{lsn}-{n}",
        summary=ManifestSummary(epoch=epoch, file_count=1, total_bytes=10, changelog=changelog),
    )


def run(*commands: RegisterSnapshot):
    state = LineageState.empty(TOPIC, 0)
    produced = []
    for command in commands:
        events = decide(state, command, T0)
        state = evolve_all(state, events)
        produced.append([type(e) for e in events])
    return state, produced


def test_a_new_incarnations_first_snapshot_becomes_the_latest_below_the_old_lsn():
    # Given the old topic's snapshots up to LSN 900 at epoch 1, then the topic recreated
    # When the new incarnation's first snapshot (epoch 2, LSN 40) registers
    state, produced = run(
        register(500, 0, 1, OLD), register(900, 1, 1, OLD), register(40, 2, 2, NEW)
    )
    # Then it is the latest, though its LSN is below the old latest's
    assert produced[2] == [SnapshotRegistered, LatestAdvanced]
    assert (state.head.latest_lsn, state.head.latest_snapshot_id) == (40, ULIDS[2])
    assert state.head.max_epoch == 2


def test_after_it_the_old_incarnation_is_fenced_and_the_pointer_never_moves_back():
    state, produced = run(
        register(900, 0, 1, OLD),
        register(40, 1, 2, NEW),
        register(950, 2, 1, OLD),  # a late snapshot of the old topic
        register(30, 3, 2, NEW),  # an older snapshot of the new one
        register(60, 4, 2, NEW),
    )
    # Then the old topic's late snapshot is fenced by its epoch, the new topic's older one is
    # recorded without moving the pointer, and a newer one of it advances it as always
    assert produced[2] == [SnapshotRejected]
    assert produced[3] == [SnapshotRegistered]
    assert produced[4] == [SnapshotRegistered, LatestAdvanced]
    assert state.head.latest_lsn == 60


def test_a_higher_epoch_without_a_topic_id_moves_the_pointer_only_forwards():
    # Given a manifest that names no topic id (an earlier release, or a native producer)
    state, produced = run(register(900, 0, 1, OLD), register(40, 1, 2, None))
    # Then its higher epoch does not let it move the pointer back
    assert produced[1] == [SnapshotRegistered]
    assert state.head.latest_lsn == 900


def test_another_incarnation_is_told_apart_only_when_both_ids_are_known():
    assert other_incarnation(TOPIC, OLD, OLD) is None
    assert other_incarnation(TOPIC, None, NEW) is None  # written before topic ids: continued
    assert other_incarnation(TOPIC, OLD, None) is None
    why = other_incarnation(TOPIC, OLD, NEW)
    assert why is not None
    assert why.startswith("made from another incarnation of the changelog")
    assert all(name in why for name in (TOPIC, OLD, NEW))


INCARNATIONS = [OLD, NEW, "AAAAAAAAAAAAAAAAAAAAAQ"]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 2)),  # (LSN, incarnation) per snapshot
        min_size=1,
        max_size=30,
    )
)
def test_the_pointer_never_moves_back_within_an_incarnation_nor_to_an_older_one(snapshots):
    # Given snapshots of three incarnations of the topic, incarnation i written at epoch i + 1,
    # delivered in any order
    state = LineageState.empty(TOPIC, 0)
    incarnation_of: dict[str, int] = {}
    previous: tuple[int, int] | None = None  # (incarnation, LSN) of the latest
    for n, (lsn, i) in enumerate(snapshots):
        incarnation_of[ULIDS[n]] = i
        state = evolve_all(state, decide(state, register(lsn, n, i + 1, INCARNATIONS[i]), T0))
        head = state.head
        latest = (incarnation_of[head.latest_snapshot_id], head.latest_lsn)
        # Then the latest never goes to an older incarnation, nor back within its own
        if previous is not None:
            assert latest[0] >= previous[0]
            if latest[0] == previous[0]:
                assert latest[1] >= previous[1]
        previous = latest
    # And it is of the newest incarnation delivered (whose first snapshot had an epoch above
    # all others, after which the older incarnations' were fenced)
    assert previous is not None and previous[0] == max(i for _, i in snapshots)
