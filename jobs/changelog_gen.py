"""A realistic changelog generator for tests, the demo and the benchmark.

``generate_changelog`` writes N records across P partitions as segment files that follow
the layout, built by Spark itself so that 10M rows take seconds, not minutes: one Spark
task per segment, no shuffle. Records are puts of random-looking values, deletes
(``delete_fraction`` of them) and re-puts: keys are drawn with a hash from a key space
smaller than the log, so most keys are written many times, and a put after a delete
brings a key back.

LSNs are dense per partition, from ``start_lsn``; calling it again with ``start_lsn`` =
the previous ``next_lsn`` (and another ``seed``) extends the same changelog.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from jobs.layout import changelog_dir, segment_name, staging_prefix
from jobs.schema import OP_DELETE, OP_PUT
from jobs.storage import ObjectStore
from snapledger.ids import new_ulid

_TS_ORIGIN_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: records are 1 ms apart from here


@dataclass(frozen=True)
class GeneratedChangelog:
    """What was written: per partition, its segments ``(first_lsn, last_lsn)`` in order."""

    stream: str
    rows: int
    segments: dict[int, list[tuple[int, int]]] = field(default_factory=dict)

    def last_lsn(self, partition: int) -> int:
        return self.segments[partition][-1][1]

    @property
    def next_lsn(self) -> dict[int, int]:
        return {p: self.last_lsn(p) + 1 for p in self.segments}


def generate_changelog(
    spark: SparkSession,
    root: str,
    stream: str,
    *,
    partitions: int,
    rows: int,
    keys_per_partition: int | None = None,
    rows_per_segment: int = 500_000,
    delete_fraction: float = 0.1,
    value_bytes: int = 64,
    start_lsn: int = 0,
    seed: int = 0,
) -> GeneratedChangelog:
    """Write ``rows`` records of ``stream``, spread evenly over partitions 0..P-1."""
    if partitions < 1 or rows < partitions:
        raise ValueError("need at least one partition and one row per partition")
    per_partition = rows // partitions
    keys = keys_per_partition or max(1, per_partition // 8)
    slices_per_partition = max(1, math.ceil(per_partition / max(1, rows_per_segment)))
    slices = partitions * slices_per_partition

    def slice_start(index: int) -> int:
        # spark.range cuts [0, rows) at floor(i * rows / slices); mirror it exactly.
        return index * rows // slices

    segments: dict[int, list[tuple[int, int]]] = {}
    for index in range(slices):
        partition = index // slices_per_partition
        partition_start = slice_start(partition * slices_per_partition)
        first = start_lsn + slice_start(index) - partition_start
        last = start_lsn + slice_start(index + 1) - partition_start - 1
        segments.setdefault(partition, []).append((first, last))

    frame = spark.range(0, rows, 1, numPartitions=slices).select(
        *_record_columns(
            rows=rows,
            slices=slices,
            slices_per_partition=slices_per_partition,
            keys=keys,
            delete_fraction=delete_fraction,
            value_bytes=value_bytes,
            start_lsn=start_lsn,
            seed=seed,
        )
    )
    store = ObjectStore(spark, root)
    staging = staging_prefix("changelog-gen", new_ulid())
    try:
        # No shuffle: each range slice is one segment, and Spark names the file it writes
        # after the slice ("part-00007-..."), which maps it back to its segment.
        frame.write.mode("errorifexists").parquet(store.uri(staging))
        written = [f for f in store.list_files(staging) if f.name.startswith("part-")]
        for stored in written:
            index = int(stored.name.split("-")[1])
            partition = index // slices_per_partition
            first, last = segments[partition][index % slices_per_partition]
            store.rename(stored.key, changelog_dir(stream, partition) + segment_name(first, last))
    finally:
        store.delete(staging, recursive=True)
    return GeneratedChangelog(stream=stream, rows=rows, segments=segments)


def _record_columns(
    *,
    rows: int,
    slices: int,
    slices_per_partition: int,
    keys: int,
    delete_fraction: float,
    value_bytes: int,
    start_lsn: int,
    seed: int,
) -> list[Column]:
    record = F.col("id")
    # The task's slice is the segment; the partition's first slice starts its LSNs.
    # Integer "div" keeps this exact where a float division could be off by one.
    partition_start = (
        f"((spark_partition_id() div {slices_per_partition}) * {slices_per_partition}"
        f" * {rows}L) div {slices}"
    )
    lsn = F.expr(f"id - {partition_start} + {start_lsn}L")
    key_id = F.pmod(F.xxhash64(record, F.lit(seed)), F.lit(keys))
    is_delete = F.pmod(F.xxhash64(record, F.lit(seed + 1)), F.lit(1_000_000)) < int(
        delete_fraction * 1_000_000
    )
    # Values vary in length (value_bytes/2 .. value_bytes) and carry entropy, so Parquet
    # cannot shrink them to nothing: a prefix of a sha256 hex digest (at most 64 bytes).
    width = min(max(2, value_bytes), 64)
    length = F.pmod(F.xxhash64(record, F.lit(seed + 2)), F.lit(width - width // 2 + 1)) + width // 2
    digest = F.sha2(F.concat_ws("/", F.lit(str(seed)), record.cast("string")), 256)
    value = F.substring(digest, F.lit(1), length).cast("binary")
    return [
        F.concat(F.lit("key-"), F.lpad(key_id.cast("string"), 9, "0")).alias("key"),
        F.when(is_delete, F.lit(None).cast("binary")).otherwise(value).alias("value"),
        lsn.cast("long").alias("lsn"),
        F.when(is_delete, F.lit(OP_DELETE)).otherwise(F.lit(OP_PUT)).alias("op"),
        F.timestamp_millis(F.lit(_TS_ORIGIN_MS) + lsn).alias("ts"),
    ]
