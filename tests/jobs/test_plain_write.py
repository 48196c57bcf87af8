"""The merge's plain write places each file by its task: an emptied first partition
publishes no file (Spark's first task writes one even when it has no rows), and the
others keep their own rows."""

from __future__ import annotations

from pathlib import Path

import pytest
from jobs_support import Record, check_descriptor_files, oracle, read_state, write_changelog
from jobs_support import write_processor_snapshot as write_snapshot

from jobs.args import JobArgs
from jobs.job import run_job

pytestmark = pytest.mark.spark

STREAM = "plain-write"


def test_a_first_partition_emptied_by_deletes_publishes_no_file(spark, tmp_path: Path) -> None:
    base_state = {f"k{i:03d}": (f"v{i}".encode(), i) for i in range(20)}
    records = {
        # Partition 0: every key of its base is deleted after it.
        0: [Record(key, None, 20 + i, "delete") for i, key in enumerate(sorted(base_state))],
        # Partition 1: a few keys change, one goes.
        1: [
            Record("k001", b"new", 20, "put"),
            Record("k002", None, 21, "delete"),
            Record("k100", b"added", 22, "put"),
        ],
    }
    bases = {}
    for partition, changes in records.items():
        bases[partition] = write_snapshot(tmp_path, STREAM, partition, 19, base_state)
        # The changelog below the base is not read; its segments must still tile from 0.
        history = [Record(k, v, n, "put") for k, (v, n) in sorted(base_state.items())]
        write_changelog(tmp_path, STREAM, partition, [*history, *changes], segment_rows=20)
    result = run_job(
        spark,
        JobArgs(
            kind="restore",
            root=tmp_path.as_uri(),
            stream=STREAM,
            partitions=(0, 1),
            job_id="restore-emptied",
            bases=bases,
        ),
    )
    by_partition = {p.partition: p for p in result.partitions}
    assert by_partition[0].row_count == 0
    emptied = check_descriptor_files(tmp_path, by_partition[0].prefix, "_restore.json")
    assert emptied["files"] == []
    assert not list((tmp_path / by_partition[0].prefix).glob("*.parquet"))
    expected = oracle(records[1], 22, base=base_state, after=19)
    assert read_state(tmp_path, by_partition[1].prefix) == expected
    assert by_partition[1].row_count == len(expected)
