"""How many key ranges each lineage partition's merge is split into.

The merge (compaction.py) reads a partition's state and changes in one task, with no
shuffle. A partition holding more than a core's share of the job's rows (the rows all
partitions' merges read, over the cores) would keep one core busy while the others wait:
it is split into contiguous key ranges, each merged by a task of its own (Spark's range
partitioning: a sample of the keys picks the bounds, then one shuffle of that
partition's rows), so that no task holds much more than a core's share. The ranges come
in key order, each sorted, so the partition's files, in task order, are still one
key-sorted run: the split is invisible to readers.

A range is never made smaller than ``spark.snapledger.merge.splitMinRows`` rows (default
``DEFAULT_SPLIT_MIN_ROWS``): below that the sample and the shuffle cost more than the
idle cores would give.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from pyspark.sql import SparkSession

SPLIT_MIN_ROWS_SETTING = "spark.snapledger.merge.splitMinRows"
DEFAULT_SPLIT_MIN_ROWS = 1_000_000


def merge_ranges(partition_rows: Mapping[int, int], cores: int, min_rows: int) -> dict[int, int]:
    """Per partition, the key ranges its merge is split into (1: not split), from the
    rows each partition's merge reads (an upper bound will do)."""
    if cores < 1 or min_rows < 1:
        raise ValueError("cores and min_rows must be at least 1")
    share = max(min_rows, math.ceil(sum(partition_rows.values()) / cores))
    return {p: math.ceil(rows / share) if rows > share else 1 for p, rows in partition_rows.items()}


def split_min_rows(spark: SparkSession) -> int:
    """The session's ``spark.snapledger.merge.splitMinRows``, else the default."""
    value = spark.conf.get(SPLIT_MIN_ROWS_SETTING, None)
    return int(value) if value else DEFAULT_SPLIT_MIN_ROWS


def cores(spark: SparkSession) -> int:
    """The cores the job's tasks run on (``planned_cores``) in this session."""
    conf = spark.sparkContext.getConf()
    return planned_cores(
        conf.get("spark.executor.instances"),
        conf.get("spark.executor.cores"),
        int(spark.sparkContext.defaultParallelism),
    )


def planned_cores(instances: str | None, per_executor: str | None, default: int) -> int:
    """The executors the job was started with (EMR Serverless: ``spark.executor.instances``
    x ``spark.executor.cores``, which the launch sets, since executors may not have
    registered yet when the job plans), else Spark's default parallelism (a local
    session: its threads)."""
    planned = int(instances) * int(per_executor) if instances and per_executor else 0
    return max(planned, default, 1)
