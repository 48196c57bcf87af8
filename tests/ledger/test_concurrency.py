"""Many writers on one lineage, on the real engine (DynamoDB Local)."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from snapledger.models.events import SnapshotRegistered
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.services.registration import Outcome, register_manifest
from tests.support import create_ledger, local_client, write_snapshot

pytestmark = [pytest.mark.ddblocal, pytest.mark.slow]

THREADS = 16
SNAPSHOTS = 200


def all_pages(fetch):
    items, cursor = [], None
    while True:
        page = fetch(cursor)
        items += page.items
        cursor = page.cursor
        if cursor is None:
            return items


def test_sixteen_threads_registering_two_hundred_snapshots(dynamodb_local, store, clock):
    # Given 200 snapshots with random LSNs on one lineage, each delivered twice
    ledger = create_ledger(local_client(dynamodb_local.endpoint_url))
    rng = random.Random(7)
    lsns = [rng.randrange(0, 10**9) for _ in range(SNAPSHOTS)]
    keys = [write_snapshot(store, "orders", 3, lsn) for lsn in lsns]
    deliveries = keys + rng.sample(keys, 50)
    rng.shuffle(deliveries)

    # When 16 threads register them at once
    def register(key):
        return register_manifest(key, ledger=ledger, store=store, clock=clock)

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(register, deliveries))  # any exception fails the test

    # Then each snapshot was recorded exactly once
    lineage = LineageId(stream="orders", partition=3)
    outcomes = [r.outcome for r in results]
    # (a redelivery racing its twin may be answered as the registration itself: the
    # command did commit once, and both deliveries report success)
    assert SNAPSHOTS <= len(outcomes) - outcomes.count(Outcome.DUPLICATE) <= SNAPSHOTS + 50
    assert set(outcomes) <= {Outcome.BECAME_LATEST, Outcome.RECORDED, Outcome.DUPLICATE}
    snapshots = all_pages(lambda c: ledger.list_snapshots(lineage, cursor=c, limit=64))
    assert len(snapshots) == SNAPSHOTS
    assert all(s.status is SnapshotStatus.REGISTERED for s in snapshots)
    # and the pointer is at the highest LSN
    head = ledger.get_head(lineage, consistent=True)
    assert head.latest_lsn == max(lsns)
    # and the events are 1..N with no gap, one registration per snapshot
    events = all_pages(lambda c: ledger.list_events(lineage, cursor=c, limit=100))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert head.version == len(events)
    assert sum(isinstance(e, SnapshotRegistered) for e in events) == SNAPSHOTS
