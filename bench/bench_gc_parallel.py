"""GC throughput with lineages worked in parallel inside one invocation (``gc_workers``).

For each size (10 / 100 / 1,000 lineages), two identical streams are populated (6
snapshots of 3 objects per lineage, 3 due), then GC runs over one with ``gc_workers=1``
and over the other with ``gc_workers=4``, back to back (one stream's run each: a console
run over one stream, so nothing fans out). ``seconds_1`` / ``seconds_4`` is the speedup.

DynamoDB Local (a single Java process) and the ``file://`` store share this machine's
cores with the benchmark: the ratio says how much of GC's time parallel lineages hide
here, not what DynamoDB and S3 (remote, latency-bound, scaling with requests) give.
The run's request counts are identical in both modes (asserted): parallelism moves
requests in time, it does not add any.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from bench.bench_gc import CountingStore, bench_deps, bench_world, populate
from snapledger.gc_settings import GcConfig
from snapledger.services.gc import run_gc

SIZES = (10, 100, 1_000)
WORKERS = (1, 4)
SNAPSHOTS = 6  # 3 due per lineage under min_count 3
FILES = 2  # + the manifest: 3 objects per snapshot
TABLE = "bench-gc-parallel"


def run(config: Any) -> dict[str, object]:
    rows: list[dict[str, object]] = []
    with bench_world(TABLE) as (client, ledger, files, clock):
        for size in SIZES:
            for workers in WORKERS:
                populate(
                    ledger,
                    files,
                    clock,
                    stream=f"par{size}w{workers}",
                    lineages=size,
                    snapshots=SNAPSHOTS,
                    files=FILES,
                )
        clock.advance(timedelta(days=3))
        for size in SIZES:
            row: dict[str, object] = {"lineages": size}
            made: list[dict[str, int]] = []
            for workers in WORKERS:
                store = CountingStore(files)
                deps = bench_deps(ledger, store, clock, client)
                started = time.perf_counter()
                report = run_gc(
                    deps, stream=f"par{size}w{workers}", config=GcConfig(gc_workers=workers)
                )
                row[f"seconds_{workers}"] = time.perf_counter() - started
                counts = report.counts()
                assert report.complete and counts["errors"] == 0, report.errors
                assert counts["snapshots_deleted"] == size * (SNAPSHOTS - 3), counts
                made.append(dict(store.requests))
            assert made[0] == made[-1], made  # the same S3 requests either way
            row["s3_requests"] = sum(made[0].values())
            row["speedup"] = float(row["seconds_1"]) / float(row[f"seconds_{WORKERS[-1]}"])  # type: ignore[arg-type]
            rows.append(row)
    print("   lineages  workers=1 (s)  workers=4 (s)  speedup  S3 requests (each)")
    for row in rows:
        print(
            f"   {row['lineages']:>8}  {row['seconds_1']:>13.2f}  {row['seconds_4']:>13.2f}"
            f"  {row['speedup']:>7.2f}  {row['s3_requests']:>8}"
        )
    return {
        "gc_parallel_speedup_1000_lineages": rows[-1]["speedup"],
        "gc_parallel_table": rows,
    }
