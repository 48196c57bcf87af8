"""Routing partitions to Spark tasks: the job's copy of Spark's hash agrees with Spark."""

from __future__ import annotations

import pytest

from jobs.routing import shuffle_partitions_for, spark_hash_int, spark_partition_of


@pytest.mark.spark
def test_the_routing_hash_is_sparks_hash(spark) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    values = [0, 1, 2, 7, 63, 1000, 2**31 - 1]
    rows = spark.createDataFrame([(v,) for v in values], "v int").select(F.hash("v").alias("h"))
    assert [r.h for r in rows.collect()] == [spark_hash_int(v) for v in values]


def test_routing_gives_each_partition_its_own_task_when_it_can() -> None:
    n = shuffle_partitions_for(range(8))
    assert len({spark_partition_of(p, n) for p in range(8)}) == 8
