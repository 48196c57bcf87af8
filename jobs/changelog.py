"""Reading the changelog a job needs, and checking it in one aggregation pass.

Validation reads the ``lsn``, ``key`` and ``op`` columns of every segment the job needs
and groups once by (partition, file, LSN bucket): row counts, LSN min/max, null keys,
unknown ops, and the exact number of distinct LSNs from Spark's bitmap aggregates (one
32768-bit bitmap per bucket, so partial aggregation shrinks the shuffle to a few rows per
file). Duplicate, out-of-range or null LSNs, null keys and unknown ops are then reported
per file, every bad file in one message.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from jobs.coverage import PartitionPlan
from jobs.errors import ChangelogError
from jobs.schema import CHANGELOG_SCHEMA, KNOWN_OPS
from jobs.snapshots import union_all
from jobs.storage import ObjectStore

_MAX_REPORTED_FILES = 5


@dataclass
class _FileStats:
    rows: int = 0
    lsns: int = 0
    distinct_lsns: int = 0
    min_lsn: int | None = None
    max_lsn: int | None = None
    null_keys: int = 0
    unknown_ops: int = 0
    applied: int = 0


def read_changes(
    spark: SparkSession, store: ObjectStore, plans: Sequence[PartitionPlan]
) -> DataFrame | None:
    """``partition, key, value, lsn, op`` of the records each plan applies, or None."""
    frames = [
        _read_segments(spark, store, plan)
        .where(_applied(plan))
        .select(F.lit(plan.partition).alias("partition"), "key", "value", "lsn", "op")
        for plan in plans
        if plan.segments
    ]
    return union_all(frames)


def validate_changelog(
    spark: SparkSession, store: ObjectStore, plans: Sequence[PartitionPlan]
) -> dict[int, int]:
    """Check every segment the plans read; returns the records applied per partition."""
    frames = [
        _read_segments(spark, store, plan).select(
            F.lit(plan.partition).alias("partition"),
            F.col("_metadata.file_name").alias("file"),
            "lsn",
            F.col("key").isNull().alias("null_key"),
            (~F.coalesce(F.col("op").isin(*KNOWN_OPS), F.lit(False))).alias("unknown_op"),
            _applied(plan).alias("applied"),
        )
        for plan in plans
        if plan.segments
    ]
    applied = {plan.partition: 0 for plan in plans}
    combined = union_all(frames)
    if combined is None:
        return applied
    lsn = F.col("lsn")
    aggregates = combined.groupBy("partition", "file", F.expr("bitmap_bucket_number(lsn)")).agg(
        F.count(F.lit(1)).alias("rows"),
        F.count(lsn).alias("lsns"),
        F.expr("bitmap_count(bitmap_construct_agg(bitmap_bit_position(lsn)))").alias("distinct"),
        F.min(lsn).alias("min_lsn"),
        F.max(lsn).alias("max_lsn"),
        F.count_if("null_key").alias("null_keys"),
        F.count_if("unknown_op").alias("unknown_ops"),
        F.count_if("applied").alias("applied"),
    )
    try:
        buckets = aggregates.collect()
    except PySparkException as exc:
        raise ChangelogError(f"changelog could not be read: {_first_line(exc)}") from None
    stats: dict[tuple[int, str], _FileStats] = defaultdict(_FileStats)
    for bucket in buckets:
        file_stats = stats[(bucket["partition"], bucket["file"])]
        file_stats.rows += bucket["rows"]
        file_stats.lsns += bucket["lsns"]
        file_stats.distinct_lsns += bucket["distinct"] or 0
        file_stats.null_keys += bucket["null_keys"]
        file_stats.unknown_ops += bucket["unknown_ops"]
        file_stats.applied += bucket["applied"]
        for name, pick in (("min_lsn", min), ("max_lsn", max)):
            value, seen = bucket[name], getattr(file_stats, name)
            if value is not None:
                setattr(file_stats, name, value if seen is None else pick(seen, value))
    problems = _problems(plans, stats)
    if problems:
        shown = "; ".join(problems[:_MAX_REPORTED_FILES])
        more = len(problems) - _MAX_REPORTED_FILES
        raise ChangelogError(
            f"bad changelog data: {shown}" + (f"; and {more} more" if more > 0 else "")
        )
    for (partition, _), file_stats in stats.items():
        applied[partition] += file_stats.applied
    return applied


def _problems(
    plans: Sequence[PartitionPlan], stats: dict[tuple[int, str], _FileStats]
) -> list[str]:
    problems = []
    for plan in plans:
        for segment in plan.segments:
            found = stats.get((plan.partition, segment.name))
            if found is None:
                continue  # an empty segment: LSNs need not be dense
            issues = _file_issues(found, segment.first_lsn, segment.last_lsn)
            if issues:
                problems.append(f"{segment.key}: {', '.join(issues)}")
    return problems


def _file_issues(found: _FileStats, first: int, last: int) -> list[str]:
    issues = []
    if found.lsns < found.rows:
        issues.append(f"{found.rows - found.lsns} row(s) with a null LSN")
    if (
        found.min_lsn is not None
        and found.max_lsn is not None
        and (found.min_lsn < first or found.max_lsn > last)
    ):
        issues.append(
            f"LSNs outside the range {first}..{last} in its name (found "
            f"{found.min_lsn}..{found.max_lsn})"
        )
    elif found.distinct_lsns < found.lsns:
        issues.append(f"duplicate LSNs ({found.lsns - found.distinct_lsns} repeated row(s))")
    if found.null_keys:
        issues.append(f"{found.null_keys} row(s) with a null key")
    if found.unknown_ops:
        issues.append(
            f"{found.unknown_ops} row(s) with an unknown op (only {' and '.join(KNOWN_OPS)})"
        )
    return issues


def _read_segments(spark: SparkSession, store: ObjectStore, plan: PartitionPlan) -> DataFrame:
    return spark.read.schema(CHANGELOG_SCHEMA).parquet(*(store.uri(s.key) for s in plan.segments))


def _applied(plan: PartitionPlan) -> Column:
    return (F.col("lsn") > F.lit(plan.base_lsn)) & (F.col("lsn") <= F.lit(plan.target_lsn))


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
