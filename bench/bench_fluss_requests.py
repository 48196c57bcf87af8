"""The requests snapledger makes of a Fluss table's KV snapshots, against their floors (issue
46): registration at 10, 100, 1,000 and 5,000 files a snapshot (10,000 make a
_METADATA of 1.6 MB, over its 1 MiB bound: refused), GC at 10, 100 and 1,000
snapshots of a bucket.

DynamoDB Local (the real engine), a ``file://`` store in Fluss's layout (the one the real
cluster writes: tests/fluss/test_fluss_cluster.py) and ZooKeeper's nodes in memory, every
request counted as S3 and ZooKeeper would see it (a listing per 1,000 keys, a batch delete per
1,000 keys; a ZooKeeper listing is one ``getChildren``).

- Registration (``register_*``): a snapshot of ``files`` shared SSTs and Fluss's 3 private
  files, registered from its ``_METADATA``. ``s3_requests`` ÷ ``s3_floor``: the floor is one
  GET of ``_METADATA`` and, to see every file's size, one listing per 1,000 keys of its folder
  and of the bucket's ``shared/``.
- GC (``gc_*``): a bucket of ``snapshots`` snapshots, each with its 3 private files and two
  shared SSTs (its own, new, and its predecessor's), all listed in ZooKeeper, registered,
  then two days old; GC under min count 1 expires all but the latest. Floors: S3, one listing
  per 1,000 keys of the bucket, one batch delete per 1,000 keys deleted, and heal's check of
  the latest (one GET of its ``_METADATA``, one listing of its folder, one of ``shared/``);
  ZooKeeper, one listing and one drop per expired snapshot's node; DynamoDB, what a run with
  nothing to delete reads (counted the same way) plus the two transactions of the two-phase
  protocol and the HEAD's consistent read sharing needs (as bench_gc_shared). The sweep of
  unledgered streams' two ``list_dirs`` a run (bench_gc) are reported apart.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.bench_gc import CountingStore, bench_deps, bench_world
from bench.bench_gc_shared import gc_twice, shared_ddb_floor
from snapledger.clock import ManualClock
from snapledger.gc_settings import GcConfig
from snapledger.layouts.layout_map import layout_map
from snapledger.ports import MAX_KEYS_PER_REQUEST
from snapledger.services.registration import register_manifests
from snapledger.strategies.catalog import LayoutCatalog
from tests.fluss.fluss_tree import PREFIX, STREAM, TABLE_ID, FlussBucket, MemoryNodes

REGISTER_FILES = (10, 100, 1000, 5000)
GC_SNAPSHOTS = (10, 100, 1000)
PRIVATE = 3  # CURRENT, MANIFEST, OPTIONS: each snapshot's own files (fluss_tree)
KEEP_ONE = GcConfig(default_min_count=1, default_min_age_hours=1)
MAP = layout_map({PREFIX: {"layout": "fluss-kv", "stream": STREAM}})
BATCH = 50  # snapshots registered a call


class CountedNodes(MemoryNodes):
    """ZooKeeper's nodes, counting the requests the real adapter makes of ZooKeeper."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: Counter[str] = Counter()

    def listed(self, table_id: int, bucket: int) -> set[int]:
        self.requests["get_children"] += 1
        return super().listed(table_id, bucket)

    def drop(self, table_id: int, bucket: int, snapshot_id: int) -> bool:
        self.requests["delete"] += 1
        return super().drop(table_id, bucket, snapshot_id)


def s3_total(store: CountingStore) -> int:
    return sum(store.requests.values())


def measure_registration(files: int) -> dict[str, object]:
    with bench_world(f"bench-fluss-register-{files}") as (_, ledger, store, _clock):
        bucket = FlussBucket(store)
        ssts = [bucket.new_sst(b"s" * 64) for _ in range(files)]
        key = bucket.snapshot(0, ssts, log_offset=files)
        counted = CountingStore(store)
        (answer,) = register_manifests(
            [key], ledger=ledger, store=counted, clock=ManualClock(), layouts=LayoutCatalog(MAP)
        )
        assert answer.outcome.value == "became_latest", answer
    floor = (
        1
        + math.ceil((PRIVATE + 1) / MAX_KEYS_PER_REQUEST)
        + math.ceil(files / MAX_KEYS_PER_REQUEST)
    )
    requests = s3_total(counted)
    return {
        "files": files + PRIVATE,
        "s3_requests": requests,
        "s3_by_call": dict(counted.requests),
        "s3_floor": floor,
        "register_requests_vs_floor": round(requests / floor, 3),
    }


def populate(ledger: Any, store: Any, clock: ManualClock, nodes: MemoryNodes, count: int) -> int:
    """``count`` snapshots of bucket 0, listed and registered: the bucket's keys."""
    bucket = FlussBucket(store)
    ssts = [bucket.new_sst(b"s" * 64) for _ in range(count)]
    keys = []
    for n in range(count):
        keys.append(bucket.snapshot(n, ssts[max(0, n - 1) : n + 1], log_offset=100 * (n + 1)))
        nodes.add(TABLE_ID, 0, n)
    for start in range(0, count, BATCH):
        answers = register_manifests(
            keys[start : start + BATCH],
            ledger=ledger,
            store=store,
            clock=clock,
            layouts=LayoutCatalog(MAP),
        )
        assert all(a.outcome.value == "became_latest" for a in answers), answers
    return sum(1 for _ in store.list(bucket.root))


def measure_gc(count: int) -> dict[str, object]:
    with bench_world(f"bench-fluss-gc-{count}") as (client, ledger, files, _):
        clock = ManualClock(datetime.now(UTC))
        nodes = CountedNodes()
        bucket_keys = populate(ledger, files, clock, nodes, count)
        clock.advance(timedelta(days=2))
        from tests.gc.support import age_objects

        age_objects(files, f"{PREFIX}/0/", clock.now() - timedelta(days=2))
        store = CountingStore(files)
        layouts = LayoutCatalog(MAP, {"fluss-kv": {"nodes": nodes}})
        deps = replace(bench_deps(ledger, store, clock, client), layouts=layouts)
        first: dict[str, dict[str, int]] = {}

        def capture() -> None:
            first.update(s3=dict(store.requests), zk=dict(nodes.requests))

        report, gc_ddb, steady_ddb = gc_twice(client, deps, KEEP_ONE, capture)
        gc_s3, gc_zk = first["s3"], first["zk"]
        counts = report.counts()
        assert counts["snapshots_deleted"] == count - 1, counts
        assert nodes.listed(TABLE_ID, 0) == {count - 1}
        left = sum(1 for _ in files.list(f"{PREFIX}/0/"))
    deleted_keys = bucket_keys - left
    # Each expired snapshot's 3 private files and _METADATA, and the SSTs only they used.
    assert deleted_keys == (PRIVATE + 1) * (count - 1) + (count - 2), (bucket_keys, left)
    sweep = gc_s3.pop("list_dirs", 0)  # the unledgered-stream sweep's, once a run (bench_gc)
    s3 = sum(gc_s3.values())
    s3_floor = (
        math.ceil(bucket_keys / MAX_KEYS_PER_REQUEST)
        + math.ceil(deleted_keys / MAX_KEYS_PER_REQUEST)
        + 3  # heal: the latest's _METADATA, its folder, shared/
    )
    zk, zk_floor = sum(gc_zk.values()), 1 + (count - 1)
    ddb_total = sum(gc_ddb.values())
    ddb_floor = shared_ddb_floor(steady_ddb, count - 1)
    return {
        "snapshots": count,
        "keys_deleted": deleted_keys,
        "s3_requests": s3,
        "s3_by_call": gc_s3,
        "s3_floor": s3_floor,
        "sweep_list_dirs": sweep,
        "zookeeper_requests": zk,
        "zookeeper_floor": zk_floor,
        "ddb_requests": ddb_total,
        "ddb_by_call": gc_ddb,
        "ddb_floor": ddb_floor,
        "s3_vs_floor": round(s3 / s3_floor, 3),
        "zookeeper_vs_floor": round(zk / zk_floor, 3),
        "ddb_vs_floor": round(ddb_total / ddb_floor, 3),
        "gc_requests_vs_floor": round((s3 + zk + ddb_total) / (s3_floor + zk_floor + ddb_floor), 3),
    }


def run(config: Any) -> dict[str, object]:
    figures: dict[str, object] = {
        f"register_{files}": measure_registration(files) for files in REGISTER_FILES
    }
    figures |= {f"gc_{count}": measure_gc(count) for count in GC_SNAPSHOTS}
    return figures
