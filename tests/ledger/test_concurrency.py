"""Many writers on one lineage, or on one stream's log, on the real engine (DynamoDB Local)."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from snapledger.adapters.dynamodb_stream_log import DynamoStreamLog
from snapledger.core.stream import StreamState, evolve_stream_all
from snapledger.models.events import SnapshotRegistered
from snapledger.models.ledger import RECENT_COMMANDS_KEPT, LineageId, SnapshotStatus
from snapledger.models.policy import RetentionPolicy
from snapledger.services.policies import reset_policy, set_policy
from snapledger.services.registration import Outcome, register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY
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
        return register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(register, deliveries))  # any exception fails the test

    # Then the writers did not fight: one writer per lineage in the process (the combiner),
    # so at most one lost race per success (in fact none: nothing else writes the lineage)
    successes = [r for r in results if r.outcome is not Outcome.DUPLICATE]
    lost = sum(r.lost_races or 0 for r in results)
    assert lost / len(successes) <= 1
    assert lost == 0
    # and each snapshot was recorded exactly once
    lineage = LineageId(stream="orders", partition=3)
    outcomes = [r.outcome for r in results]
    # (a redelivery combined into the same transaction as its twin is the duplicate)
    assert len(outcomes) - outcomes.count(Outcome.DUPLICATE) == SNAPSHOTS
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


def test_eight_operators_changing_one_streams_policy_at_once(dynamodb_local, clock):
    # Given one stream and eight operators, each making ten changes (sets and resets)
    ledger = create_ledger(local_client(dynamodb_local.endpoint_url))
    streams = DynamoStreamLog(ledger.table_name, client=ledger.client)
    default = RetentionPolicy()
    rng = random.Random(13)
    plan = [
        (f"op{op}-{n}", rng.choice([None, *range(1, 8)]))  # None: a reset
        for op in range(8)
        for n in range(10)
    ]

    def change(step):
        request_id, min_count = step
        if min_count is None:
            return reset_policy(
                streams, "orders", default=default, clock=clock, request_id=request_id
            )
        return set_policy(
            streams,
            "orders",
            {"min_count": min_count},
            default=default,
            clock=clock,
            request_id=request_id,
        )

    # When they all run at once
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(change, plan))  # any exception fails the test

    # Then the stream's log is 1..N in order with no gap, one event per change made
    events = all_pages(lambda c: streams.list_events("orders", cursor=c, limit=16))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    # (a write whose answer was lost and which DynamoDB then refused to repeat is answered
    # "duplicate": this request was applied, once, by the earlier attempt)
    applied = [
        step
        for step, result in zip(plan, results, strict=True)
        if result.outcome in ("set", "reset", "duplicate")
    ]
    assert sorted(e.command_id for e in events) == sorted(
        f"policy-{'set' if min_count else 'reset'}:{request_id}"
        for request_id, min_count in applied
    )
    # and replaying the log gives exactly what is stored: HEAD and the policy GC reads
    assert evolve_stream_all(StreamState.empty("orders"), events) == streams.load("orders")
    # and the changes HEAD remembers, delivered again, append nothing
    remembered = {e.command_id.partition(":")[2] for e in events[-RECENT_COMMANDS_KEPT:]}
    recent = [step for step in applied if step[0] in remembered]
    with ThreadPoolExecutor(8) as pool:
        redelivered = list(pool.map(change, recent))
    assert {r.outcome for r in redelivered} == {"duplicate"}
    assert all_pages(lambda c: streams.list_events("orders", cursor=c, limit=16)) == events
