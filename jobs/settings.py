"""The Spark SQL settings a job runs with, applied to the session only while it runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

JOB_SQL_SETTINGS = {
    # A hash aggregation's two-level map puts a small fast map (64K entries) before the
    # main one. Winners have hundreds of thousands of keys per task, so rows mostly miss
    # the fast map and probe both: winners of 10M records over 1.25M keys, 2 cores, best
    # of 2: 5.9 s with it, 3.9 s without.
    "spark.sql.codegen.aggregate.map.twolevel.enabled": "false",
    # A partitioned write sorts its input by the partition column unless the plan shows
    # that order. The compaction's result holds one partition per task in key order, but
    # a union of per-partition tasks shows no order, so Spark would sort it again. With
    # planned writes off, a writer that may keep several partitions' files open writes
    # rows as they come (one open file per task here; past 16 it sorts the rest).
    "spark.sql.optimizer.plannedWrite.enabled": "false",
    "spark.sql.maxConcurrentOutputFileWriters": "16",
}


@contextmanager
def job_settings(spark: SparkSession) -> Iterator[None]:
    """Apply JOB_SQL_SETTINGS; on leaving, put back what the session had."""
    before = {name: spark.conf.get(name, None) for name in JOB_SQL_SETTINGS}
    for name, value in JOB_SQL_SETTINGS.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, value)
