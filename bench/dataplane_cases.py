"""The data plane at production shapes: sizes, partition counts, skew, a job's fixed cost.

Each *case* generates a changelog (``rows`` records over ``partitions``, or with one hot
partition holding ``skew`` of the rows), writes a snapshot at 90% of every partition's log
(a bootstrap), then times, interleaved, a full replay (a restore with no base, to the end
of the log) and a restore from that snapshot to the same end, in wall and CPU seconds
(``dataplane_timing.py``: median of the rounds, with min and max). Both outputs are
checked equal (row count and an order-independent hash) before any time is reported.
The speed-up the bar reads is ``restore_speedup_vs_ideal_cpu``: full replay ÷ restore in
CPU seconds, ÷ the ideal (the rows a full replay reads ÷ the rows the restore reads).

``fixed_cost`` times a restore of a few thousand rows against an empty Spark job in the
same session: what a job costs when it has nearly nothing to do, and in which steps;
and against the least a Spark job that reads those inputs and writes them costs (one
read of every input file, one plain Parquet write).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.dataplane_timing import Timing, interleaved, jvm_cpu_clock, ratio

SEGMENTS_PER_PARTITION = 10  # so that 90% of each log is exactly 9 segments


@dataclass(frozen=True)
class Case:
    """One shape of input: ``rows`` records over ``partitions``; with ``skew``, partition
    0 holds that share of the rows and the others split the rest evenly."""

    rows: int
    partitions: int = 4
    skew: float | None = None

    @property
    def name(self) -> str:
        shape = f"{_millions(self.rows)} x {self.partitions}"
        return shape + (f", {self.skew:.0%} in one" if self.skew else "")

    def rows_of(self) -> list[int]:
        """Rows per partition, 0..partitions-1."""
        if self.skew is None:
            return [self.rows // self.partitions] * self.partitions
        hot = int(self.rows * self.skew)
        cold = (self.rows - hot) // (self.partitions - 1)
        return [hot] + [cold] * (self.partitions - 1)


@dataclass(frozen=True)
class Generated:
    stream: str
    segments: dict[int, list[tuple[int, int]]]  # per partition, (first, last) LSNs in order

    @property
    def partitions(self) -> tuple[int, ...]:
        return tuple(sorted(self.segments))


def generate(spark: Any, workdir: Path, case: Case, stream: str = "bench") -> Generated:
    """Write the case's changelog under ``workdir``: even partitions in one Spark job; a
    skewed case as its hot partition and its cold ones apart, moved into one stream."""
    from jobs.changelog_gen import generate_changelog

    root = workdir.as_uri()
    if case.skew is None:
        per = case.rows // case.partitions
        made = generate_changelog(
            spark,
            root,
            stream,
            partitions=case.partitions,
            rows=per * case.partitions,
            rows_per_segment=-(-per // SEGMENTS_PER_PARTITION),
        )
        return Generated(stream, made.segments)
    segments: dict[int, list[tuple[int, int]]] = {}
    hot, *cold = case.rows_of()
    parts = [("hot", 1, hot, 0), ("cold", case.partitions - 1, cold[0] * len(cold), 1)]
    for name, count, rows, first_partition in parts:
        made = generate_changelog(
            spark,
            root,
            f"{stream}-{name}",
            partitions=count,
            rows=rows,
            rows_per_segment=-(-(rows // count) // SEGMENTS_PER_PARTITION),
            seed=first_partition,
        )
        for partition, ranges in made.segments.items():
            source = workdir / "changelog" / f"{stream}-{name}" / str(partition)
            target = workdir / "changelog" / stream / str(partition + first_partition)
            target.parent.mkdir(parents=True, exist_ok=True)
            source.rename(target)
            segments[partition + first_partition] = ranges
    return Generated(stream, segments)


def run_case(
    spark: Any,
    workdir: Path,
    case: Case,
    *,
    rounds: int,
    warm_up: int = 1,
    split_min_rows: int | None = None,
) -> dict[str, object]:
    """Generate ``case``, snapshot it at 90%, and time full replay against restore. With
    ``split_min_rows``, also the same restore with that ``splitMinRows`` (jobs/split.py),
    interleaved with them (``restore_split_*``): the hot partition merged as key ranges."""
    from jobs.args import JobArgs
    from jobs.job import run_job

    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    started = time.perf_counter()
    generated = generate(spark, workdir, case)
    generate_s = time.perf_counter() - started
    root = workdir.as_uri()

    def job(job_id: str, kind: str = "restore", **extra: Any) -> Any:
        args = JobArgs(
            kind=kind, root=root, stream=generated.stream, partitions=generated.partitions,
            job_id=job_id, **extra,
        )  # fmt: skip
        return run_job(spark, args)

    at_90 = {p: s[SEGMENTS_PER_PARTITION - 2][1] for p, s in generated.segments.items()}
    snapshot = job("snap90", "bootstrap", targets=at_90)
    bases = {p.partition: p.prefix for p in snapshot.partitions}
    cpu = jvm_cpu_clock(spark)
    actions = {
        "full": (lambda: job("full-replay"), cpu),
        "restore": (lambda: job("restore-90", bases=bases), cpu),
    }
    if split_min_rows is not None:
        actions["split"] = (lambda: _split_at(spark, split_min_rows, job, bases), cpu)
    timed = interleaved(actions, rounds=rounds, warm_up=warm_up)
    (full_t, full), (restore_t, restored) = timed["full"], timed["restore"]
    expected = fingerprint(workdir, full)
    got = fingerprint(workdir, restored)
    assert got == expected, f"{case.name}: restore differs from full replay: {got} != {expected}"
    rows_full = sum(p.rows_read for p in full.partitions)
    rows_restore = sum(p.rows_read for p in restored.partitions)
    split: dict[str, object] = {}
    if "split" in timed:
        split_t, split_result = timed["split"]
        got = fingerprint(workdir, split_result)
        assert got == expected, f"{case.name}: split restore differs: {got} != {expected}"
        split = {
            "split_min_rows": split_min_rows,
            **split_t.figures("restore_split"),
            "restore_split_speedup_vs_ideal_cpu": ratio(
                full_t.cpu.median / split_t.cpu.median, rows_full / rows_restore
            ),
            "restore_split_speedup_vs_ideal": ratio(
                full_t.wall.median / split_t.wall.median, rows_full / rows_restore
            ),
        }
    return {
        "case": case.name,
        "rows": case.rows,
        "partitions": case.partitions,
        "skew": case.skew,
        "state_rows": expected[0],
        "generate_s": round(generate_s, 1),
        **restore_figures(full_t, restore_t, rows_full, rows_restore),
        "restore_stage_seconds": restored.stage_seconds,
        **split,
    }


def _split_at(spark: Any, rows: int, job: Callable[..., Any], bases: dict[int, str]) -> Any:
    """The restore with ``splitMinRows`` = ``rows``, the session's setting put back after."""
    from jobs.split import SPLIT_MIN_ROWS_SETTING

    before = spark.conf.get(SPLIT_MIN_ROWS_SETTING, None)
    spark.conf.set(SPLIT_MIN_ROWS_SETTING, str(rows))
    try:
        return job("restore-90-split", bases=bases)
    finally:
        if before is None:
            spark.conf.unset(SPLIT_MIN_ROWS_SETTING)
        else:
            spark.conf.set(SPLIT_MIN_ROWS_SETTING, before)


def restore_figures(
    full: Timing, restore: Timing, rows_full: int, rows_restore: int
) -> dict[str, object]:
    """Full replay against restore: medians with min and max, and the speed-ups by CPU
    seconds (what the bars read) and by wall seconds (information), each ÷ the ideal,
    the rows a full replay reads ÷ the rows the restore reads."""
    ideal = rows_full / rows_restore
    speedup = full.wall.median / restore.wall.median
    speedup_cpu = full.cpu.median / restore.cpu.median
    return {
        **full.figures("full_replay"),
        **restore.figures("restore"),
        "rows_read_full_replay": rows_full,
        "rows_read_restore": rows_restore,
        "restore_speedup_ideal": round(ideal, 3),
        "restore_speedup": round(speedup, 3),
        "restore_speedup_vs_ideal": round(speedup / ideal, 3),
        "restore_speedup_cpu": round(speedup_cpu, 3),
        "restore_speedup_vs_ideal_cpu": round(speedup_cpu / ideal, 3),
        "full_replay_cpu_us_per_row": round(full.cpu.median / rows_full * 1e6, 3),
        "restore_cpu_us_per_row_read": round(restore.cpu.median / rows_restore * 1e6, 3),
    }


def fixed_cost(spark: Any, workdir: Path, *, rounds: int = 5) -> dict[str, object]:
    """A restore of a few thousand rows ÷ an empty Spark job (``spark.range(1).count()``)
    and ÷ the tiny write floor, median of ``rounds`` interleaved, after one untimed round,
    in wall and CPU seconds; and the restore's steps."""
    from jobs.args import JobArgs
    from jobs.job import run_job

    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    generated = generate(spark, workdir, Case(rows=8_000, partitions=4))
    root = workdir.as_uri()
    at_90 = {p: s[SEGMENTS_PER_PARTITION - 2][1] for p, s in generated.segments.items()}

    def job(job_id: str, kind: str = "restore", **extra: Any) -> Any:
        args = JobArgs(
            kind=kind, root=root, stream=generated.stream, partitions=generated.partitions,
            job_id=job_id, **extra,
        )  # fmt: skip
        return run_job(spark, args)

    snapshot = job("snap90", "bootstrap", targets=at_90)
    bases = {p.partition: p.prefix for p in snapshot.partitions}
    inputs = [
        str(path) for prefix in bases.values() for path in (workdir / prefix).glob("part-*.parquet")
    ] + [str(path) for path in (workdir / "changelog").rglob("*.parquet")]

    def copy_inputs() -> None:  # the least a job that reads and writes them costs
        out = workdir / "write-floor"
        shutil.rmtree(out, ignore_errors=True)
        spark.read.parquet(*inputs).selectExpr("key", "value", "lsn").write.parquet(str(out))

    cpu = jvm_cpu_clock(spark)
    timed = interleaved(
        {
            "restore": (lambda: job("tiny-restore", bases=bases), cpu),
            "empty": (lambda: spark.range(1).count(), cpu),
            "write_floor": (copy_inputs, cpu),
        },
        rounds=rounds,
        warm_up=1,
    )
    (restore_t, restored), (empty_t, _) = timed["restore"], timed["empty"]
    floor_t = timed["write_floor"][0]
    return {
        "job_fixed_cost_rows_read": sum(p.rows_read for p in restored.partitions),
        **restore_t.figures("job_fixed_cost"),
        **empty_t.figures("empty_job"),
        **floor_t.figures("tiny_write_floor"),
        "job_fixed_cost_vs_empty_job": ratio(restore_t.wall.median, empty_t.wall.median),
        "job_fixed_cost_vs_empty_job_cpu": ratio(restore_t.cpu.median, empty_t.cpu.median),
        "job_fixed_cost_vs_tiny_write_floor": ratio(restore_t.wall.median, floor_t.wall.median),
        "job_fixed_cost_vs_tiny_write_floor_cpu": ratio(restore_t.cpu.median, floor_t.cpu.median),
        "job_fixed_cost_stage_seconds": restored.stage_seconds,
    }


def fingerprint(workdir: Path, result: Any) -> tuple[int, int]:
    """Row count and an order-independent hash of (partition, key, value, lsn) of a job's
    output, read by DuckDB."""
    import duckdb

    sources = " UNION ALL ".join(
        f"SELECT {p.partition}::BIGINT AS partition, key, value, lsn "
        f"FROM read_parquet('{workdir}/{p.prefix}part-*.parquet')"
        for p in sorted(result.partitions, key=lambda p: p.partition)
        if p.row_count
    )
    if not sources:
        return 0, 0
    with duckdb.connect() as con:
        row = con.execute(
            f"SELECT count(*), sum(hash(partition, key, value, lsn)) FROM ({sources})"
        ).fetchone()
    return int(row[0]), int(row[1])


def spilled_bytes(spark: Any) -> int:
    """Bytes the session's stages have spilled to disk so far (Spark's status store)."""
    context = spark.sparkContext
    no_quantiles = context._gateway.new_array(context._jvm.double, 0)
    # stageList(statuses: all, details, withSummaries, quantiles, taskStatuses: all)
    stages = context._jsc.sc().statusStore().stageList(None, False, False, no_quantiles, None)
    return sum(int(stages.apply(i).diskBytesSpilled()) for i in range(stages.size()))


def _millions(rows: int) -> str:
    return f"{rows / 1e6:g}M" if rows >= 1_000_000 else f"{rows:,}"
