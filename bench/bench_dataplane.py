"""Data-plane benchmark: restore vs full replay, compaction vs the I/O floor and DuckDB.

``run(config)`` generates a changelog of ``config.rows`` records over 4 partitions, then
times, in one local SparkSession (best of three interleaved rounds, after one untimed
round: the JVM's JIT compiles each job's code paths over its first runs, and a restore
ran 4.5 s cold, 2.9 s warm at 10M rows). Like the local runner's, the session keeps
the classes Spark generates for 1000 queries' operators, so that the interleaved jobs do
not evict and compile again each other's:

- full replay: a restore job with no base, to the end of the log;
- restore: a restore job from a snapshot at 90% of each partition's log, to the end;
- restore, unverified: the same with the base's verification (footers, checksums) off:
  ``restore_verify_overhead`` = restore ÷ this (target ≤ 1.15);
- bootstrap: a bootstrap job over the whole log (validation, compaction, write, manifests);
- I/O floor: a plain Parquet read-and-write of the same changelog (same writer settings);
- DuckDB: the same compaction (last put per key, sorted) as one DuckDB query.

Every output is checked equal (row count and an order-independent hash of partition, key,
value, lsn) before any time is reported. Beside wall seconds it reports CPU seconds (the
JVM's for Spark, this process's for DuckDB, from /proc on Linux): on a shared machine the
wall clock swings by half from run to run, CPU time much less.

Then, in the same session (``dataplane_cases.py``): a job's fixed cost (a restore of a few
thousand rows ÷ an empty Spark job) and a scaling table of full replay against restore
at production shapes, each output checked equal first: 20M rows, 64 partitions, one
partition holding 90% of the rows (``--dataplane-cases default``); ``all`` adds 50M rows
and the memory-bound case (``dataplane_memory.py``: a new process with a 512 MiB heap);
``none`` runs the comparison above only. ``restore_speedup_vs_ideal_20m`` is the 20M
case's, best of three interleaved rounds like the figures above.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.dataplane_cases import SEGMENTS_PER_PARTITION, Case, fingerprint, fixed_cost, run_case

PARTITIONS = (0, 1, 2, 3)
ROUNDS = 3
WARM_UP_ROUNDS = 1  # run, not timed


def run(config: Any) -> dict[str, object]:
    from pyspark.sql import SparkSession

    from snapledger.local.spark_runner import LOCAL_SESSION_CONF

    workdir = Path(config.workdir).resolve() / "dataplane"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    builder = (
        SparkSession.builder.master("local[*]")
        .appName("snapledger-bench")
        .config("spark.driver.memory", "6g")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in LOCAL_SESSION_CONF.items():  # as the local runner's session
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    cases = getattr(config, "dataplane_cases", "default")
    try:
        figures = _run(spark, workdir, int(config.rows))
        if cases == "none":
            return figures
        figures.update(fixed_cost(spark, workdir.parent / "dataplane-tiny"))
        scaling = [_main_case_row(figures)]
        rows = int(config.rows)
        for case, rounds in _cases(cases, rows):
            print(f"   case {case.name} ...", flush=True)
            scaling.append(run_case(spark, workdir.parent / "dataplane-case", case, rounds=rounds))
            if case == Case(rows=4 * rows):  # 20M at the default 5M
                label = f"{4 * rows / 1e6:g}m".replace(".", "_")
                figures[f"restore_speedup_vs_ideal_{label}"] = scaling[-1][
                    "restore_speedup_vs_ideal"
                ]
    finally:
        spark.stop()
    if cases == "all":
        figures["memory_bound"] = _memory_bound(workdir.parent / "dataplane-memory")
    figures["scaling"] = scaling
    print(scaling_table(scaling), flush=True)
    return figures


def _cases(which: str, rows: int) -> list[tuple[Case, int]]:
    """The scaling cases beyond the main comparison of ``rows`` (5M: 20M, 5M over 64
    partitions, 5M with 90% in one; and with ``all``, 50M), each with its timed rounds."""
    cases = [
        (Case(rows=4 * rows), ROUNDS),
        (Case(rows=rows, partitions=64), ROUNDS),
        (Case(rows=rows, skew=0.9), ROUNDS),
    ]
    if which == "all":
        cases.append((Case(rows=10 * rows), 1))
    return cases


def _main_case_row(figures: dict[str, object]) -> dict[str, object]:
    """The main comparison's row of the scaling table."""
    rows = int(figures["rows"])  # type: ignore[call-overload]
    return {
        "case": Case(rows=rows).name,
        "rows": rows,
        "partitions": len(PARTITIONS),
        "skew": None,
        **{
            name: figures[name]
            for name in (
                "state_rows",
                "full_replay_s",
                "restore_s",
                "restore_speedup",
                "restore_speedup_ideal",
                "restore_speedup_vs_ideal",
            )
        },
    }


def scaling_table(rows: list[dict[str, object]]) -> str:
    """The scaling cases as a text table, one line each."""
    header = ("case", "state rows", "full replay s", "restore s", "speedup", "ideal", "vs ideal")
    keys = (
        "case",
        "state_rows",
        "full_replay_s",
        "restore_s",
        "restore_speedup",
        "restore_speedup_ideal",
        "restore_speedup_vs_ideal",
    )
    lines = [header, *(tuple(str(row[k]) for k in keys) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "   " + "  ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)) for line in lines
    )


def _memory_bound(workdir: Path) -> dict[str, object]:
    """The memory-bound case, run in a new process (its heap is fixed at JVM start)."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.dataplane_memory", "--workdir", str(workdir)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _run(spark: Any, workdir: Path, rows: int) -> dict[str, object]:
    from jobs.args import JobArgs
    from jobs.changelog_gen import generate_changelog
    from jobs.job import run_job

    root = workdir.as_uri()
    per_partition = rows // len(PARTITIONS)
    started = time.perf_counter()
    generated = generate_changelog(
        spark,
        root,
        "bench",
        partitions=len(PARTITIONS),
        rows=rows,
        rows_per_segment=-(-per_partition // SEGMENTS_PER_PARTITION),
    )
    generate_s = time.perf_counter() - started

    def job(kind: str, job_id: str, target: int | None, bases: dict[int, str] | None = None):
        args = JobArgs(
            kind=kind,  # type: ignore[arg-type]
            root=root,
            stream="bench",
            partitions=PARTITIONS,
            job_id=job_id,
            target_lsn=target,
            bases=bases or {},
        )
        return lambda: run_job(spark, args)

    last = {p: generated.last_lsn(p) for p in PARTITIONS}
    assert len(set(last.values())) == 1, "partitions of equal length keep one target"
    target = last[0]
    snapshot_lsn = generated.segments[0][SEGMENTS_PER_PARTITION - 2][1]  # end of segment 9
    snapshot = run_job(
        spark,
        JobArgs(kind="bootstrap", root=root, stream="bench", partitions=PARTITIONS,
                job_id="snap90", target_lsn=snapshot_lsn),
    )  # fmt: skip
    bases = {p.partition: p.prefix for p in snapshot.partitions}

    segment_files = sorted(str(p) for p in (workdir / "changelog" / "bench").glob("*/*.parquet"))
    jvm = _jvm_cpu_clock(spark)
    # Rounds interleave the measurements, so a machine that slows down or speeds up in the
    # middle of the run shifts every figure of a round alike, not one figure only.
    rounds = _rounds(
        {
            "full": (job("restore", "full-replay", target), jvm),
            "restore": (job("restore", "restore-90", target, bases), jvm),
            "unverified": (
                _unverified(job("restore", "restore-90-unverified", target, bases)),
                jvm,
            ),
            "bootstrap": (job("bootstrap", "bootstrap-all", target), jvm),
            "floor": (lambda: _io_floor(spark, segment_files, workdir / "floor"), jvm),
            "duckdb": (lambda: _duckdb_compaction(workdir, target), _own_cpu_clock),
        }
    )
    full_t, full = rounds["full"]
    restore_t, restored = rounds["restore"]
    unverified_t, unverified = rounds["unverified"]
    bootstrap_t, boot = rounds["bootstrap"]
    floor_t, floor_rows = rounds["floor"]
    duckdb_t, duckdb_out = rounds["duckdb"]

    # Outputs must agree before any time means anything.
    expected = fingerprint(workdir, full)
    for name, result in (("restore", restored), ("unverified", unverified), ("bootstrap", boot)):
        got = fingerprint(workdir, result)
        assert got == expected, f"{name} differs from the full replay: {got} != {expected}"
    assert duckdb_out == expected, (
        f"DuckDB differs from the full replay: {duckdb_out} != {expected}"
    )
    assert floor_rows == rows, f"the I/O floor copied {floor_rows} rows, not {rows}"

    rows_full = _rows_read(full)
    rows_restore = _rows_read(restored)
    ideal = rows_full / rows_restore
    speedup = full_t.wall_s / restore_t.wall_s
    return {
        "rows": rows,
        "partitions": len(PARTITIONS),
        "state_rows": expected[0],
        "generate_s": round(generate_s, 2),
        "full_replay_s": round(full_t.wall_s, 2),
        "restore_s": round(restore_t.wall_s, 2),
        "restore_speedup": round(speedup, 2),
        "rows_read_full_replay": rows_full,
        "rows_read_restore": rows_restore,
        "restore_speedup_ideal": round(ideal, 2),
        "restore_speedup_vs_ideal": round(speedup / ideal, 2),
        "restore_stage_seconds": restored.stage_seconds,
        "restore_unverified_s": round(unverified_t.wall_s, 2),
        "restore_verify_overhead": round(restore_t.wall_s / unverified_t.wall_s, 3),
        "bootstrap_s": round(bootstrap_t.wall_s, 2),
        "io_floor_s": round(floor_t.wall_s, 2),
        "compaction_vs_io_floor": round(bootstrap_t.wall_s / floor_t.wall_s, 2),
        "duckdb_s": round(duckdb_t.wall_s, 2),
        "compaction_vs_duckdb": round(bootstrap_t.wall_s / duckdb_t.wall_s, 2),
        "full_replay_cpu_s": round(full_t.cpu_s, 2),
        "restore_cpu_s": round(restore_t.cpu_s, 2),
        "restore_speedup_cpu": round(full_t.cpu_s / restore_t.cpu_s, 2),
        "bootstrap_cpu_s": round(bootstrap_t.cpu_s, 2),
        "io_floor_cpu_s": round(floor_t.cpu_s, 2),
        "compaction_vs_io_floor_cpu": round(bootstrap_t.cpu_s / floor_t.cpu_s, 2),
        "duckdb_cpu_s": round(duckdb_t.cpu_s, 2),
        "compaction_vs_duckdb_cpu": round(bootstrap_t.cpu_s / duckdb_t.cpu_s, 2),
    }


@dataclass(frozen=True)
class Timing:
    wall_s: float
    cpu_s: float


Measured = tuple[Callable[[], Any], Callable[[], float]]  # an action and its CPU clock


def _unverified(action: Callable[[], Any]) -> Callable[[], Any]:
    """``action`` (a restore) with its base verification (footers, checksums) switched
    off: the baseline of ``restore_verify_overhead``."""

    class NoChecksums:
        def __init__(self, *_: Any) -> None: ...
        def check(self) -> None: ...
        def cancel(self) -> None: ...

    def run() -> Any:
        import jobs.job as job_module
        from jobs import snapshots

        saved = (job_module.ChecksumVerification, snapshots.check_kv_schema)
        job_module.ChecksumVerification = NoChecksums  # type: ignore[assignment,misc]
        snapshots.check_kv_schema = lambda *_: None  # type: ignore[assignment]
        try:
            return action()
        finally:
            job_module.ChecksumVerification, snapshots.check_kv_schema = saved

    return run


def _rounds(actions: dict[str, Measured]) -> dict[str, tuple[Timing, Any]]:
    """Each action's best wall and CPU time over ROUNDS rounds that run every action once
    (on a shared machine the minimum is the signal), after WARM_UP_ROUNDS untimed ones;
    and its last result."""
    best = {name: (float("inf"), float("inf")) for name in actions}
    results: dict[str, Any] = {}
    for _ in range(WARM_UP_ROUNDS):
        for action, _ in actions.values():
            action()
    for _ in range(ROUNDS):
        for name, (action, cpu_clock) in actions.items():
            started, cpu_started = time.perf_counter(), cpu_clock()
            results[name] = action()
            wall, cpu = time.perf_counter() - started, cpu_clock() - cpu_started
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    return {name: (Timing(*best[name]), results[name]) for name in actions}


def _jvm_cpu_clock(spark: Any) -> Callable[[], float]:
    """CPU seconds used so far by the JVM that runs Spark (local mode: driver and tasks)."""
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    ticks = os.sysconf("SC_CLK_TCK")

    def clock() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime

    return clock


def _own_cpu_clock() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _rows_read(result: Any) -> int:
    return sum(p.rows_read for p in result.partitions)


def _io_floor(spark: Any, files: list[str], out: Path) -> int:
    """Read every changelog file and write it back as Parquet: the cost of touching the data."""
    shutil.rmtree(out, ignore_errors=True)
    spark.read.parquet(*files).write.option("parquet.enable.dictionary", "false").parquet(str(out))
    return int(spark.read.parquet(str(out)).count())


def _duckdb_compaction(workdir: Path, target: int) -> tuple[int, int]:
    """The same compaction in DuckDB: last record per key, puts kept, sorted, to Parquet."""
    import duckdb

    out = workdir / "duckdb"
    shutil.rmtree(out, ignore_errors=True)
    sources = " UNION ALL ".join(
        f"SELECT {p} AS partition, key, value, lsn, op FROM "
        f"read_parquet('{workdir}/changelog/bench/{p}/*.parquet') WHERE lsn <= {target}"
        for p in PARTITIONS
    )
    with duckdb.connect() as con:
        con.execute(
            f"""
            COPY (
                SELECT partition, key, last.value AS value, last.lsn AS lsn
                FROM (
                    SELECT partition, key, arg_max(struct_pack(value, lsn, op), lsn) AS last
                    FROM ({sources}) GROUP BY partition, key
                )
                WHERE last.op = 'put'
                ORDER BY partition, key
            ) TO '{out}' (FORMAT parquet, PARTITION_BY (partition))
            """
        )
        row = con.execute(
            f"SELECT count(*), sum(hash(partition, key, value, lsn)) "
            f"FROM read_parquet('{out}/*/*.parquet', hive_partitioning = true)"
        ).fetchone()
    return int(row[0]), int(row[1])
