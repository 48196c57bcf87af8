"""Reading the changelog a job needs, and checking it.

Validation reads the ``lsn``, ``key`` and ``op`` columns of every segment the job needs,
in one scan, and groups by file (by its size when no two of the job's segments have the
same size, a cheaper key than its path) with hash aggregates only: row counts, LSN min/max, null
keys, unknown ops, and the spread of ``lsn - row index``. Where that spread is zero, the
file's LSNs are consecutive in file order, hence distinct, and the records applied are
the run's overlap with the plan's range: true of every segment a producer writes in log
order with dense LSNs. Only the files it cannot prove so (sparse LSNs, rows out of
order, or duplicates) get the exact check: distinct LSNs counted with Spark's bitmap
aggregates, per (file, 32768-LSN bucket), and records applied. That pass is kept for them
because bitmap aggregates need a sort-based aggregation (a sort of every row it reads).
Duplicate, out-of-range or null LSNs, null keys and unknown ops are then reported per
file, every bad file in one message.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F  # noqa: N812 - the PySpark convention

from jobs.errors import ChangelogError
from jobs.frames import union_all
from jobs.schema import CHANGELOG_SCHEMA, KNOWN_OPS, OP_PUT
from jobs.storage import ObjectStore
from snapledger.core.coverage import ChangelogRange
from snapledger.layout import SegmentLocation

_MAX_REPORTED_FILES = 5
_KNOWN_OPS_SQL = ", ".join(f"'{op}'" for op in KNOWN_OPS)
# Expressions are SQL text throughout: one py4j call each, where a Column built from
# functions costs one per function and operand.
_FILE_STATS_SQL = (  # per file
    "count(1) AS rows",
    "count(lsn) AS lsns",
    "min(lsn) AS min_lsn",
    "max(lsn) AS max_lsn",
    "min(lsn - row_index) AS min_offset",
    "max(lsn - row_index) AS max_offset",
    "count_if(null_key) AS null_keys",
    "count_if(unknown_op) AS unknown_ops",
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


def read_segments(spark: SparkSession, store: ObjectStore, plan: ChangelogRange) -> DataFrame:
    """Every row of the segments ``plan`` reads; the plan must have segments."""
    return spark.read.schema(CHANGELOG_SCHEMA).parquet(*(store.uri(s.key) for s in plan.segments))


def applied_changes(segments: DataFrame, plan: ChangelogRange) -> DataFrame:
    """``key, value, lsn, op`` of the records ``plan`` applies, from its ``segments``."""
    applied = _applied_unless_whole(plan)
    rows = segments if applied is None else segments.where(applied)
    return rows.selectExpr("key", "value", "lsn", "op")


def read_state_and_changes(
    spark: SparkSession, store: ObjectStore, state_keys: Sequence[str], plan: ChangelogRange
) -> DataFrame:
    """One scan of a state's files (``state_keys``) and of ``plan``'s segments: ``key,
    value, lsn, op``, the state's rows as puts (a snapshot file has no ``op``, which reads
    as NULL) and the changes the plan applies. A changelog row with a NULL op passes as a
    put here, but validation fails the job on it."""
    paths = [*(store.uri(key) for key in state_keys), *(store.uri(s.key) for s in plan.segments)]
    rows = spark.read.schema(CHANGELOG_SCHEMA).parquet(*paths)
    applied = _applied_unless_whole(plan)
    if applied is not None:
        rows = rows.where(f"op IS NULL OR ({applied})")
    return rows.selectExpr("key", "value", "lsn", f"coalesce(op, '{OP_PUT}') AS op")


def validate_changelog(
    spark: SparkSession,
    store: ObjectStore,
    plans: Sequence[ChangelogRange],
    segment_bytes: Mapping[str, int] | None = None,
) -> dict[int, int]:
    """Check every segment the plans read; returns the records applied per partition.
    ``segment_bytes`` (a segment's key: its size as listed) lets the scan group by size."""
    applied = {plan.partition: 0 for plan in plans}
    segments = {(plan.partition, s.name): (plan, s) for plan in plans for s in plan.segments}
    if not segments:
        return applied
    # One scan of every file, grouped by file, rather than one scan per partition: fewer
    # tasks, fewer plans to build and run (docs/jobs.md, "Measurements").
    paths = [store.uri(segment.key) for _, segment in segments.values()]
    by_size = _segments_by_size(segments, segment_bytes or {})
    aggregates = (
        spark.read.schema(CHANGELOG_SCHEMA)
        .parquet(*paths)
        .selectExpr(
            # A fixed-width grouping key is cheaper to hash than a path, per row.
            f"_metadata.{'file_size' if by_size else 'file_path'} AS file",
            "_metadata.row_index AS row_index",
            "lsn",
            "key IS NULL AS null_key",
            f"NOT coalesce(op IN ({_KNOWN_OPS_SQL}), false) AS unknown_op",
        )
        .groupBy("file")
        .agg(*(F.expr(aggregate) for aggregate in _FILE_STATS_SQL))
    )
    stats: dict[tuple[int, str], _FileStats] = {}
    for row in _collect(aggregates):
        key = by_size.get(row["file"]) if by_size else _partition_and_name(row["file"])
        if key is None:
            raise ChangelogError(
                f"a segment of {row['file']} bytes was read, which no segment listed had: "
                "the changelog changed while the job ran; run the job again"
            )
        if key not in segments:
            raise RuntimeError(f"validation read {row['file']}, which no plan names")
        plan, _ = segments[key]
        offset = row["min_offset"]
        consecutive = offset is not None and offset == row["max_offset"]
        stats[key] = _FileStats(
            rows=row["rows"],
            lsns=row["lsns"],
            # Consecutive in file order (LSN = offset + row index): distinct, and the
            # applied ones are the run's overlap with the plan's range.
            distinct_lsns=row["lsns"] if consecutive else None,
            min_lsn=row["min_lsn"],
            max_lsn=row["max_lsn"],
            null_keys=row["null_keys"],
            unknown_ops=row["unknown_ops"],
            applied=_applied_in_run(offset, row["rows"], plan) if consecutive else 0,
        )
    unproven = [segments[key] for key, found in stats.items() if found.distinct_lsns is None]
    if unproven:
        for key, (distinct, applied_rows) in _count_distinct_lsns(spark, store, unproven).items():
            stats[key].distinct_lsns = distinct
            stats[key].applied = applied_rows
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


def _segments_by_size(
    segments: Mapping[tuple[int, str], tuple[ChangelogRange, SegmentLocation]],
    segment_bytes: Mapping[str, int],
) -> dict[int, tuple[int, str]]:
    """Each segment's (partition, name) by its size, when every size is known and no two
    are equal; else empty (validation then groups by path)."""
    sizes = {key: segment_bytes.get(segment.key) for key, (_, segment) in segments.items()}
    by_size = {size: key for key, size in sizes.items() if size is not None}
    return by_size if len(by_size) == len(sizes) else {}


def _partition_and_name(path: str) -> tuple[int, str]:
    """(partition, file name) of a segment's path, .../{partition}/{name} (layout.py)."""
    partition, name = path.rsplit("/", 2)[-2:]
    return int(unquote(partition)), unquote(name)


def _applied_in_run(first: int, rows: int, plan: ChangelogRange) -> int:
    """How many of the LSNs first .. first + rows - 1 the plan applies."""
    return max(0, min(first + rows - 1, plan.target_lsn) - max(first, plan.base_lsn + 1) + 1)


def _count_distinct_lsns(
    spark: SparkSession, store: ObjectStore, files: Sequence[tuple[ChangelogRange, SegmentLocation]]
) -> dict[tuple[int, str], tuple[int, int]]:
    """For each of ``files``: (distinct LSNs, records the plan applies), exactly."""
    by_plan: dict[int, list[SegmentLocation]] = defaultdict(list)
    plans = {}
    for plan, segment in files:
        by_plan[plan.partition].append(segment)
        plans[plan.partition] = plan
    frames = [
        spark.read.schema(CHANGELOG_SCHEMA)
        .parquet(*(store.uri(segment.key) for segment in segments))
        .selectExpr(
            f"{partition:d} AS partition",
            "_metadata.file_name AS file",
            "lsn",
            f"{_applied(plans[partition])} AS applied",
        )
        for partition, segments in sorted(by_plan.items())
    ]
    combined = union_all(frames)
    assert combined is not None  # there is at least one file
    buckets = combined.groupBy(
        "partition", "file", F.expr("bitmap_bucket_number(lsn) AS bucket")
    ).agg(F.expr(_DISTINCT_LSNS_SQL), F.expr("count_if(applied) AS applied"))
    counted: dict[tuple[int, str], tuple[int, int]] = {}
    for row in _collect(buckets):
        key = (row["partition"], row["file"])
        distinct, applied = counted.get(key, (0, 0))
        counted[key] = (distinct + (row["distinct"] or 0), applied + row["applied"])
    return counted


def _collect(frame: DataFrame) -> list[Row]:
    try:
        return frame.collect()
    except PySparkException as exc:
        raise ChangelogError(f"changelog could not be read: {_first_line(exc)}") from None


def _problems(
    plans: Sequence[ChangelogRange], stats: dict[tuple[int, str], _FileStats]
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


def _applied(plan: ChangelogRange) -> str:
    """The SQL condition for the records ``plan`` applies."""
    return f"lsn > {plan.base_lsn:d} AND lsn <= {plan.target_lsn:d}"


def _applied_unless_whole(plan: ChangelogRange) -> str | None:
    """``_applied(plan)``, or None when every segment's name lies within the plan's range:
    a row outside its segment's name fails validation, which cancels the job's write, so
    such segments are read whole. This is also what keeps the bounds, which differ from
    partition to partition, out of the code Spark generates for each partition's scan:
    partitions whose scans differ only in them share one compiled class (and the JIT's
    work on it) instead of one each."""
    inside = all(
        plan.base_lsn < s.first_lsn and s.last_lsn <= plan.target_lsn for s in plan.segments
    )
    return None if inside else _applied(plan)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
