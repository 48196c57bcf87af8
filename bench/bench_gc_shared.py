"""GC of snapshots that share files: requests per deleted snapshot against the floor, at 10,
100 and 1,000 snapshots of one lineage (issue 45's ``gc_shared_requests_vs_floor``).

DynamoDB Local (the real engine) and a ``file://`` store, in this process. A lineage of N
incremental ``opaque`` snapshots: snapshot n has one file of its own and references two
shared files, ``shared/s{n}`` (new with it) and ``shared/s{n-1}`` (its predecessor's), so
each shared file is used by two snapshots. Two days on, GC under min count 1 deletes N-1
snapshots: their own folders (a file and the manifest each) and the N-2 shared files the
kept latest does not use.

- ``s3_requests`` ÷ ``s3_floor``: listings (per page) and batch deletes (per 1,000 keys) the
  run made ÷ S3's floor for the same work: one listing per 1,000 keys of the lineage, one
  batch delete per 1,000 keys deleted.
- ``ddb_requests`` ÷ ``ddb_floor``: GC's DynamoDB requests ÷ what any run reads (a second
  run with nothing left to delete, counted the same way: the HEAD shards, the lineage's
  records, the policies and jobs) plus the EXPIRING and the DELETED transactions of the
  two-phase protocol (100 items each) and the one consistent GetItem of the HEAD that
  sharing needs (``services/gc_references.py``).
- ``gc_shared_requests_vs_floor``: both together ÷ both floors.
"""

from __future__ import annotations

import math
import threading
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.bench_gc import CountingStore, bench_deps, bench_world, transaction_items
from snapledger.adapters.dynamodb_log import MAX_TRANSACTION_ITEMS
from snapledger.clock import ManualClock
from snapledger.gc_settings import GcConfig
from snapledger.ids import new_ulid
from snapledger.layout import lineage_snapshots_prefix
from snapledger.ports import MAX_KEYS_PER_REQUEST
from snapledger.services.gc import run_gc
from snapledger.services.registration import register_manifests
from snapledger.strategies.catalog import NATIVE_ONLY

SIZES = (10, 100, 1000)
STREAM, PARTITION = "shared-bench", 0
KEEP_ONE = GcConfig(default_min_count=1, default_min_age_hours=1)
BATCH = 50  # manifests registered a call


def populate(ledger: Any, store: Any, clock: Any, count: int) -> int:
    """``count`` incremental snapshots of the lineage, registered: the lineage's keys."""
    from tests.support import write_snapshot  # the same writer the tests use

    lineage = lineage_snapshots_prefix(STREAM, PARTITION)
    keys = []
    for n in range(count):
        shared = f"shared/s{n:05d}"
        store.put(lineage + shared, b"s" * 100)
        references = [{"path": shared, "size": 100}]
        if n:
            references.append({"path": f"shared/s{n - 1:05d}", "size": 100})
        keys.append(
            write_snapshot(
                store,
                STREAM,
                PARTITION,
                100 * (n + 1),
                snapshot_id=new_ulid(),
                files={"own.sst": b"o" * 50},
                format="opaque",
                references=references,
            )
        )
    for start in range(0, count, BATCH):
        answers = register_manifests(
            keys[start : start + BATCH],
            ledger=ledger,
            store=store,
            clock=clock,
            layouts=NATIVE_ONLY,
        )
        assert all(a.outcome.value == "became_latest" for a in answers), answers
    return sum(1 for _ in store.list(lineage))


def gc_twice(
    client: Any, deps: Any, config: GcConfig, after_first: Callable[[], None] = lambda: None
) -> tuple[Any, dict[str, int], dict[str, int]]:
    """A GC run that deletes, ``after_first``, then one with nothing left (what any run
    reads): the first's report and each run's DynamoDB requests by call."""
    ddb: Counter[str] = Counter()
    lock = threading.Lock()

    def counted(model: Any, **_: Any) -> None:
        with lock:
            ddb.update([model.name])

    client.meta.events.register("before-call.dynamodb", counted)
    try:
        report = run_gc(deps, config=config)
        first = dict(ddb)
        after_first()
        ddb.clear()
        steady = run_gc(deps, config=config)
    finally:
        client.meta.events.unregister("before-call.dynamodb", counted)
    assert steady.counts()["snapshots_deleted"] == 0
    assert report.complete and report.counts()["errors"] == 0, report.errors
    return report, first, dict(ddb)


def shared_ddb_floor(steady: dict[str, int], due: int) -> int:
    """What any run reads (the steady run's requests), the two transactions of the two-phase
    protocol for the ``due`` snapshots it deletes of one lineage (one kept), and the HEAD's
    consistent read sharing needs."""
    return (
        sum(steady.values())
        + 2 * math.ceil(transaction_items(due, kept=1) / MAX_TRANSACTION_ITEMS)
        + 1
    )


def measure(count: int) -> dict[str, object]:
    with bench_world(f"bench-gc-shared-{count}") as (client, ledger, files, _):
        clock = ManualClock(datetime.now(UTC))
        lineage_keys = populate(ledger, files, clock, count)
        clock.advance(timedelta(days=2))
        store = CountingStore(files)
        deps = bench_deps(ledger, store, clock, client)
        report, gc_ddb, steady_ddb = gc_twice(client, deps, KEEP_ONE)
        counts = report.counts()
        deleted = counts["snapshots_deleted"]
        assert deleted == count - 1, counts
        left = sum(1 for _ in files.list(lineage_snapshots_prefix(STREAM, PARTITION)))
    deleted_keys = lineage_keys - left
    assert deleted_keys == 2 * (count - 1) + (count - 2), (lineage_keys, left)
    s3 = store.requests.get("list", 0) + store.requests.get("delete", 0)
    s3_floor = math.ceil(lineage_keys / MAX_KEYS_PER_REQUEST) + math.ceil(
        deleted_keys / MAX_KEYS_PER_REQUEST
    )
    ddb_total = sum(gc_ddb.values())
    ddb_floor = shared_ddb_floor(steady_ddb, count - 1)
    return {
        "snapshots": count,
        "deleted": deleted,
        "keys_deleted": deleted_keys,
        "s3_requests": s3,
        "s3_floor": s3_floor,
        "ddb_requests": ddb_total,
        "ddb_floor": ddb_floor,
        "ddb_by_call": gc_ddb,
        "ddb_steady_by_call": steady_ddb,
        "s3_requests_per_deleted": s3 / deleted,
        "ddb_requests_per_deleted": ddb_total / deleted,
        "gc_shared_requests_vs_floor": round((s3 + ddb_total) / (s3_floor + ddb_floor), 3),
    }


def run(config: Any) -> dict[str, object]:
    return {str(count): measure(count) for count in SIZES}
