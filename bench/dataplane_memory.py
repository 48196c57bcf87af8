"""The memory-bound case, in a process of its own: ``python -m bench.dataplane_memory``.

A local session's heap is fixed when its JVM starts, so this case runs in a new process
whose session gets a deliberately small heap (``--heap``, 512m by default: Spark's own
floor is 450 MiB), then restores and bootstraps a state several times larger than the
memory Spark may use for sorting in it. Both outputs are checked against DuckDB's
compaction of the same changelog (an independent oracle); it prints one JSON line: the
times, the state's size on disk against the heap, and the bytes Spark spilled to disk.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from bench.dataplane_cases import (
    SEGMENTS_PER_PARTITION,
    Case,
    fingerprint,
    generate,
    spilled_bytes,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dataplane_memory")
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--heap", default="512m")
    parser.add_argument("--workdir", type=Path, default=Path(".bench/work/memory-bound"))
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.rows, args.heap, args.workdir.resolve())))
    return 0


def measure(rows: int, heap: str, workdir: Path) -> dict[str, object]:
    from pyspark.sql import SparkSession

    from jobs.args import JobArgs
    from jobs.job import run_job
    from snapledger.local.spark_runner import LOCAL_SESSION_CONF

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("snapledger-bench-memory-bound")
        .config("spark.driver.memory", heap)
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in LOCAL_SESSION_CONF.items():  # as the local runner's session
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)
        generated = generate(spark, workdir, Case(rows=rows))
        root = workdir.as_uri()

        def job(job_id: str, kind: str, **extra: object) -> object:
            return run_job(
                spark,
                JobArgs(
                    kind=kind,  # type: ignore[arg-type]
                    root=root,
                    stream=generated.stream,
                    partitions=generated.partitions,
                    job_id=job_id,
                    **extra,  # type: ignore[arg-type]
                ),
            )

        at_90 = {p: s[SEGMENTS_PER_PARTITION - 2][1] for p, s in generated.segments.items()}
        snapshot = job("snap90", "bootstrap", targets=at_90)
        bases = {p.partition: p.prefix for p in snapshot.partitions}  # type: ignore[attr-defined]
        state_bytes = sum(f.stat().st_size for f in (workdir / "snapshots").rglob("*.parquet"))
        before = spilled_bytes(spark)
        started = time.perf_counter()
        restored = job("restore-90", "restore", bases=bases)
        restore_s = time.perf_counter() - started
        restore_spilled = spilled_bytes(spark) - before
        before = spilled_bytes(spark)
        started = time.perf_counter()
        booted = job("bootstrap-all", "bootstrap")
        bootstrap_s = time.perf_counter() - started
        bootstrap_spilled = spilled_bytes(spark) - before
        heap_bytes = int(spark._jvm.java.lang.Runtime.getRuntime().maxMemory())  # type: ignore[union-attr]
    finally:
        spark.stop()
    oracle = duckdb_oracle(workdir, generated.stream, generated.partitions)
    for name, result in (("restore", restored), ("bootstrap", booted)):
        got = fingerprint(workdir, result)
        assert got == oracle, f"memory-bound {name} differs from DuckDB: {got} != {oracle}"
    return {
        "rows": rows,
        "heap": heap,
        "heap_bytes": heap_bytes,
        "state_rows": oracle[0],
        "snapshot_bytes_on_disk": state_bytes,
        "restore_s": round(restore_s, 2),
        "restore_spilled_bytes": restore_spilled,
        "bootstrap_s": round(bootstrap_s, 2),
        "bootstrap_spilled_bytes": bootstrap_spilled,
    }


def duckdb_oracle(workdir: Path, stream: str, partitions: tuple[int, ...]) -> tuple[int, int]:
    """Count and hash of the last put per key of the whole changelog, by DuckDB."""
    import duckdb

    sources = " UNION ALL ".join(
        f"SELECT {p}::BIGINT AS partition, key, value, lsn, op "
        f"FROM read_parquet('{workdir}/changelog/{stream}/{p}/*.parquet')"
        for p in partitions
    )
    with duckdb.connect() as con:
        row = con.execute(
            f"""
            SELECT count(*), sum(hash(partition, key, last.value, last.lsn)) FROM (
                SELECT partition, key, arg_max(struct_pack(value, lsn, op), lsn) AS last
                FROM ({sources}) GROUP BY partition, key
            ) WHERE last.op = 'put'
            """
        ).fetchone()
    return int(row[0]), int(row[1])


if __name__ == "__main__":
    sys.exit(main())
