"""Why expiry reads HEAD first: a commit landing between the reads of one load.

BatchGetItem reads its items in no set order. If the witnesses (the newest min_count)
are read before a concurrent expiry commits and HEAD after it, a decision sees a stale
witness and a current version, and its commit would succeed. ``HeadFirstLedger`` reads
HEAD before anything else, so that interleaving makes the commit fail and re-decide.
"""

from __future__ import annotations

from datetime import timedelta

from snapledger.core.state import LineageState
from snapledger.models.commands import ExpireSnapshots, ExpiryTarget
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.models.policy import RetentionPolicy
from snapledger.services.commands import execute
from snapledger.services.gc_deps import HeadFirstLedger
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


def test_a_stale_witness_read_would_break_the_promise(ledger, store, clock):
    # Given the worst read order and no HEAD-first read
    a, b, c, interloper = setup(ledger, store, clock)
    ours = expire([c], [a, b], min_count=2)
    # When our expiry decides on b as a witness that is in fact gone
    execute(ItemsThenHead(ledger, interloper), ours, clock.now(), snapshot_keys=ours.snapshot_keys)
    # Then c went too: only one REGISTERED snapshot is left under min_count 2 (the hazard)
    left = [r.lsn for r in records(ledger).values() if r.status is SnapshotStatus.REGISTERED]
    assert left == [40]


def test_reading_head_first_makes_the_commit_re_decide_on_fresh_state(ledger, store, clock):
    # Given the same interleaving, read through HeadFirstLedger
    a, b, c, interloper = setup(ledger, store, clock)
    ours = expire([c], [a, b], min_count=2)
    result = execute(
        HeadFirstLedger(ItemsThenHead(ledger, interloper)),
        ours,
        clock.now(),
        snapshot_keys=ours.snapshot_keys,
    )
    # Then the first commit lost the race, the retry saw b gone, and c is kept
    assert result.attempts == 2 and result.events == []
    left = sorted(r.lsn for r in records(ledger).values() if r.status is SnapshotStatus.REGISTERED)
    assert left == [20, 40]
