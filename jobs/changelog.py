"""Reading the changelog a job needs, and checking it.

Validation reads the ``lsn``, ``key`` and ``op`` columns of every segment the job needs
and groups by (partition, file) with hash aggregates only: row counts, LSN min/max, null
keys, unknown ops, and the spread of ``lsn - row index``. Where that spread is zero, the
file's LSNs are consecutive in file order, hence distinct: true of every segment a
producer writes in log order with dense LSNs. Only the files it cannot prove so (sparse
LSNs, rows out of order, or duplicates) get the exact check: distinct LSNs counted with
Spark's bitmap aggregates, per (file, 32768-LSN bucket). That pass is kept for them
because bitmap aggregates need a sort-based aggregation (a sort of every row it reads).
Duplicate, out-of-range or null LSNs, null keys and unknown ops are then reported per
file, every bad file in one message.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from jobs.coverage import PartitionPlan
from jobs.errors import ChangelogError
from jobs.frames import union_all
from jobs.schema import CHANGELOG_SCHEMA, KNOWN_OPS
from jobs.storage import ObjectStore

_MAX_REPORTED_FILES = 5
_KNOWN_OPS_SQL = ", ".join(f"'{op}'" for op in KNOWN_OPS)
# Expressions are SQL text throughout: one py4j call each, where a Column built from
# functions costs one per function and operand.
_FILE_STATS_SQL = (  # per (partition, file)
    "count(1) AS rows",
    "count(lsn) AS lsns",
    "min(lsn) AS min_lsn",
    "max(lsn) AS max_lsn",
    "min(lsn - row_index) AS min_offset",
    "max(lsn - row_index) AS max_offset",
    "count_if(null_key) AS null_keys",
    "count_if(unknown_op) AS unknown_ops",
    "count_if(applied) AS applied",
)
_DISTINCT_LSNS_SQL = "bitmap_count(bitmap_construct_agg(bitmap_bit_position(lsn))) AS distinct"


@dataclass
class _FileStats:
    rows: int = 0
    lsns: int = 0
    distinct_lsns: int | None = 0  # None until known
    min_lsn: int | None = None
    max_lsn: int | None = None
    null_keys: int = 0
    unknown_ops: int = 0
    applied: int = 0


def read_segments(spark: SparkSession, store: ObjectStore, plan: PartitionPlan) -> DataFrame:
    """Every row of the segments ``plan`` reads (one file scan, shared by the change
    records and their validation); the plan must have segments."""
    return spark.read.schema(CHANGELOG_SCHEMA).parquet(*(store.uri(s.key) for s in plan.segments))


def applied_changes(segments: DataFrame, plan: PartitionPlan) -> DataFrame:
    """``key, value, lsn, op`` of the records ``plan`` applies, from its ``segments``."""
    return segments.where(_applied(plan)).selectExpr("key", "value", "lsn", "op")


def validate_changelog(
    segments: Mapping[int, DataFrame], plans: Sequence[PartitionPlan]
) -> dict[int, int]:
    """Check every segment the plans read; returns the records applied per partition."""
    frames = [
        segments[plan.partition].selectExpr(
            f"{plan.partition:d} AS partition",
            "_metadata.file_name AS file",
            "_metadata.row_index AS row_index",
            "lsn",
            "key IS NULL AS null_key",
            f"NOT coalesce(op IN ({_KNOWN_OPS_SQL}), false) AS unknown_op",
            f"{_applied(plan)} AS applied",
        )
        for plan in plans
        if plan.partition in segments
    ]
    applied = {plan.partition: 0 for plan in plans}
    combined = union_all(frames)
    if combined is None:
        return applied
    aggregates = combined.groupBy("partition", "file").agg(
        *(F.expr(aggregate) for aggregate in _FILE_STATS_SQL)
    )
    stats: dict[tuple[int, str], _FileStats] = {}
    for row in _collect(aggregates):
        stats[(row["partition"], row["file"])] = _FileStats(
            rows=row["rows"],
            lsns=row["lsns"],
            # Consecutive in file order: as many distinct LSNs as rows.
            distinct_lsns=row["lsns"] if row["min_offset"] == row["max_offset"] else None,
            min_lsn=row["min_lsn"],
            max_lsn=row["max_lsn"],
            null_keys=row["null_keys"],
            unknown_ops=row["unknown_ops"],
            applied=row["applied"],
        )
    unproven = {key for key, found in stats.items() if found.distinct_lsns is None}
    if unproven:
        counted = _count_distinct_lsns(combined, unproven, everything=unproven == stats.keys())
        for key in unproven:
            stats[key].distinct_lsns = counted.get(key, 0)
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


def _count_distinct_lsns(
    combined: DataFrame, files: set[tuple[int, str]], *, everything: bool
) -> dict[tuple[int, str], int]:
    """The exact number of distinct LSNs in each of ``files`` ((partition, file name)),
    which are all the files of ``combined`` when ``everything``."""
    by_partition: dict[int, list[str]] = defaultdict(list)
    for partition, name in sorted(files):
        by_partition[partition].append(f"'{_sql_string(name)}'")
    wanted = " OR ".join(
        f"(partition = {partition:d} AND file IN ({', '.join(names)}))"
        for partition, names in by_partition.items()
    )
    buckets = (
        (combined if everything else combined.where(wanted))
        .groupBy("partition", "file", F.expr("bitmap_bucket_number(lsn) AS bucket"))
        .agg(F.expr(_DISTINCT_LSNS_SQL))
    )
    distinct: dict[tuple[int, str], int] = defaultdict(int)
    for row in _collect(buckets):
        distinct[(row["partition"], row["file"])] += row["distinct"] or 0
    return distinct


def _collect(frame: DataFrame) -> list[Row]:
    try:
        return frame.collect()
    except PySparkException as exc:
        raise ChangelogError(f"changelog could not be read: {_first_line(exc)}") from None


def _sql_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


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
    elif found.distinct_lsns is not None and found.distinct_lsns < found.lsns:
        issues.append(f"duplicate LSNs ({found.lsns - found.distinct_lsns} repeated row(s))")
    if found.null_keys:
        issues.append(f"{found.null_keys} row(s) with a null key")
    if found.unknown_ops:
        issues.append(
            f"{found.unknown_ops} row(s) with an unknown op (only {' and '.join(KNOWN_OPS)})"
        )
    return issues


def _applied(plan: PartitionPlan) -> str:
    """The SQL condition for the records ``plan`` applies."""
    return f"lsn > {plan.base_lsn:d} AND lsn <= {plan.target_lsn:d}"


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
