"""Two GC runs at once on DynamoDB Local (the real engine), with holds arriving meanwhile."""

from __future__ import annotations

import random
import threading
from datetime import timedelta

import pytest

from snapledger.errors import InvalidRequestError
from snapledger.gc_settings import GcConfig
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.services.gc import run_gc
from snapledger.services.holds import hold_snapshot
from tests.gc.support import assert_ledger_and_store_agree, gc_deps, records, register
from tests.support import create_ledger, local_client

LINEAGES = 6
LSNS = list(range(10, 130, 10))  # 12 snapshots per lineage
CONFIG = GcConfig(page_size=2)  # min_count 3: small pages make the runs interleave more


@pytest.mark.ddblocal
@pytest.mark.slow
def test_two_concurrent_runs_and_racing_holds_keep_every_promise(dynamodb_local, store, clock):
    # Given six lineages of twelve old snapshots on the real engine
    ledger = create_ledger(local_client(dynamodb_local.endpoint_url))
    for partition in range(LINEAGES):
        for lsn in LSNS:
            register(ledger, store, clock, lsn, partition=partition)
    clock.advance(timedelta(days=3))
    rng = random.Random(7)
    wanted = {p: rng.sample(LSNS[:9], 3) for p in range(LINEAGES)}  # among the deletable
    granted: list[tuple[int, int]] = []
    refused: list[tuple[int, int]] = []
    errors: list[BaseException] = []
    start = threading.Barrier(3)

    def gc_run() -> None:
        try:
            start.wait()
            report = run_gc(gc_deps(ledger, store, clock), config=CONFIG)
            assert report.complete, report.errors
        except BaseException as exc:
            errors.append(exc)

    def holder() -> None:
        try:
            start.wait()
            for partition, lsns in wanted.items():
                lineage = LineageId(stream="orders", partition=partition)
                for lsn in lsns:
                    snapshot_id = records(ledger, partition=partition)[lsn].snapshot_id
                    try:
                        hold_snapshot(ledger, lineage, snapshot_id, clock=clock, by="race")
                        granted.append((partition, lsn))
                    except InvalidRequestError:
                        refused.append((partition, lsn))  # already EXPIRING: too late
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=gc_run) for _ in range(2)]
    threads.append(threading.Thread(target=holder))
    # When both GC runs and the holder go at once
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    # And one more run finishes what a lost race left
    run_gc(gc_deps(ledger, store, clock), config=CONFIG)
    # Then every promise is kept
    for partition in range(LINEAGES):
        by_lsn = records(ledger, partition=partition)
        for lsn in LSNS[-3:]:  # the newest three (the latest among them)
            assert by_lsn[lsn].status is SnapshotStatus.REGISTERED
        for p, lsn in granted:
            if p == partition:
                assert by_lsn[lsn].status is SnapshotStatus.REGISTERED, (p, lsn)
        for lsn in LSNS[:9]:
            held = (partition, lsn) in granted
            expected = SnapshotStatus.REGISTERED if held else SnapshotStatus.DELETED
            assert by_lsn[lsn].status is expected, (partition, lsn)
        assert_ledger_and_store_agree(ledger, store, partition=partition)
    assert len(granted) + len(refused) == 3 * LINEAGES
