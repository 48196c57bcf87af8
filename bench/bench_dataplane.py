"""Data-plane benchmark: restore vs full replay, compaction vs the I/O floor and DuckDB.

``run(config)`` generates a changelog of ``config.rows`` records over 4 partitions, then
times, in one local SparkSession (three interleaved rounds, after one untimed round: the
JVM's JIT compiles each job's code paths over its first runs, and a restore ran 4.5 s
cold, 2.9 s warm at 10M rows). Like the local runner's, the session keeps
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
value, lsn) before any time is reported. Every figure is wall and CPU seconds, the median
of the rounds with their min and max (``dataplane_timing.py``: the CPU seconds of the JVM
and of this Python driver for Spark, this process's for DuckDB); on a shared machine the
wall clock swings by half from run to run, so the ratios the bars read are CPU-second
ratios (``restore_speedup_vs_ideal_cpu``, ``compaction_vs_duckdb_cpu``,
``job_fixed_cost_vs_tiny_write_floor_cpu``), the wall ones kept as information.

Then, in the same session (``dataplane_cases.py``): a job's fixed cost (a restore of a few
thousand rows ÷ an empty Spark job, ÷ the least job that reads and writes its inputs)
and a scaling table of full replay against restore at production shapes, each output
checked equal first: 4x the rows (20M at the default 5M), 64 partitions of the same 4x
(312,500 rows each: the same CPU seconds per row as 4 partitions is the aim), one
partition holding 90% of the rows (``--dataplane-cases default``); ``all`` adds 10x the
rows and the memory-bound case (``dataplane_memory.py``: a new process with a 512 MiB
heap); ``none`` runs the comparison above only. ``restore_speedup_vs_ideal_cpu_20m`` is
the 20M case's. ``python -m bench.dataplane_run`` runs chosen cases alone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.dataplane_cases import (
    SEGMENTS_PER_PARTITION,
    Case,
    fingerprint,
    fixed_cost,
    restore_figures,
    run_case,
)
from bench.dataplane_timing import interleaved, jvm_cpu_clock, own_cpu_clock, ratio

PARTITIONS = (0, 1, 2, 3)
ROUNDS = 3
WARM_UP_ROUNDS = 1  # run, not timed


def session() -> Any:
    """The bench's local SparkSession, configured as the local runner's."""
    from pyspark.sql import SparkSession

    from snapledger.local.spark_runner import LOCAL_SESSION_CONF

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
    return spark


def run(config: Any) -> dict[str, object]:
    workdir = Path(config.workdir).resolve() / "dataplane"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    spark = session()
    cases = getattr(config, "dataplane_cases", "default")
    try:
        figures = _run(spark, workdir, int(config.rows))
        if cases == "none":
            return figures
        figures.update(fixed_cost(spark, workdir.parent / "dataplane-tiny"))
        scaling = [_main_case_row(figures)]
        rows = int(config.rows)
        for case, rounds in cases_for(cases, rows):
            print(f"   case {case.name} ...", flush=True)
            scaling.append(
                run_case(
                    spark,
                    workdir.parent / "dataplane-case",
                    case,
                    rounds=rounds,
                    split_min_rows=skew_split_min_rows(case),
                )
            )
            if case == Case(rows=4 * rows):  # 20M at the default 5M
                label = f"{4 * rows / 1e6:g}m".replace(".", "_")
                for name in ("restore_speedup_vs_ideal_cpu", "restore_speedup_vs_ideal"):
                    figures[f"{name}_{label}"] = scaling[-1][name]
    finally:
        spark.stop()
    if cases == "all":
        figures["memory_bound"] = _memory_bound(workdir.parent / "dataplane-memory")
    figures["scaling"] = scaling
    print(scaling_table(scaling), flush=True)
    return figures


def cases_for(which: str, rows: int) -> list[tuple[Case, int]]:
    """The scaling cases beyond the main comparison of ``rows`` (5M: 20M, 20M over 64
    partitions, 5M with 90% in one; and with ``all``, 50M), each with its timed rounds.
    The skewed one also times its restore split (``SKEW_SPLIT_MIN_ROWS``)."""
    cases = [
        (Case(rows=4 * rows), ROUNDS),
        (Case(rows=4 * rows, partitions=64), ROUNDS),
        (Case(rows=rows, skew=0.9), ROUNDS),
    ]
    if which == "all":
        cases.append((Case(rows=10 * rows), 1))
    return cases


def skew_split_min_rows(case: Case) -> int | None:
    """For a skewed case, a ``splitMinRows`` that splits its hot partition here (its
    restore reads about a fifth of its rows; the default, 1M, would need a 25M-row case
    on 2 cores); None for the others."""
    return max(1, case.rows // 100) if case.skew else None


def _main_case_row(figures: dict[str, object]) -> dict[str, object]:
    """The main comparison's row of the scaling table."""
    rows = int(figures["rows"])  # type: ignore[call-overload]
    return {
        "case": Case(rows=rows).name,
        "rows": rows,
        "partitions": len(PARTITIONS),
        "skew": None,
        # the split columns are the scaling cases' alone: the main comparison has none
        **{n: figures[n] for n in ("state_rows", *_TABLE_KEYS[2:]) if n in figures},
    }


_TABLE = (  # the scaling table's columns: header, key
    ("case", "case"),
    ("state rows", "state_rows"),
    ("replay cpu s", "full_replay_cpu_s"),
    ("restore cpu s", "restore_cpu_s"),
    ("ideal", "restore_speedup_ideal"),
    ("vs ideal cpu", "restore_speedup_vs_ideal_cpu"),
    ("cpu us/row read", "restore_cpu_us_per_row_read"),
    ("replay s", "full_replay_s"),
    ("restore s", "restore_s"),
    ("vs ideal wall", "restore_speedup_vs_ideal"),
    ("split cpu s", "restore_split_cpu_s"),
    ("split s", "restore_split_s"),
)
_TABLE_KEYS = tuple(key for _, key in _TABLE)


def scaling_table(rows: list[dict[str, object]]) -> str:
    """The scaling cases as a text table, one line each (CPU and wall seconds: medians)."""
    header = tuple(title for title, _ in _TABLE)
    lines = [header, *(tuple(str(row.get(k, "")) for k in _TABLE_KEYS) for row in rows)]
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
    jvm = jvm_cpu_clock(spark)
    # Rounds interleave the measurements, so a machine that slows down or speeds up in the
    # middle of the run shifts every figure of a round alike, not one figure only.
    timed = interleaved(
        {
            "full": (job("restore", "full-replay", target), jvm),
            "restore": (job("restore", "restore-90", target, bases), jvm),
            "unverified": (
                _unverified(job("restore", "restore-90-unverified", target, bases)),
                jvm,
            ),
            "bootstrap": (job("bootstrap", "bootstrap-all", target), jvm),
            "floor": (lambda: _io_floor(spark, segment_files, workdir / "floor"), jvm),
            "duckdb": (lambda: _duckdb_compaction(workdir, target), own_cpu_clock),
        },
        rounds=ROUNDS,
        warm_up=WARM_UP_ROUNDS,
    )
    full_t, full = timed["full"]
    restore_t, restored = timed["restore"]
    unverified_t, unverified = timed["unverified"]
    bootstrap_t, boot = timed["bootstrap"]
    floor_t, floor_rows = timed["floor"]
    duckdb_t, duckdb_out = timed["duckdb"]

    # Outputs must agree before any time means anything.
    expected = fingerprint(workdir, full)
    for name, result in (("restore", restored), ("unverified", unverified), ("bootstrap", boot)):
        got = fingerprint(workdir, result)
        assert got == expected, f"{name} differs from the full replay: {got} != {expected}"
    assert duckdb_out == expected, (
        f"DuckDB differs from the full replay: {duckdb_out} != {expected}"
    )
    assert floor_rows == rows, f"the I/O floor copied {floor_rows} rows, not {rows}"

    return {
        "rows": rows,
        "partitions": len(PARTITIONS),
        "state_rows": expected[0],
        "generate_s": round(generate_s, 2),
        **restore_figures(full_t, restore_t, _rows_read(full), _rows_read(restored)),
        "restore_stage_seconds": restored.stage_seconds,
        **unverified_t.figures("restore_unverified"),
        "restore_verify_overhead": ratio(restore_t.wall.median, unverified_t.wall.median),
        "restore_verify_overhead_cpu": ratio(restore_t.cpu.median, unverified_t.cpu.median),
        **bootstrap_t.figures("bootstrap"),
        **floor_t.figures("io_floor"),
        **duckdb_t.figures("duckdb"),
        "compaction_vs_io_floor": ratio(bootstrap_t.wall.median, floor_t.wall.median),
        "compaction_vs_io_floor_cpu": ratio(bootstrap_t.cpu.median, floor_t.cpu.median),
        "compaction_vs_duckdb": ratio(bootstrap_t.wall.median, duckdb_t.wall.median),
        "compaction_vs_duckdb_cpu": ratio(bootstrap_t.cpu.median, duckdb_t.cpu.median),
    }


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
