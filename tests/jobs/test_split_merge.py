"""A hot partition's merge split by key range (jobs/split.py) is invisible to readers:
the same rows as a full replay and as the unsplit merge, one snapshot per partition whose
files, in name order, are one key-sorted run, listed in a manifest with true sizes,
rows and checksums; and a snapshot written so restores like any other."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from jobs_support import (
    Record,
    check_descriptor_files,
    check_manifest,
    oracle,
    read_state,
    write_changelog,
    write_processor_snapshot,
)

from jobs.args import JobArgs
from jobs.job import run_job
from jobs.split import SPLIT_MIN_ROWS_SETTING, merge_ranges, planned_cores

HOT_ROWS, COLD_ROWS = 3000, 60


def test_only_a_partition_over_a_cores_share_is_split() -> None:
    # 4 balanced partitions on 2 cores: each holds half a core's share
    assert merge_ranges({0: 100, 1: 100, 2: 100, 3: 100}, cores=2, min_rows=1) == dict.fromkeys(
        range(4), 1
    )
    # 90% in one: a core's share is 500 rows, so the hot one becomes 2 ranges
    assert merge_ranges({0: 900, 1: 50, 2: 50}, cores=2, min_rows=1) == {0: 2, 1: 1, 2: 1}
    assert merge_ranges({0: 900, 1: 50, 2: 50}, cores=8, min_rows=1)[0] == 8
    # never ranges smaller than the minimum
    assert merge_ranges({0: 900, 1: 50, 2: 50}, cores=8, min_rows=300)[0] == 3
    assert merge_ranges({0: 900}, cores=8, min_rows=1000) == {0: 1}
    # docs/jobs.md, "Sizing": 3 executors of 4 cores, 90% of 400 GiB's rows in one
    # partition, the rest over 63: 11 ranges for the hot one, the others whole
    rows = {0: 9_000_000_000, **dict.fromkeys(range(1, 64), 1_000_000_000 // 63)}
    ranges = merge_ranges(rows, cores=planned_cores("3", "4", 2), min_rows=1_000_000)
    assert ranges[0] == 11 and set(ranges.values()) == {11, 1}


def test_the_cores_are_the_planned_executors_else_the_default_parallelism() -> None:
    assert planned_cores("3", "4", 2) == 12
    assert planned_cores(None, "4", 2) == 2
    assert planned_cores("1", "1", 8) == 8


def _records(rows: int, keys: int, seed: int) -> list[Record]:
    rng = random.Random(seed)
    out = []
    for lsn in range(rows):
        key = f"k{rng.randrange(keys):05d}"
        if rng.random() < 0.15:
            out.append(Record(key, None, lsn, "delete"))
        else:
            out.append(Record(key, rng.randbytes(8), lsn, "put"))
    return out


@contextmanager
def _split_at(spark, rows: int | None) -> Iterator[None]:
    before = spark.conf.get(SPLIT_MIN_ROWS_SETTING, None)
    if rows is None:
        spark.conf.unset(SPLIT_MIN_ROWS_SETTING)
    else:
        spark.conf.set(SPLIT_MIN_ROWS_SETTING, str(rows))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(SPLIT_MIN_ROWS_SETTING)
        else:
            spark.conf.set(SPLIT_MIN_ROWS_SETTING, before)


def _data_files(root: Path, prefix: str) -> list[str]:
    return sorted(p.name for p in (root / prefix).glob("part-*.parquet"))


@pytest.mark.spark
def test_a_split_hot_partition_restores_compacts_and_reads_as_one_sorted_run(
    spark, tmp_path: Path
) -> None:
    # Given partition 0 holding most of the log, a snapshot of each at 80% of its log
    logs = {0: _records(HOT_ROWS, 900, 0), 1: _records(COLD_ROWS, 20, 1)}
    logs[2] = _records(COLD_ROWS, 20, 2)
    bases = {}
    for partition, records in logs.items():
        write_changelog(tmp_path, "s", partition, records, segment_rows=len(records) // 5)
        at = len(records) * 4 // 5 - 1
        bases[partition] = write_processor_snapshot(
            tmp_path, "s", partition, at, oracle(records, at), file_rows=200
        )
    expected = {p: oracle(records, len(records) - 1) for p, records in logs.items()}
    root = tmp_path.as_uri()

    def job(job_id: str, kind: str, job_bases: dict[int, str] | None = None):
        args = JobArgs(
            kind=kind,  # type: ignore[arg-type]
            root=root,
            stream="s",
            partitions=(0, 1, 2),
            job_id=job_id,
            bases=job_bases or {},
        )
        return run_job(spark, args)

    # When a restore and a compaction run with a split threshold small enough to split
    # the hot partition's merge (and the same restore without it)
    with _split_at(spark, 100):
        job("split", "restore", bases)
        compacted = job("compact", "compaction", bases)
    with _split_at(spark, None):
        job("whole", "restore", bases)
    # Then the hot partition was written by several tasks, the cold ones by one each
    assert len(_data_files(tmp_path, "restores/split/0/")) > 1
    assert len(_data_files(tmp_path, "restores/whole/0/")) == 1
    for partition in (1, 2):
        assert len(_data_files(tmp_path, f"restores/split/{partition}/")) == 1
    # and every output is the full replay, its files in name order one sorted run (read_state
    # checks the order across files), each listed with its true size, rows and checksum
    for partition, state in expected.items():
        assert read_state(tmp_path, f"restores/split/{partition}/") == state
        assert read_state(tmp_path, f"restores/whole/{partition}/") == state
        check_descriptor_files(tmp_path, f"restores/split/{partition}/", "_restore.json")
    snapshots = {p.partition: p for p in compacted.partitions}
    for partition, state in expected.items():
        prefix = snapshots[partition].prefix
        manifest = check_manifest(tmp_path, prefix)
        assert manifest.row_count == len(state) == snapshots[partition].row_count
        assert [f.path for f in manifest.files] == _data_files(tmp_path, prefix)
        assert read_state(tmp_path, prefix) == state
    assert len(_data_files(tmp_path, snapshots[0].prefix)) > 1
    # And the split snapshot is a base like any other: a restore from it, split or not
    from_split = {p: s.prefix for p, s in snapshots.items()}
    with _split_at(spark, 100):
        job("again-split", "restore", from_split)
    job("again-whole", "restore", from_split)
    for partition, state in expected.items():
        assert read_state(tmp_path, f"restores/again-split/{partition}/") == state
        assert read_state(tmp_path, f"restores/again-whole/{partition}/") == state


@pytest.mark.spark
def test_a_split_partition_is_one_range_shuffle_whose_tasks_hold_contiguous_key_ranges(
    spark,
) -> None:
    import io
    from contextlib import redirect_stdout

    from pyspark.sql import functions as F  # noqa: N812

    from jobs.compaction import compacted

    records = _records(2000, 500, 3)
    state = oracle(records, 999)
    states = {0: spark.createDataFrame(
        [(k, v, n) for k, (v, n) in sorted(state.items())], "key string, value binary, lsn long"
    )}  # fmt: skip
    changes = {0: spark.createDataFrame(
        [(r.key, r.value, r.lsn, r.op) for r in records[1000:]],
        "key string, value binary, lsn long, op string",
    )}  # fmt: skip
    with compacted(
        spark, states, changes, partitions=(0,), changes_in=1000, state_rows=len(state),
        merge_max_changes_per_state_row=10.0, merge_ranges={0: 3},
    ) as result:  # fmt: skip
        assert result.task_partitions is None  # placed by the partitioned write
        plan = io.StringIO()
        with redirect_stdout(plan):
            result.frame.explain()
        ranges = (
            result.frame.groupBy(F.spark_partition_id().alias("task"))
            .agg(F.min("key").alias("low"), F.max("key").alias("high"), F.count("*").alias("n"))
            .orderBy("task")
            .collect()
        )
        rows = result.frame.collect()
    assert plan.getvalue().count("Exchange") == 1 and "rangepartitioning" in plan.getvalue()
    assert len(ranges) > 1
    assert all(a["high"] < b["low"] for a, b in itertools.pairwise(ranges))
    expected = oracle(records, 1999)
    assert {r["key"]: (bytes(r["value"]), r["lsn"]) for r in rows} == expected
    assert {r["partition"] for r in rows} == {0}
