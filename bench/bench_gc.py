"""GC benchmark: object-store requests per expired snapshot, and GC time per 1,000 lineages.

Runs against DynamoDB Local (the real engine) and a ``file://`` store in this process.
``LINEAGES`` lineages of ``SNAPSHOTS`` snapshots each (3 data files + manifest), all
older than min_age, under the default policy (min_count 3): 17 expire per lineage.

- ``s3_requests_per_expired_snapshot``: object-store requests the run made (listings
  counted per page, batch deletes per 1,000 keys, through a counting wrapper), divided by
  the snapshots it expired; ``..._floor`` is S3's batch floor for the same keys: one
  listing per 1,000 keys of each lineage plus one batch delete per 1,000 keys of all
  lineages together. ``sweep_requests_per_lineage`` is the unledgered-stream sweep's
  ``list_dirs`` (two a run), reported apart.
- ``gc_seconds_per_1000_lineages``: the full run (stuck jobs, every lineage, orphans),
  scaled from ``LINEAGES`` lineages to 1,000, beside the time of merely reading the same
  lineages (HEAD pages through the index + each lineage's snapshot records) in the same
  run: ``gc_vs_query_floor``. ``gc_steady_...`` is a second run with nothing to delete.
- ``ddb_requests_vs_floor``: GC's DynamoDB requests ÷ DynamoDB's floor for the same
  work, from its limits (100 items per transaction, 1 MB per Query page): per lineage one
  Query of its live records, one transaction to mark its due snapshots EXPIRING and one
  to mark them DELETED (each ⌈(2 * due + HEAD + witnesses) / 100⌉), plus one Query per
  HEAD shard (150 HEADs are well under 1 MB). The two-phase protocol is the floor's, not the
  code's: EXPIRING must be durable before any object is deleted.
- ``write_floor_vs_query_floor``: the least ``gc_vs_query_floor`` any GC could have on this
  engine, from the same run: the read floor plus, per lineage, two bare TransactWriteItems
  of as many ledger-sized items as GC's two transactions hold (``bare_transaction_ms``,
  best of 3 rounds of 30, copies of a bench lineage's items under fresh keys), over the
  read floor. Sequential, as the read floor is.
"""

from __future__ import annotations

import builtins
import math
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from snapledger.adapters.dynamodb_codec import HEAD_KIND_SHARDS, lineage_pk
from snapledger.adapters.dynamodb_jobs import DynamoJobStore
from snapledger.adapters.dynamodb_ledger import DynamoLedger
from snapledger.adapters.dynamodb_lineages import DynamoLineageIndex
from snapledger.adapters.dynamodb_log import MAX_TRANSACTION_ITEMS
from snapledger.adapters.dynamodb_policies import DynamoPolicyStore
from snapledger.adapters.object_store_file import FileObjectStore
from snapledger.adapters.table_definition import create_table_request
from snapledger.clock import ManualClock
from snapledger.local.clients import local_dynamodb_client
from snapledger.local.dynamodb_local import DynamoDBLocal
from snapledger.models.ledger import LineageId
from snapledger.ports import MAX_KEYS_PER_REQUEST, DeleteResult, ObjectInfo, ObjectStore
from snapledger.services.gc import run_gc
from snapledger.services.gc_deps import GcDeps
from snapledger.services.queries import iter_snapshots
from snapledger.services.registration import register_manifest
from snapledger.strategies.catalog import NATIVE_ONLY

LINEAGES = 150
SNAPSHOTS = 20
FILES = 3
TABLE = "bench-gc"


class CountingStore:
    """The file store, counting the requests S3 would see for each call."""

    def __init__(self, inner: FileObjectStore) -> None:
        self.inner = inner
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()  # GC works lineages on several threads

    def _count(self, kind: str, requests: int) -> None:
        with self._lock:
            self.requests[kind] += requests

    @property
    def uri(self) -> str:
        return self.inner.uri

    def list(self, prefix: str, *, start_after: str | None = None) -> Iterator[ObjectInfo]:
        found = builtins.list(self.inner.list(prefix, start_after=start_after))
        self._count("list", max(1, math.ceil(len(found) / MAX_KEYS_PER_REQUEST)))
        return iter(found)

    def list_page(
        self, prefix: str, *, start_after: str | None = None, limit: int = MAX_KEYS_PER_REQUEST
    ) -> builtins.list[ObjectInfo]:
        self._count("list", 1)
        return self.inner.list_page(prefix, start_after=start_after, limit=limit)

    def list_dirs(self, prefix: str) -> Iterator[str]:
        found = builtins.list(self.inner.list_dirs(prefix))
        self._count("list_dirs", max(1, math.ceil(len(found) / MAX_KEYS_PER_REQUEST)))
        return iter(found)

    def delete_many(self, keys: Sequence[str]) -> DeleteResult:
        self._count("delete", math.ceil(len(keys) / MAX_KEYS_PER_REQUEST))
        return self.inner.delete_many(keys)

    def get(self, key: str, **kwargs: Any) -> bytes:  # GC reads each lineage's latest.json
        self._count("get", 1)
        return self.inner.get(key, **kwargs)

    def get_versioned(self, key: str, **kwargs: Any) -> Any:
        self._count("get", 1)
        return self.inner.get_versioned(key, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def populate(
    ledger: DynamoLedger,
    store: ObjectStore,
    clock: ManualClock,
    *,
    stream: str = "bench",
    lineages: int = LINEAGES,
    snapshots: int = SNAPSHOTS,
    files: int = FILES,
) -> None:
    """``lineages`` partitions of ``stream``, each with ``snapshots`` registered snapshots."""
    from tests.support import kv_parquet, write_snapshot  # the same writer the tests use

    def lineage(partition: int) -> None:
        for n in range(snapshots):
            data = {f"part-{i:05d}.parquet": kv_parquet(f"{i}") for i in range(files)}
            key = write_snapshot(store, stream, partition, 100 * (n + 1), files=data)
            register_manifest(key, ledger=ledger, store=store, clock=clock, layouts=NATIVE_ONLY)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lineage, range(lineages)))


def bench_deps(ledger: DynamoLedger, store: ObjectStore, clock: ManualClock, client: Any) -> GcDeps:
    """GC's dependencies on the bench table (``ledger``'s) and ``store``."""
    table = ledger.table_name
    return GcDeps(
        ledger=ledger,
        store=store,
        clock=clock,
        lineages=DynamoLineageIndex(table, client=client),
        policies=DynamoPolicyStore(table, client=client),
        jobs=DynamoJobStore(table, client=client),
        layouts=NATIVE_ONLY,
    )


def transaction_items(due: int, *, kept: int) -> int:
    """The items of each of GC's two transactions on a lineage: a SNAP update and an event
    per due snapshot, the HEAD, a ConditionCheck per kept snapshot its decision read."""
    return 2 * due + 1 + kept


def _bare_transaction_seconds(
    client: Any, lineage: LineageId, items: int, *, rounds: int = 3, each: int = 30
) -> float:
    """The best mean time of a bare TransactWriteItems of ``items`` ledger-sized Puts
    (copies of ``lineage``'s items, its SNAP records, events and HEAD alike, under fresh
    keys), ``rounds`` rounds of ``each``."""
    pages = client.get_paginator("query").paginate(
        TableName=TABLE,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": lineage_pk(lineage)}},
    )
    partition = [item for page in pages for item in page["Items"]]
    sample = [partition[n * len(partition) // items] for n in range(items)]
    best = math.inf
    for round_ in range(rounds):
        started = time.perf_counter()
        for n in range(each):
            scratch = f"BENCH#bare#{round_}#{n}"
            client.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": TABLE,
                            "Item": {
                                **sample[i],
                                "pk": {"S": scratch},
                                "sk": {"S": f"{i:04d}"},
                            },
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    }
                    for i in range(items)
                ]
            )
        best = min(best, (time.perf_counter() - started) / each)
    return best


def ddb_requests_floor(lineages: int, due: int, *, kept: int) -> int:
    """DynamoDB's floor for GC over ``lineages`` lineages of ``due`` due snapshots each.

    From DynamoDB's limits (100 items per transaction, 1 MB per Query page): per lineage
    one Query of its live records and the two transactions of the two-phase protocol,
    each marking the due snapshots (a SNAP update and an event each), the HEAD and a
    ConditionCheck of each kept snapshot the decision read; plus one Query per HEAD
    shard (a page of HEADs is well under 1 MB at these sizes).
    """
    transaction = math.ceil(transaction_items(due, kept=kept) / MAX_TRANSACTION_ITEMS)
    return lineages * (1 + 2 * transaction) + HEAD_KIND_SHARDS


def _query_all(deps: GcDeps) -> int:
    """Read what GC reads, and nothing else: every HEAD, every lineage's records."""
    seen = 0
    after: LineageId | None = None
    while True:
        page = deps.lineages.list_heads(after=after, limit=100)
        for head in page.heads:
            seen += sum(1 for _ in iter_snapshots(deps.ledger, head.lineage))
            after = head.lineage
        if not page.more or not page.heads:
            return seen


@contextmanager
def bench_world(table: str) -> Iterator[tuple[Any, DynamoLedger, FileObjectStore, ManualClock]]:
    """DynamoDB Local with a fresh ``table``, a ``file://`` store in a temp dir, a clock."""
    with DynamoDBLocal() as engine, tempfile.TemporaryDirectory() as tmp:
        client = local_dynamodb_client(engine.endpoint_url)
        client.create_table(**create_table_request(table))
        yield client, DynamoLedger(table, client=client), FileObjectStore(Path(tmp)), ManualClock()


def run(config: Any) -> dict[str, object]:
    with bench_world(TABLE) as (client, ledger, files, clock):
        populate(ledger, files, clock)
        clock.advance(timedelta(days=3))
        store = CountingStore(files)
        deps = bench_deps(ledger, store, clock, client)
        ddb: Counter[str] = Counter()
        counting = threading.Lock()

        def count(model: Any, **_: Any) -> None:
            with counting:
                ddb.update([model.name])

        client.meta.events.register("before-call.dynamodb", count)

        started = time.perf_counter()
        records = _query_all(deps)
        query_s = time.perf_counter() - started
        assert records == LINEAGES * SNAPSHOTS, records
        ddb.clear()

        started = time.perf_counter()
        report = run_gc(deps)
        gc_s = time.perf_counter() - started
        counts = report.counts()
        expired = counts["snapshots_deleted"]
        assert report.complete and counts["errors"] == 0, report.errors
        assert expired == LINEAGES * (SNAPSHOTS - 3), counts
        gc_requests = dict(store.requests)
        gc_ddb = sum(ddb.values())

        started = time.perf_counter()
        steady = run_gc(deps)
        steady_s = time.perf_counter() - started
        assert steady.counts()["snapshots_deleted"] == 0
        client.meta.events.unregister("before-call.dynamodb", count)
        lineage = deps.lineages.list_heads(limit=1).heads[0].lineage
        due_items = transaction_items(SNAPSHOTS - 3, kept=3)
        bare_write_s = _bare_transaction_seconds(client, lineage, due_items)

    objects = FILES + 1
    lineage_keys = (SNAPSHOTS - 3) * objects
    floor_requests = math.ceil(LINEAGES * lineage_keys / MAX_KEYS_PER_REQUEST) + LINEAGES * max(
        1, math.ceil(lineage_keys / MAX_KEYS_PER_REQUEST)
    )
    apply_requests = gc_requests.get("list", 0) + gc_requests.get("delete", 0)
    ddb_floor = ddb_requests_floor(LINEAGES, SNAPSHOTS - 3, kept=3)
    scale = 1000 / LINEAGES
    return {
        "lineages_measured": LINEAGES,
        "snapshots_per_lineage": SNAPSHOTS,
        "objects_per_snapshot": objects,
        "snapshots_expired": expired,
        "s3_requests_per_expired_snapshot": apply_requests / expired,
        "s3_requests_per_expired_snapshot_floor": floor_requests / expired,
        "sweep_requests_per_lineage": gc_requests.get("list_dirs", 0) / LINEAGES,
        "ddb_requests_per_lineage": gc_ddb / LINEAGES,
        "ddb_requests_vs_floor": gc_ddb / ddb_floor,
        "gc_seconds_per_1000_lineages": gc_s * scale,
        "query_seconds_per_1000_lineages": query_s * scale,
        "gc_vs_query_floor": gc_s / query_s,
        "bare_transaction_ms": bare_write_s * 1000,
        "query_ms_per_lineage": query_s / LINEAGES * 1000,
        "write_floor_vs_query_floor": (query_s + 2 * LINEAGES * bare_write_s) / query_s,
        "gc_steady_seconds_per_1000_lineages": steady_s * scale,
        "gc_steady_vs_query_floor": steady_s / query_s,
    }
