"""The job's layout is the shared one; its copy of Spark's hash agrees with Spark."""

from __future__ import annotations

import pytest

from jobs import layout as job_layout
from jobs.routing import shuffle_partitions_for, spark_hash_int, spark_partition_of
from snapledger import layout


def test_the_job_layout_is_the_shared_layout() -> None:
    # The job imports the shared module (shipped in its zip) instead of a copy of it.
    assert job_layout.snapshot_prefix is layout.snapshot_prefix
    assert job_layout.changelog_dir("s", 3) + job_layout.segment_name(5, 17) == (
        layout.segment_key("s", 3, 5, 17)
    )
    assert job_layout.parse_segment_name(job_layout.segment_name(5, 17)) == (5, 17)
    assert job_layout.parse_segment_name("segment-1.parquet") is None
    prefix = layout.snapshot_prefix("s", 3, 42, "01JW8Z3K9Q7N4M2P6R8T0V2X4Y")
    for given in (prefix, prefix.rstrip("/")):
        found = job_layout.snapshot_location(given)
        assert (found.stream, found.partition, found.lsn) == ("s", 3, 42)
    assert job_layout.snapshot_location("snapshots/s/3/not-a-snapshot/") is None


@pytest.mark.spark
def test_the_routing_hash_is_sparks_hash(spark) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    values = [0, 1, 2, 7, 63, 1000, 2**31 - 1]
    rows = spark.createDataFrame([(v,) for v in values], "v int").select(F.hash("v").alias("h"))
    assert [r.h for r in rows.collect()] == [spark_hash_int(v) for v in values]


def test_routing_gives_each_partition_its_own_task_when_it_can() -> None:
    n = shuffle_partitions_for(range(8))
    assert len({spark_partition_of(p, n) for p in range(8)}) == 8
