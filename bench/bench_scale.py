"""Scale benchmark: GC's object-store requests against the batch floor, by lineage count.

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

import math
from datetime import timedelta
from typing import Any

from bench.bench_gc import CountingStore, bench_deps, bench_world, populate
from snapledger.ports import MAX_KEYS_PER_REQUEST
from snapledger.services.gc import run_gc

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


def run(config: Any) -> dict[str, object]:
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
