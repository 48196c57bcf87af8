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

GC's planning reads: ``gc_reads_per_lineage_long_history`` is the DynamoDB requests
``plan_lineage`` makes for a lineage of 3 live records behind 5,000 DELETED ones (target
<= 2), with the table by DELETED history (10 / 1,000 / 5,000) beside what reading every
record (the read before the live index) costs.

Runs against DynamoDB Local (the real engine) and a ``file://`` store counting the requests
S3 would bill (``bench.bench_gc.CountingStore``: a listing per 1,000 keys, a DeleteObjects
per 1,000 keys). For each size (10 / 100 / 1,000 lineages, each its own stream) every
lineage holds ``SNAPSHOTS`` snapshots of ``FILES`` data files + manifest, all past
min_age, under the default policy (min_count 3): ``SNAPSHOTS - 3`` are due per lineage.
GC runs over that stream.

The floor comes from S3's batch limits, not from what the code does: the due keys, all
lineages together, in ⌈keys/1000⌉ DeleteObjects, plus ⌈keys/1000⌉ listings per lineage
(at least one: a lineage's objects cannot be found without listing it).
``gc_s3_requests_vs_floor`` is the worst ratio of the sizes (target ≤ 1.5). Request
counts are exact (no timing), so one run of each size is the measurement.
"""

from __future__ import annotations

import contextlib
import math
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from bench.bench_gc import CountingStore, bench_deps, bench_world, populate
from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.table_definition import create_table_request
from snapledger.errors import NotFoundError
from snapledger.local.clients import local_dynamodb_client
from snapledger.local.dynamodb_local import DynamoDBLocal
from snapledger.models.ledger import LineageId, SnapshotStatus
from snapledger.ports import MAX_KEYS_PER_REQUEST
from snapledger.services import queries
from snapledger.services.gc import run_gc

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
    """S3's floor for deleting the due keys: batch limits only."""
    keys_per_lineage = due_per_lineage * objects
    deletes = math.ceil(lineages * keys_per_lineage / MAX_KEYS_PER_REQUEST)
    listings = lineages * max(1, math.ceil(keys_per_lineage / MAX_KEYS_PER_REQUEST))
    return deletes + listings


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
            report = run_gc(bench_deps(ledger, store, clock, client), stream=f"scale{size}")
            due = size * (SNAPSHOTS - MIN_COUNT)
            counts = report.counts()
            assert report.complete and counts["errors"] == 0, report.errors
            assert counts["snapshots_deleted"] == due, counts
            requests = sum(store.requests.values())
            best = floor(size, SNAPSHOTS - MIN_COUNT, FILES + 1)
            rows.append(
                {
                    "lineages": size,
                    "due_snapshots": due,
                    "requests": dict(store.requests),
                    "floor": best,
                    "ratio": requests / best,
                }
            )
    print("   lineages  due snapshots  S3 requests (list/list_dirs/delete)  floor  ratio")
    for row in rows:
        made: dict[str, int] = row["requests"]  # type: ignore[assignment]
        split = "/".join(str(made.get(k, 0)) for k in ("list", "list_dirs", "delete"))
        total = sum(made.values())
        print(
            f"   {row['lineages']:>8}  {row['due_snapshots']:>13}  "
            f"{total:>8} ({split}){'':>14}  {row['floor']:>5}  {row['ratio']:.3f}"
        )
    return {
        "gc_s3_requests_vs_floor": max(float(row["ratio"]) for row in rows),  # type: ignore[arg-type]
        "gc_s3_requests_vs_floor_target": 1.5,
        "gc_s3_table": rows,
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
    return {**_lookups(config), **_gc_requests(config), **_gc_reads(config)}
