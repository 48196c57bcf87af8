"""``run_job``: one bootstrap, restore or compaction over many partitions of a stream.

The steps, in order; each partition's output is committed only by its descriptor:

1. load and check each base snapshot's manifest and its files' schemas, and start
   checking their checksums (verify.py);
2. plan each partition's changelog range from segment names (coverage.py);
3. compact all partitions in one Spark plan (compaction.py) and write the result once,
   staged (output.py), while validating the segments (changelog.py: one aggregation
   pass, and an exact one for files it cannot prove; concurrency.py): a validation
   failure cancels the write;
4. check the base files' checksums; only then move each partition's files into its
   prefix, read back sizes, rows and checksums;
5. write every descriptor, last.

Steps 1 and 2 run at once (each waits on the store, not on Spark), and step 3 builds
its input frames while validation plans and starts its scan. The result carries each
step's wall seconds (``JobResult.stage_seconds``): a job's fixed cost is in steps 1, 2,
4 and 5, its work in 3.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from pyspark.sql import DataFrame, SparkSession

from jobs.args import JobArgs
from jobs.changelog import (
    applied_changes,
    read_segments,
    read_state_and_changes,
    validate_changelog,
)
from jobs.compaction import compacted, merges_into_state
from jobs.concurrency import validate_while_writing
from jobs.coverage import ChangelogPlan, plan_partition
from jobs.descriptors import Provenance, manifest, restore_descriptor
from jobs.layout import (
    restore_prefix,
    snapshot_location,
    snapshot_prefix,
    staging_prefix,
)
from jobs.output import DataFile, describe_files, publish_files, write_descriptor, write_staged
from jobs.settings import job_settings
from jobs.snapshots import BaseSnapshot, load_base, read_base_rows
from jobs.split import cores, merge_ranges, split_min_rows
from jobs.storage import ObjectStore, StoredFile
from jobs.verify import ChecksumVerification
from snapledger.core.coverage import ChangelogRange
from snapledger.ids import new_ulid
from snapledger.job_kinds import job_kind

_PARTITION_THREADS = 8


@dataclass(frozen=True)
class PartitionResult:
    """One partition's committed output."""

    partition: int
    prefix: str  # relative to the root
    descriptor_key: str  # the _manifest.json or _restore.json written last
    lsn: int  # the state is as of this LSN
    row_count: int
    snapshot_id: str | None  # None for a restore
    base_snapshot_id: str | None
    base_lsn: int | None
    changelog_rows: int  # records applied from the changelog
    base_rows: int  # rows read from the base snapshot

    @property
    def rows_read(self) -> int:
        return self.changelog_rows + self.base_rows


@dataclass(frozen=True)
class JobResult:
    job_id: str
    kind: str
    stream: str
    partitions: tuple[PartitionResult, ...]
    # Wall seconds of each step, in order: bases_and_plans, compact_and_write (building
    # the inputs, and validation), verify_checksums, publish, describe, commit.
    stage_seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def run_job(spark: SparkSession, args: JobArgs) -> JobResult:
    """Run one job in ``spark``; raises a JobError subclass on bad arguments or data."""
    args.validate()
    with job_settings(spark):
        return _run_job(spark, args)


def _run_job(spark: SparkSession, args: JobArgs) -> JobResult:
    store = ObjectStore(spark, args.root)
    # Listings, renames and small writes wait on the store, and building a DataFrame on
    # py4j round trips and the JVM's analysis: each is done for several partitions at once.
    stages = _Stages()
    with ThreadPoolExecutor(max_workers=_PARTITION_THREADS) as pool:
        # A partition's plan needs its base's LSN, which the prefix names: the plans are
        # made while the manifests and footers are read, and checked against them after.
        planned = {
            p: pool.submit(_plan, store, args, p, _prefix_lsn(args.bases.get(p)))
            for p in args.partitions
        }
        loaded = pool.map(lambda item: load_base(store, args.stream, *item), args.bases.items())
        bases = {base.partition: base for base in loaded}
        verification = ChecksumVerification(store, (f for b in bases.values() for f in b.files))
        try:
            partition_plans = [planned[p].result() for p in args.partitions]
            plans = [plan.range for plan in partition_plans]
            segment_bytes = {k: n for p in partition_plans for k, n in p.segment_bytes.items()}
            stages.end("bases_and_plans")
            changes_in = sum(plan.records_at_most for plan in plans)
            state_rows = sum(base.row_count for base in bases.values())
            # A merge reads each partition's state and changes in one scan; a join, apart.
            one_scan = merges_into_state(changes_in, state_rows)
            # A partition with more than a core's share of the rows is merged by several
            # tasks, each a range of its keys (jobs/split.py).
            ranges = merge_ranges(
                {
                    plan.partition: plan.records_at_most
                    + (bases[plan.partition].row_count if plan.partition in bases else 0)
                    for plan in plans
                },
                cores(spark),
                split_min_rows(spark),
            )
            staging = staging_prefix(args.job_id, new_ulid())

            def compact_and_write() -> dict[int, list[StoredFile]]:
                # The input frames are built here, beside validation's own planning and
                # first tasks, rather than before both.
                inputs = list(
                    pool.map(
                        lambda plan: _inputs(spark, store, plan, bases, one_scan=one_scan), plans
                    )
                )
                base_rows = {i.partition: i.base_rows for i in inputs if i.base_rows is not None}
                changes = {i.partition: i.changes for i in inputs if i.changes is not None}
                merge_inputs = {i.partition: i.merged for i in inputs if i.merged is not None}
                with compacted(
                    spark,
                    base_rows,
                    changes,
                    partitions=args.partitions,
                    changes_in=changes_in,
                    state_rows=state_rows,
                    merge_inputs=merge_inputs,
                    merge_ranges=ranges,
                ) as state:
                    return write_staged(
                        state, store, staging, args.partitions, args.max_rows_per_file
                    )

            try:
                try:
                    applied, staged = validate_while_writing(
                        spark,
                        lambda: validate_changelog(spark, store, plans, segment_bytes),
                        compact_and_write,
                    )
                except Exception:
                    # A changed base file can break the read itself: name it, if it is one.
                    verification.check()
                    raise
                stages.end("compact_and_write")
                verification.check()  # before the first file is published
                stages.end("verify_checksums")
                prefixes = {plan.partition: _output_prefix(store, args, plan) for plan in plans}
                moved = pool.map(lambda p: publish_files(store, staged[p], prefixes[p]), prefixes)
                published = dict(zip(prefixes.values(), moved, strict=True))
            finally:
                store.delete(staging, recursive=True)
            stages.end("publish")
            described = describe_files(store, published)
            stages.end("describe")
            committed = [
                _committed(
                    args,
                    plan,
                    bases.get(plan.partition),
                    prefix=prefixes[plan.partition],
                    files=described[prefixes[plan.partition]],
                    changelog_rows=applied[plan.partition],
                )
                for plan in plans
            ]
            # The descriptors come last: each one commits its partition.
            for _ in pool.map(lambda c: write_descriptor(store, *c[1]), committed):
                pass
            stages.end("commit")
        finally:
            verification.cancel()  # when the job stops early: no reads left behind
    return JobResult(
        args.job_id, args.kind, args.stream, tuple(c[0] for c in committed), stages.seconds
    )


class _Stages:
    """Wall seconds of a job's steps, each from the end of the one before."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def end(self, stage: str) -> None:
        now = time.perf_counter()
        self.seconds[stage] = round(now - self._last, 4)
        self._last = now


def _prefix_lsn(prefix: str | None) -> int | None:
    """The LSN a base snapshot's prefix names (None: no base, or not a snapshot prefix;
    ``load_base`` refuses the latter, naming it)."""
    location = snapshot_location(prefix) if prefix is not None else None
    return location.lsn if location is not None else None


def _committed(
    args: JobArgs,
    plan: ChangelogRange,
    base: BaseSnapshot | None,
    *,
    prefix: str,
    files: list[DataFile],
    changelog_rows: int,
) -> tuple[PartitionResult, tuple[str, dict[str, object]]]:
    """A partition's result, and the descriptor that commits it with its key."""
    provenance = Provenance(
        job_id=args.job_id,
        base_snapshot_id=base.snapshot_id if base else None,
        base_lsn=base.lsn if base else None,
        base_offsets=base.offsets if base else None,
        changelog_from_lsn=plan.base_lsn + 1 if plan.segments else None,
        changelog_to_lsn=plan.target_lsn if plan.segments else None,
    )
    descriptor: dict[str, object]
    kind = job_kind(args.kind)
    descriptor_key = prefix + kind.descriptor_name
    if not kind.writes_snapshot:
        descriptor = restore_descriptor(
            stream=args.stream,
            partition=plan.partition,
            lsn=plan.target_lsn,
            provenance=provenance,
            files=files,
        )
        snapshot_id = None
    else:
        snapshot_id = prefix.rstrip("/").rsplit("-", 1)[1]
        descriptor = manifest(
            stream=args.stream,
            partition=plan.partition,
            lsn=plan.target_lsn,
            snapshot_id=snapshot_id,
            epoch=args.epoch,
            kind=args.kind,
            provenance=provenance,
            files=files,
        )
    result = PartitionResult(
        partition=plan.partition,
        prefix=prefix,
        descriptor_key=descriptor_key,
        lsn=plan.target_lsn,
        row_count=sum(f.rows for f in files),
        snapshot_id=snapshot_id,
        base_snapshot_id=provenance.base_snapshot_id,
        base_lsn=provenance.base_lsn,
        changelog_rows=changelog_rows,
        base_rows=base.row_count if base else 0,
    )
    return result, (descriptor_key, descriptor)


@dataclass(frozen=True)
class _PartitionInputs:
    """One partition's input frames; None where it has no base or no segments."""

    partition: int
    base_rows: DataFrame | None
    changes: DataFrame | None  # the records applied
    merged: DataFrame | None  # or both, from one scan, for a merge


def _inputs(
    spark: SparkSession,
    store: ObjectStore,
    plan: ChangelogRange,
    bases: dict[int, BaseSnapshot],
    *,
    one_scan: bool,
) -> _PartitionInputs:
    base = bases.get(plan.partition)
    state_keys = base.file_keys if base is not None else ()
    if one_scan and state_keys and plan.segments:
        merged = read_state_and_changes(spark, store, state_keys, plan)
        return _PartitionInputs(plan.partition, None, None, merged)
    base_rows = read_base_rows(spark, store, base) if base is not None and state_keys else None
    changes = applied_changes(read_segments(spark, store, plan), plan) if plan.segments else None
    return _PartitionInputs(plan.partition, base_rows, changes, None)


def _plan(store: ObjectStore, args: JobArgs, partition: int, base_lsn: int | None) -> ChangelogPlan:
    return plan_partition(store, args.stream, partition, base_lsn, args.target_for(partition))


def _output_prefix(store: ObjectStore, args: JobArgs, plan: ChangelogRange) -> str:
    if job_kind(args.kind).writes_snapshot:
        return snapshot_prefix(args.stream, plan.partition, plan.target_lsn, new_ulid())
    prefix = restore_prefix(args.job_id, plan.partition)
    # A rerun of the same job id (EMR Serverless retries) replaces what an attempt left.
    store.delete(prefix, recursive=True)
    return prefix
