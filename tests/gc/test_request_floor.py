"""GC's S3 requests at the batch floor, counted as S3 bills them (botocore hooks on moto S3).

N expired snapshots of K objects cost ⌈N·K/1000⌉ DeleteObjects, whatever the lineages
they belong to, plus one listing per 1,000 keys of each lineage's snapshot prefix (and the
unledgered-stream sweep's two: the streams, and the one stream's partitions), plus one GET
of ``latest.json`` per lineage with something to delete (what it names is never deleted);
a lineage with nothing to delete reads no pointer.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import boto3
import pytest
from moto import mock_aws

from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.object_store_s3 import S3ObjectStore
from snapledger.clock import ManualClock
from snapledger.gc_settings import GcConfig
from snapledger.ports import MAX_KEYS_PER_REQUEST
from snapledger.services.gc import run_gc
from tests.gc.support import assert_ledger_and_store_agree, gc_deps, register, statuses
from tests.support import create_ledger

BUCKET = "snapledger-gc-floor"
CONFIG = GcConfig()  # min_count 3, min_age 24h


@dataclass
class World:
    ledger: DynamoLedger
    store: S3ObjectStore
    clock: ManualClock
    requests: Counter[str] = field(default_factory=Counter)  # S3 operation -> requests


@pytest.fixture
def world() -> Iterator[World]:
    with mock_aws():
        ledger = create_ledger(boto3.client("dynamodb", region_name="us-east-1"))
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        found = World(ledger, S3ObjectStore(BUCKET, client=client), ManualClock())

        counting = threading.Lock()  # GC's lineage threads call S3 at once

        def count(model: Any, **_: Any) -> None:
            with counting:
                found.requests[model.name] += 1

        client.meta.events.register("before-call.s3", count)
        yield found


def populate(world: World, *, partitions: int, snapshots: int, files: int) -> None:
    for partition in range(partitions):
        for n in range(snapshots):
            register(
                world.ledger,
                world.store,
                world.clock,
                10 * (n + 1),
                partition=partition,
                files=files,
            )
    world.clock.advance(timedelta(days=2))
    world.requests.clear()


@pytest.mark.parametrize(
    ("partitions", "snapshots", "files"),
    [
        (2, 14, 49),  # 2 lineages x 11 due x 50 objects: 1,100 keys in 2 DeleteObjects
        (1, 40, 29),  # 1 lineage x 37 due x 30 objects: 1,110 keys, a listing of 2 pages
    ],
)
def test_gc_deletes_n_snapshots_of_k_objects_at_the_batch_floor(
    world, partitions, snapshots, files
):
    # Given lineages with more expired objects than one DeleteObjects takes
    populate(world, partitions=partitions, snapshots=snapshots, files=files)
    objects = files + 1
    due = partitions * (snapshots - CONFIG.default_min_count)
    # When GC runs
    report = run_gc(gc_deps(world.ledger, world.store, world.clock), config=CONFIG)
    # Then every due snapshot is gone, in ⌈N·K/1000⌉ DeleteObjects across them all
    assert report.complete and report.counts()["snapshots_deleted"] == due
    assert world.requests["DeleteObjects"] == math.ceil(due * objects / MAX_KEYS_PER_REQUEST)
    # and one listing per 1,000 keys of each lineage, plus the unledgered sweep's two
    per_lineage = math.ceil(snapshots * objects / MAX_KEYS_PER_REQUEST)
    assert world.requests["ListObjectsV2"] == partitions * per_lineage + 2
    # and one GET of each lineage's latest.json (no generation.json: no member is due)
    assert world.requests["GetObject"] == partitions
    assert set(world.requests) == {"DeleteObjects", "ListObjectsV2", "GetObject"}
    assert report.counts()["pointers_read"] == partitions
    for partition in range(partitions):
        assert list(statuses(world.ledger, partition=partition).values()).count("DELETED") == (
            snapshots - CONFIG.default_min_count
        )
        assert_ledger_and_store_agree(world.ledger, world.store, partition=partition)


class PageCounter:
    """The file store, counting listing pages (each one ListObjectsV2)."""

    def __init__(self, inner: FileObjectStore) -> None:
        self.inner, self.pages, self._lock = inner, 0, threading.Lock()

    def list_page(self, prefix, **kw):
        with self._lock:
            self.pages += 1
        return self.inner.list_page(prefix, **kw)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_live_snapshot_costs_at_most_one_listing_however_big(ledger, store, clock):
    # Given two due snapshots and, after them, live ones of 2,500 files each
    for lsn in (10, 20):
        register(ledger, store, clock, lsn, files=2)
    for lsn in (30, 40):
        register(ledger, store, clock, lsn, files=2_500)
    register(ledger, store, clock, 50, files=1)
    clock.advance(timedelta(days=2))
    counting = PageCounter(store)
    # When GC runs
    run_gc(gc_deps(ledger, counting, clock), config=CONFIG)
    # Then the due ones are gone, and the listing skipped over each live snapshot a page
    # ended in: 3 pages (the due keys and 994 of 30, 1,000 of 40, the last one), not 6
    assert statuses(ledger) == {
        10: "DELETED",
        20: "DELETED",
        30: "REGISTERED",
        40: "REGISTERED",
        50: "REGISTERED",
    }
    assert counting.pages == 3
    assert_ledger_and_store_agree(ledger, store)


def test_a_lineage_with_nothing_to_delete_reads_no_pointer(world):
    # Given lineages whose snapshots are all kept (min_count 3, three each)
    populate(world, partitions=2, snapshots=3, files=1)
    # When GC runs
    report = run_gc(gc_deps(world.ledger, world.store, world.clock), config=CONFIG)
    # Then it lists them and reads nothing else: no pointer, no delete
    assert report.complete and report.counts()["snapshots_deleted"] == 0
    assert set(world.requests) == {"ListObjectsV2"}
    assert report.counts()["pointers_read"] == 0
