"""A decision's reads are all checked by its commit: stale witnesses or seeds re-decide.

BatchGetItem reads its items in no set order. If the witnesses (the newest min_count)
are read before a concurrent expiry commits and HEAD after it, a decision sees a stale
witness and a current version. The commit checks every item the decision read and left
unchanged (a ConditionCheck on its version), so that interleaving, or a seed that went
stale (GC seeds its commands with its plan's index reads), fails and is decided again.
"""

from __future__ import annotations

from datetime import timedelta

from snapledger.core.state import LineageState
from snapledger.models.gc_commands import ExpireSnapshots, ExpiryTarget
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.models.policy import RetentionPolicy
from snapledger.services.commands import execute
from tests.gc.support import records, register

ORDERS_3 = LineageId(stream="orders", partition=3)


class ItemsThenHead:
    """A ledger whose load reads the items, lets ``interloper`` commit once, then HEAD."""

    def __init__(self, inner, interloper) -> None:
        self._inner, self._interloper = inner, interloper

    def load(self, lineage, snapshot_keys=()):
        items = self._inner.load(lineage, snapshot_keys).snapshots
        if self._interloper is not None:
            interloper, self._interloper = self._interloper, None
            interloper()
        head = self._inner.get_head(lineage, consistent=True)
        return LineageState(head=head, snapshots=items)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def expire(targets, witnesses, min_count):
    return ExpireSnapshots(
        stream="orders",
        partition=3,
        run_id=f"run-{min_count}",
        targets=tuple(ExpiryTarget(sort_key=t.sort_key, cause="unprotected") for t in targets),
        witnesses=tuple(w.sort_key for w in witnesses),
        policy=RetentionPolicy(min_count=min_count),
        grace_hours=24,
    )


def setup(ledger, store, clock):
    for lsn in (40, 30, 20):
        register(ledger, store, clock, lsn)
    clock.advance(timedelta(days=3))
    by_lsn = records(ledger)
    a, b, c = by_lsn[40], by_lsn[30], by_lsn[20]
    # Another run, with min_count 1, expires b while ours (min_count 2) is loading
    other = expire([b], [a], min_count=1)

    def interloper():
        execute(ledger, other, clock.now(), snapshot_keys=other.snapshot_keys)

    return a, b, c, interloper


def _registered(ledger):
    return sorted(r.lsn for r in records(ledger).values() if r.status is SnapshotStatus.REGISTERED)


def test_a_witness_read_stale_within_a_load_makes_the_commit_re_decide(ledger, store, clock):
    # Given the worst read order: the witnesses read before another run expires b, HEAD after
    a, b, c, interloper = setup(ledger, store, clock)
    ours = expire([c], [a, b], min_count=2)
    # When our expiry decides on b as a witness that is in fact gone
    result = execute(
        ItemsThenHead(ledger, interloper), ours, clock.now(), snapshot_keys=ours.snapshot_keys
    )
    # Then the first commit lost the race (b's check failed), the retry saw b gone, c is kept
    assert result.attempts == 2 and result.lost_races == 1 and result.events == []
    assert _registered(ledger) == [20, 40]


def test_a_stale_seed_makes_the_commit_load_and_re_decide(ledger, store, clock):
    # Given a seed read before another run expired b (as GC's plan reads seed its commands)
    a, b, c, interloper = setup(ledger, store, clock)
    ours = expire([c], [a, b], min_count=2)
    seed = ledger.load(ORDERS_3, ours.snapshot_keys)
    interloper()
    # When our expiry decides on the seed
    result = execute(ledger, ours, clock.now(), snapshot_keys=ours.snapshot_keys, seed=seed)
    # Then its commit failed, the retry loaded b gone, and c is kept
    assert result.attempts == 2 and result.lost_races == 1 and result.events == []
    assert _registered(ledger) == [20, 40]


def test_a_fresh_seed_commits_without_a_read(ledger, store, clock):
    # Given a seed that is current
    a, b, c, _ = setup(ledger, store, clock)
    ours = expire([c], [a, b], min_count=2)
    seed = ledger.load(ORDERS_3, ours.snapshot_keys)
    loads = []
    counting = CountingLoads(ledger, loads)
    # When our expiry runs on it
    result = execute(counting, ours, clock.now(), snapshot_keys=ours.snapshot_keys, seed=seed)
    # Then it committed at once, with no load
    assert result.attempts == 1 and loads == []
    assert _registered(ledger) == [30, 40]


def test_a_seed_that_leads_to_nothing_is_checked_by_a_load(ledger, store, clock):
    # Given a seed in which c is already gone (it is not: a seed is not trusted to say so)
    a, b, c, _ = setup(ledger, store, clock)
    ours = expire([c], [a, b], min_count=2)
    seed = ledger.load(ORDERS_3, ours.snapshot_keys)
    gone = seed.snapshots[c.sort_key].model_copy(update={"status": SnapshotStatus.DELETED})
    stale = LineageState(head=seed.head, snapshots={**seed.snapshots, c.sort_key: gone})
    # When our expiry runs on it
    result = execute(ledger, ours, clock.now(), snapshot_keys=ours.snapshot_keys, seed=stale)
    # Then it loaded, and c is expired
    assert [e.snapshot_id for e in result.events if e.type == "SnapshotExpiring"] == [c.snapshot_id]


class CountingLoads:
    def __init__(self, inner, loads) -> None:
        self._inner, self._loads = inner, loads

    def load(self, lineage, snapshot_keys=()):
        self._loads.append(lineage)
        return self._inner.load(lineage, snapshot_keys)

    def __getattr__(self, name):
        return getattr(self._inner, name)
