"""Scale benchmarks (issue 14): lookups as a lineage's history grows; GC against S3's batch floor.

Lookups.

Runs against DynamoDB Local (the real engine) in this process. For each history length
(10 / 1,000 / 10,000 records: old snapshots DELETED with some REJECTED, then EXPIRING and
the live REGISTERED ones, as ``tests.support.long_history`` writes them), the DynamoDB
requests of each lookup, counted through botocore's ``before-call`` hook; the floor is 1.

- ``by_id_requests``: the most requests any by-id lookup made at 10,000 records (the
  oldest DELETED record, the latest, an unknown id).
- ``as_of_time_requests``: the same for as of a time (at the oldest live snapshot's
  registry time, just before the latest's, and before anything live: not found).
- ``as_of_lsn_requests``, ``latest_requests``: the same for the other two lookups.
- ``requests_by_history``: the scaling table, also printed.

GC: its object-store requests against the batch floor, by lineage count.

Runs against DynamoDB Local (the real engine) and a ``file://`` store counting the requests
S3 would bill (``bench.bench_gc.CountingStore``: a listing per 1,000 keys, a DeleteObjects
per 1,000 keys). For each size (10 / 100 / 1,000 lineages, each its own stream) every
lineage holds ``SNAPSHOTS`` snapshots of ``FILES`` data files + manifest, all past
min_age, under the default policy (min_count 3): ``SNAPSHOTS - 3`` are due per lineage.
GC runs over that stream.

The floor comes from S3's batch limits, not from what the code does: the due keys, all
lineages together, in ⌈keys/1000⌉ DeleteObjects, plus ⌈keys/1000⌉ listings per lineage
(at least one: a lineage's objects cannot be found without listing it).
``gc_s3_requests_vs_floor`` is the worst ratio of the sizes (target ≤ 1.5). Its DynamoDB
requests the same way: ``gc_ddb_requests_vs_floor`` against DynamoDB's floor from its
limits (``bench.bench_gc.ddb_requests_floor``: per lineage a Query and the two
transactions of the two-phase protocol, plus a Query per HEAD shard; target ≤ 1.5).
Request counts are exact (no timing), so one run of each size is the measurement.

GC's planning reads: ``gc_reads_per_lineage_long_history`` is the DynamoDB requests
``plan_lineage`` makes for a lineage of 3 live records behind 5,000 DELETED ones (target
<= 2), with the table by DELETED history (10 / 1,000 / 5,000) beside what reading every
record (the read before the live index) costs.

Hot lineage: 16 writers on one lineage against 1.

Runs against DynamoDB Local and a ``file://`` store in this process. Each trial registers
``HOT_REGISTRATIONS`` fresh manifests on a fresh lineage, once by one thread and once by
16 threads at once (interleaved, 3 trials), through ``register_manifest`` as the local
runtime does (one writer per lineage in the process: ``services/lineage_combiner.py``).

- ``retries_per_success_16_writers``: lost races (``RegistrationResult.lost_races``, from
  ``run_command``) per registration, the worst trial (target ≤ 1).
- ``throughput_16_writers_vs_1``: registrations/s with 16 writers ÷ with 1, best of 3 each
  (target ≥ 1).
- ``unserialized_*``: the same 16 writers with no combiner (each its own), once, for the
  table: the retry storm the serialization removes.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.bench_gc import CountingStore, bench_deps, bench_world, ddb_requests_floor, populate
from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.table_definition import create_table_request
from snapledger.clock import SystemClock
from snapledger.errors import NotFoundError
from snapledger.local.clients import local_dynamodb_client
from snapledger.local.dynamodb_local import DynamoDBLocal
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.ports import MAX_KEYS_PER_REQUEST
from snapledger.services import queries
from snapledger.services.gc import run_gc
from snapledger.services.lineage_combiner import LineageCombiner
from snapledger.services.registration import COMBINER, Outcome, register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY

HISTORIES = (10, 1_000, 10_000)
START = datetime(2026, 1, 1, tzinfo=UTC)


def _lookups(config: Any) -> dict[str, object]:
    from tests.support import long_history, write_history  # the same writer the tests use

    table: dict[int, dict[str, int]] = {}
    with DynamoDBLocal() as engine:
        client = local_dynamodb_client(engine.endpoint_url)
        name = f"bench-scale-{uuid.uuid4().hex[:8]}"
        client.create_table(**create_table_request(name))
        ledger = DynamoLedger(name, client=client)
        for partition, length in enumerate(HISTORIES):
            records = write_history(ledger, "scale", partition, long_history(length), START)
            table[length] = _lookup_requests(
                ledger, LineageId(stream="scale", partition=partition), records
            )
    _print_table(table)
    longest = table[HISTORIES[-1]]
    return {
        "by_id_requests": longest["by_id"],
        "as_of_time_requests": longest["as_of_time"],
        "as_of_lsn_requests": longest["as_of_lsn"],
        "latest_requests": longest["latest"],
        "requests_floor": 1,
        "requests_by_history": {str(length): row for length, row in table.items()},
    }


def _lookup_requests(
    ledger: DynamoLedger, lineage: LineageId, records: list[Any]
) -> dict[str, int]:
    registered = [r for r in records if r.status is SnapshotStatus.REGISTERED]
    top, oldest_live = registered[-1], registered[0]
    deleted = next(r for r in records if r.status is SnapshotStatus.DELETED)
    second = timedelta(seconds=1)
    asked: dict[str, list[tuple[Callable[..., Any], Any]]] = {
        "by_id": [
            (queries.by_id, deleted.snapshot_id),
            (queries.by_id, top.snapshot_id),
            (queries.by_id, "01NOSUCHSNAPSHOT0000000000"),
        ],
        "as_of_lsn": [
            (queries.as_of_lsn, top.lsn + 1),
            (queries.as_of_lsn, oldest_live.lsn),
            (queries.as_of_lsn, oldest_live.lsn - 1),
        ],
        "as_of_time": [
            (queries.as_of_time, oldest_live.registered_at),
            (queries.as_of_time, top.registered_at - second),
            (queries.as_of_time, oldest_live.registered_at - second),
        ],
        "latest": [(queries.latest, None)],
    }
    return {
        lookup: max(_requests(ledger, lineage, call, arg) for call, arg in calls)
        for lookup, calls in asked.items()
    }


def _requests(ledger: DynamoLedger, lineage: LineageId, call: Callable[..., Any], arg: Any) -> int:
    def ask() -> None:
        # the not-found cases are asked on purpose: they cost the same
        with contextlib.suppress(NotFoundError):
            call(ledger, lineage) if arg is None else call(ledger, lineage, arg)

    return _counted(ledger, ask)


def _print_table(table: dict[int, dict[str, int]]) -> None:
    lookups = list(next(iter(table.values())))
    print("   requests per lookup by history length (floor 1)")
    print("   " + f"{'records':>8}" + "".join(f"{name:>12}" for name in lookups))
    for length, row in table.items():
        print("   " + f"{length:>8,}" + "".join(f"{row[name]:>12}" for name in lookups))


SIZES = (10, 100, 1_000)
SNAPSHOTS = 13  # 10 due per lineage
FILES = 2  # + the manifest: 3 objects per snapshot
MIN_COUNT = 3
TABLE = "bench-scale"


def floor(lineages: int, due_per_lineage: int, objects: int) -> int:
    """S3's floor for deleting the due keys: batch limits only, and one GET of each
    lineage's latest.json (GC never deletes what it names, so it must read it once)."""
    keys_per_lineage = due_per_lineage * objects
    deletes = math.ceil(lineages * keys_per_lineage / MAX_KEYS_PER_REQUEST)
    listings = lineages * max(1, math.ceil(keys_per_lineage / MAX_KEYS_PER_REQUEST))
    pointers = lineages
    return deletes + listings + pointers


def _gc_requests(config: Any) -> dict[str, object]:
    rows: list[dict[str, object]] = []
    with bench_world(TABLE) as (client, ledger, files, clock):
        for size in SIZES:
            populate(
                ledger,
                files,
                clock,
                stream=f"scale{size}",
                lineages=size,
                snapshots=SNAPSHOTS,
                files=FILES,
            )
        clock.advance(timedelta(days=3))
        for size in SIZES:
            store = CountingStore(files)
            ddb: list[str] = []

            def count(model: Any, ddb: list[str] = ddb, **_: Any) -> None:
                ddb.append(model.name)

            client.meta.events.register("before-call.dynamodb", count)
            try:
                report = run_gc(bench_deps(ledger, store, clock, client), stream=f"scale{size}")
            finally:
                client.meta.events.unregister("before-call.dynamodb", count)
            due = size * (SNAPSHOTS - MIN_COUNT)
            counts = report.counts()
            assert report.complete and counts["errors"] == 0, report.errors
            assert counts["snapshots_deleted"] == due, counts
            requests = sum(store.requests.values())
            best = floor(size, SNAPSHOTS - MIN_COUNT, FILES + 1)
            ddb_best = ddb_requests_floor(size, SNAPSHOTS - MIN_COUNT, kept=MIN_COUNT)
            rows.append(
                {
                    "lineages": size,
                    "due_snapshots": due,
                    "requests": dict(store.requests),
                    "floor": best,
                    "ratio": requests / best,
                    "ddb_requests": len(ddb),
                    "ddb_floor": ddb_best,
                    "ddb_ratio": len(ddb) / ddb_best,
                }
            )
    print(
        "   lineages  due snapshots  S3 requests (list/list_dirs/delete/get)  floor  ratio"
        "  DynamoDB  floor  ratio"
    )
    for row in rows:
        made: dict[str, int] = row["requests"]  # type: ignore[assignment]
        split = "/".join(str(made.get(k, 0)) for k in ("list", "list_dirs", "delete", "get"))
        total = sum(made.values())
        print(
            f"   {row['lineages']:>8}  {row['due_snapshots']:>13}  "
            f"{total:>8} ({split}){'':>14}  {row['floor']:>5}  {row['ratio']:.3f}"
            f"  {row['ddb_requests']:>8}  {row['ddb_floor']:>5}  {row['ddb_ratio']:.3f}"
        )
    return {
        "gc_s3_requests_vs_floor": max(float(row["ratio"]) for row in rows),  # type: ignore[arg-type]
        "gc_s3_requests_vs_floor_target": 1.5,
        "gc_ddb_requests_vs_floor": max(float(row["ddb_ratio"]) for row in rows),  # type: ignore[arg-type]
        "gc_ddb_requests_vs_floor_target": 1.5,
        "gc_s3_table": rows,
    }


HOT_WRITERS = 16
HOT_REGISTRATIONS = 96
HOT_TRIALS = 3


def _hot_lineage(config: Any) -> dict[str, object]:
    from tests.support import write_snapshot  # the same writer the tests use

    with DynamoDBLocal() as engine, tempfile.TemporaryDirectory() as tmp:
        client = local_dynamodb_client(engine.endpoint_url)
        name = f"bench-hot-{uuid.uuid4().hex[:8]}"
        client.create_table(**create_table_request(name))
        ledger = DynamoLedger(name, client=client)
        store = FileObjectStore(Path(tmp))
        partitions = iter(range(1_000_000))

        def trial(writers: int, *, serialized: bool = True) -> tuple[float, float]:
            """(registrations/s, lost races per registration) on a fresh lineage."""
            partition = next(partitions)
            keys = [
                write_snapshot(store, "hot", partition, lsn)
                for lsn in range(1, HOT_REGISTRATIONS + 1)
            ]

            def register(key: str) -> Any:
                # Unserialized: every writer its own combiner, i.e. none shared.
                combiner = COMBINER if serialized else LineageCombiner()
                return register_manifest(
                    key,
                    ledger=ledger,
                    store=store,
                    clock=SystemClock(),
                    combiner=combiner,
                    layouts=NATIVE_ONLY,
                )

            started = time.perf_counter()
            with ThreadPoolExecutor(writers) as pool:
                results = list(pool.map(register, keys))
            elapsed = time.perf_counter() - started
            assert all(r.outcome is not Outcome.DUPLICATE for r in results)
            lost = sum(r.lost_races or 0 for r in results)
            return HOT_REGISTRATIONS / elapsed, lost / HOT_REGISTRATIONS

        trial(1)  # warm-up: connections, JIT of the engine
        one, many = [], []
        for _ in range(HOT_TRIALS):  # interleaved
            one.append(trial(1))
            many.append(trial(HOT_WRITERS))
        unserialized = trial(HOT_WRITERS, serialized=False)
    best_one = max(rate for rate, _ in one)
    best_many = max(rate for rate, _ in many)
    retries = max(lost for _, lost in many)
    print(f"  {'writers':>22} {'registrations/s (best)':>24} {'lost races/success':>20}")
    print(f"  {'1':>22} {best_one:>24.1f} {max(lost for _, lost in one):>20.2f}")
    print(f"  {HOT_WRITERS:>22} {best_many:>24.1f} {retries:>20.2f}")
    print(
        f"  {f'{HOT_WRITERS}, unserialized':>22} {unserialized[0]:>24.1f} {unserialized[1]:>20.2f}"
    )
    return {
        "retries_per_success_16_writers": retries,
        "retries_per_success_target": 1,
        "throughput_16_writers_vs_1": best_many / best_one,
        "throughput_16_writers_vs_1_target": 1,
        "registrations_per_s_1_writer": best_one,
        "registrations_per_s_16_writers": best_many,
        "unserialized_retries_per_success_16_writers": unserialized[1],
        "unserialized_throughput_16_writers_vs_1": unserialized[0] / best_one,
    }


#: DELETED records behind a lineage's 3 live ones, for GC's planning reads.
DELETED_HISTORIES = (10, 1_000, 5_000)
LIVE = 3


def _gc_reads(config: Any) -> dict[str, object]:
    """GC's DynamoDB reads to plan one lineage, as its DELETED history grows: the live
    index now (``plan_lineage``), against reading every record (``iter_snapshots``, the
    read before). Request counts, exact."""
    from bench.bench_gc import CountingStore
    from snapledger.gc_settings import GcConfig
    from snapledger.models.policy import RetentionPolicy
    from snapledger.services.expiry import plan_lineage
    from tests.support import write_history

    rows: list[dict[str, int]] = []
    with bench_world(f"{TABLE}-reads") as (client, ledger, files, clock):
        deps = bench_deps(ledger, CountingStore(files), clock, client)
        for partition, deleted in enumerate(DELETED_HISTORIES):
            statuses = [SnapshotStatus.DELETED] * deleted + [SnapshotStatus.REGISTERED] * LIVE
            write_history(ledger, "reads", partition, statuses, START)
            lineage = LineageId(stream="reads", partition=partition)
            head = ledger.get_head(lineage, consistent=True)
            assert head is not None
            policy = RetentionPolicy()

            def plan(head: Any = head, policy: RetentionPolicy = policy) -> Any:
                return plan_lineage(deps, head, policy, GcConfig())

            def every(lineage: LineageId = lineage) -> Any:
                return list(queries.iter_snapshots(ledger, lineage))

            rows.append(
                {
                    "deleted": deleted,
                    "live": LIVE,
                    "reads": _counted(ledger, plan),
                    "reads_all_records": _counted(ledger, every),
                }
            )
    print(f"   GC planning reads per lineage ({LIVE} live records; target <= 2)")
    print(f"   {'deleted':>8}  {'live index':>10}  {'every record':>12}")
    for row in rows:
        print(f"   {row['deleted']:>8,}  {row['reads']:>10}  {row['reads_all_records']:>12}")
    return {
        "gc_reads_per_lineage_long_history": rows[-1]["reads"],
        "gc_reads_per_lineage_long_history_target": 2,
        "gc_reads_by_history": rows,
    }


def _counted(ledger: DynamoLedger, call: Callable[[], Any]) -> int:
    calls: list[str] = []

    def count(model: Any, **_: Any) -> None:
        calls.append(model.name)

    ledger.client.meta.events.register("before-call.dynamodb", count)
    try:
        call()
    finally:
        ledger.client.meta.events.unregister("before-call.dynamodb", count)
    return len(calls)


def run(config: Any) -> dict[str, object]:
    return {
        **_lookups(config),
        **_gc_requests(config),
        **_gc_reads(config),
        **_hot_lineage(config),
    }
