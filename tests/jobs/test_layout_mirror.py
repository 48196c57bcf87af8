"""The job's stdlib copies (layout, ULID, Spark's hash) agree with what they mirror."""

from __future__ import annotations

import re

import pytest

from jobs import layout as job_layout
from jobs.routing import shuffle_partitions_for, spark_hash_int, spark_partition_of
from jobs.ulid import new_ulid
from snapledger import layout


def test_the_job_layout_renders_the_shared_layout_keys() -> None:
    assert job_layout.LSN_WIDTH == layout.LSN_WIDTH
    assert job_layout.MANIFEST_NAME == layout.MANIFEST_NAME
    segment = job_layout.changelog_dir("s", 3) + job_layout.segment_name(5, 17)
    assert segment == layout.segment_key("s", 3, 5, 17)
    parsed = layout.parse_segment_key(segment)
    assert job_layout.parse_segment_name(segment.rsplit("/", 1)[1]) == (
        parsed.first_lsn,
        parsed.last_lsn,
    )
    ulid = new_ulid()
    prefix = job_layout.snapshot_prefix("s", 3, 42, ulid)
    assert prefix == layout.snapshot_prefix("s", 3, 42, ulid)
    assert job_layout.parse_snapshot_prefix(prefix) == ("s", 3, 42, ulid)
    assert job_layout.restore_prefix("j", 3) == layout.restore_prefix("j", 3)


def test_the_job_ulid_is_a_ulid() -> None:
    assert re.fullmatch(layout.ULID_PATTERN, new_ulid())


@pytest.mark.spark
def test_the_routing_hash_is_sparks_hash(spark) -> None:
    from pyspark.sql import functions as F  # noqa: N812

    values = [0, 1, 2, 7, 63, 1000, 2**31 - 1]
    rows = spark.createDataFrame([(v,) for v in values], "v int").select(F.hash("v").alias("h"))
    assert [r.h for r in rows.collect()] == [spark_hash_int(v) for v in values]


def test_routing_gives_each_partition_its_own_task_when_it_can() -> None:
    n = shuffle_partitions_for(range(8))
    assert len({spark_partition_of(p, n) for p in range(8)}) == 8
