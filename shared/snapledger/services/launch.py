"""Launch a bootstrap, restore or compaction job, idempotently by request id.

validate → resolve each partition's base snapshot → check the changelog covers
(base LSN, target] with no gap or overlap (snapledger.core.coverage, the jobs' rule too)
→ record the job → pin the bases (one lineage command each) → start the run with the job
id as client token → record SUBMITTED.

A launch that crashed part-way is resumed by the same request: the job id is derived
from the request id, every step is idempotent, and the runner's client token makes the
start happen once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from snapledger.clock import Clock
from snapledger.core.coverage import CoverageError, changelog_range, segments_named
from snapledger.core.job_sizing import PartitionInput
from snapledger.core.jobs import advance_job, check_exclusive, recorded_resources
from snapledger.errors import InvalidRequestError, JobStartError, NotFoundError
from snapledger.job_kinds import Base, JobKind, job_kind
from snapledger.layout import lineage_changelog_prefix, snapshot_prefix
from snapledger.models.commands import RequestJob
from snapledger.models.generations import GenerationStatus, StreamGeneration
from snapledger.models.jobs import (
    JobRecord,
    JobState,
    JobTransition,
    PartitionPlan,
)
from snapledger.models.ledger import LineageId, SnapshotRecord, SnapshotStatus, snapshot_sort_key
from snapledger.models.requests import (
    FromGeneration,
    FromLsn,
    FromSnapshotId,
    FromTime,
    LaunchRequest,
)
from snapledger.ports import (
    JobRunner,
    JobRunSpec,
    JobStore,
    Ledger,
    ObjectStore,
    StreamLogStore,
)
from snapledger.services import generation_reads, queries
from snapledger.services.commands import execute
from snapledger.services.job_state import base_keys, record_on_lineages, update_job


@dataclass(frozen=True)
class LaunchDeps:
    ledger: Ledger
    jobs: JobStore
    runner: JobRunner
    store: ObjectStore
    clock: Clock
    streams: StreamLogStore | None = None  # needed to restore a stream to a generation


@dataclass(frozen=True)
class LaunchResult:
    job: JobRecord
    created: bool  # False: the request had been seen; this is the job it started

    def to_dict(self) -> dict[str, object]:
        return {
            "job_id": self.job.job_id,
            "kind": self.job.job_kind.value,
            "stream": self.job.stream,
            "state": self.job.state.value,
            "run_id": self.job.run_id,
            "created": self.created,
            "partitions": [p.model_dump(mode="json") for p in self.job.partitions],
            "failure_reason": self.job.failure_reason,
        }


def job_id_for(kind: JobKind, request_id: str) -> str:
    """The job id of a request: the same request always names the same job."""
    return f"{kind.value}-{hashlib.sha256(request_id.encode()).hexdigest()[:24]}"


def launch(request: LaunchRequest, *, request_id: str, deps: LaunchDeps) -> LaunchResult:
    """Start the job ``request`` asks for, or answer with the one it already started."""
    rid = request.request_id or request_id
    job_id = job_id_for(request.action, rid)
    existing = deps.jobs.get(job_id)
    if existing is not None and (existing.run_id is not None or existing.terminal):
        return LaunchResult(job=existing, created=False)
    if existing is None:
        generation = _generation_of(request, deps)
        partitions = (
            request.partition_list
            if request.names_partitions or generation is None
            else list(generation.partitions)
        )
        planned = [plan_partition(request, p, deps, generation=generation) for p in partitions]
        plans = [plan for plan, _ in planned]
        inputs = {plan.partition: read for plan, read in planned}
        writes_snapshots = job_kind(request.action).writes_snapshot
        if writes_snapshots and len({p.epoch for p in plans}) > 1:
            epochs = ", ".join(f"{p.partition}: {p.epoch}" for p in plans)
            raise InvalidRequestError(
                f"the partitions have different writer epochs ({epochs}) and the snapshots "
                "a job writes carry one: launch them in separate requests"
            )
        now = deps.clock.now()
        job = deps.jobs.create(
            JobRecord(
                job_id=job_id,
                request_id=rid,
                job_kind=request.action,
                stream=request.stream,
                partitions=tuple(plans),
                requested_at=now,
                updated_at=now,
                transitions=(JobTransition(state=JobState.REQUESTED, at=now),),
            )
        )
    else:
        job = existing  # an earlier launch of this request stopped before the start
        inputs = _measured_inputs(job, deps)
    pinned: list[PartitionPlan] = []
    try:
        for plan in job.partitions:
            _request_on_lineage(job, plan, deps)
            pinned.append(plan)
    except InvalidRequestError as exc:
        failed = _fail(job, pinned, f"the lineage refused the job: {exc}", deps)
        return LaunchResult(job=failed, created=existing is None)
    spec = JobRunSpec(
        job_id=job.job_id,
        kind=job.job_kind,
        stream=job.stream,
        root=deps.store.uri,
        partitions=list(job.partitions),
        inputs=inputs,
    )
    spec = replace(spec, size=deps.runner.size(spec))  # sized once: start uses it, the job keeps it
    try:
        run_id = deps.runner.start(spec)
    except JobStartError as exc:
        failed = _fail(job, pinned, f"the job runner refused the job: {exc}", deps)
        return LaunchResult(job=failed, created=existing is None)
    resources = None if spec.size is None else recorded_resources(spec.size)
    submitted, _ = update_job(
        deps.jobs,
        job,
        deps.clock,
        lambda current, now: advance_job(
            current, JobState.SUBMITTED, now, run_id=run_id, resources=resources
        ),
    )
    record_on_lineages(
        deps.ledger,
        job,
        job.partitions,
        state=JobState.SUBMITTED,
        run_id=run_id,
        clock=deps.clock,
    )
    return LaunchResult(job=submitted, created=existing is None)


def plan_partition(
    request: LaunchRequest,
    partition: int,
    deps: LaunchDeps,
    *,
    generation: StreamGeneration | None = None,
) -> tuple[PartitionPlan, PartitionInput]:
    """Resolve the base snapshot and the target LSN of one partition, or raise why not;
    and what the job reads for it (the base's bytes, the bytes of the segments in range)."""
    lineage = LineageId(stream=request.stream, partition=partition)
    needs_base = job_kind(request.action).base is not Base.NONE
    if generation is not None:
        base: SnapshotRecord | None = _member_base(generation, lineage, deps)
    else:
        base = resolve_base(request, lineage, deps) if needs_base else None
    if base is not None:
        refuse_unrestorable(base, lineage)
    if base is not None and base.format != "kv-parquet":
        raise InvalidRequestError(
            f"the snapshot {base.snapshot_id} of {lineage} (LSN {base.lsn}) is {base.format}: "
            "the jobs read only kv-parquet snapshots (Parquet files of key, value, lsn). "
            'Start from a kv-parquet snapshot (from {"snapshot_id": ...} or {"lsn": ...}) '
            "or bootstrap the partition from its changelog"
        )
    base_lsn = None if base is None else base.lsn
    target_lsn = request.target_for(partition)
    target, changes = _changelog_span(request.stream, partition, deps, base_lsn, target_lsn)
    head = deps.ledger.get_head(lineage)
    if head is not None:
        check_exclusive(head, request.action)  # the lineage's Decider checks it again
    epoch = head.max_epoch if head is not None and head.max_epoch is not None else 0
    if base is None:
        plan = PartitionPlan(partition=partition, target_lsn=target, epoch=epoch)
        return plan, PartitionInput(base_bytes=0, changes_bytes=changes)
    plan = PartitionPlan(
        epoch=epoch,
        partition=partition,
        base_snapshot_id=base.snapshot_id,
        base_lsn=base.lsn,
        base_prefix=snapshot_prefix(base.stream, base.partition, base.lsn, base.snapshot_id),
        target_lsn=target,
    )
    return plan, PartitionInput(base_bytes=base.total_bytes, changes_bytes=changes)


def _changelog_span(
    stream: str, partition: int, deps: LaunchDeps, base_lsn: int | None, target_lsn: int | None
) -> tuple[int, int]:
    """The target LSN of (base_lsn, target_lsn] (core.coverage's rule) and the bytes of
    the segments that replay it, from one listing of the partition's changelog."""
    folder = lineage_changelog_prefix(stream, partition)
    sizes = {info.key.removeprefix(folder): info.size for info in deps.store.list(folder)}
    segments = segments_named(stream, partition, sizes)
    span = changelog_range(stream, partition, segments, base_lsn, target_lsn)
    return span.target_lsn, sum(sizes[segment.name] for segment in span.segments)


def _measured_inputs(job: JobRecord, deps: LaunchDeps) -> dict[int, PartitionInput]:
    """What a job whose launch stopped before the start reads, measured again from its
    plans; empty (the application's default sizes) if a base record is gone or the range
    no longer resolves: the job itself then says why."""
    inputs = {}
    for plan in job.partitions:
        base = 0
        if plan.base_snapshot_id is not None and plan.base_lsn is not None:
            lineage = LineageId(stream=job.stream, partition=plan.partition)
            key = snapshot_sort_key(plan.base_lsn, plan.base_snapshot_id)
            record = deps.ledger.get_snapshot(lineage, key)
            if record is None:
                return {}
            base = record.total_bytes
        try:
            _, changes = _changelog_span(
                job.stream, plan.partition, deps, plan.base_lsn, plan.target_lsn
            )
        except CoverageError:
            return {}
        inputs[plan.partition] = PartitionInput(base_bytes=base, changes_bytes=changes)
    return inputs


def _generation_of(request: LaunchRequest, deps: LaunchDeps) -> StreamGeneration | None:
    """The completed generation a restore names in 'from', or None; raise why not."""
    if not isinstance(request.from_, FromGeneration):
        return None
    if deps.streams is None:
        raise TypeError("launch needs LaunchDeps.streams to restore a generation")
    number = request.from_.generation
    generation = generation_reads.get_generation(deps.streams, request.stream, number)
    if generation.status is not GenerationStatus.COMPLETED:
        why = f": {generation.failure_reason}" if generation.failure_reason else ""
        raise InvalidRequestError(
            f"generation {number} of {request.stream} is {generation.status.value}{why}; only "
            "a COMPLETED generation can be restored (query 'generations' to find one)"
        )
    named = request.partition_list if request.names_partitions else []
    outside = sorted(set(named) - set(generation.partitions))
    outside += sorted(set(request.target_lsns or {}) - set(generation.partitions) - set(outside))
    if outside:
        members = ", ".join(map(str, generation.partitions))
        raise InvalidRequestError(
            f"partitions {outside} are not members of generation {number} ({members})"
        )
    return generation


def _member_base(
    generation: StreamGeneration, lineage: LineageId, deps: LaunchDeps
) -> SnapshotRecord:
    member = generation.members[lineage.partition]
    record = queries.by_id(deps.ledger, lineage, member.snapshot_id)
    if record.status is not SnapshotStatus.REGISTERED:
        raise InvalidRequestError(
            f"generation {generation.generation}'s snapshot {member.snapshot_id} of {lineage} "
            f"is {record.status.value}: GC collected it (the retention policy's "
            "min_generations keeps the members of the newest completed generations); "
            "restore a newer generation"
        )
    return record


def resolve_base(request: LaunchRequest, lineage: LineageId, deps: LaunchDeps) -> SnapshotRecord:
    """The base a restore names. ``"latest"``, an LSN or a time resolve to the newest
    REGISTERED snapshot that heal has not found broken (a broken latest is passed over for
    the newest usable one below it); a snapshot named by id is taken as it is, and
    ``refuse_unrestorable`` refuses it if it is not usable."""
    selector = request.from_
    if selector == "latest":
        head = queries.latest(deps.ledger, lineage)
        assert head.latest_lsn is not None and head.latest_snapshot_id is not None
        record = deps.ledger.get_snapshot(
            lineage, snapshot_sort_key(head.latest_lsn, head.latest_snapshot_id)
        )
        if record is None:
            raise NotFoundError(f"the latest snapshot of {lineage} has no record: report this")
        if record.broken:
            return queries.as_of_lsn(deps.ledger, lineage, record.lsn, skip_broken=True)
        return record
    if isinstance(selector, FromSnapshotId):
        return queries.by_id(deps.ledger, lineage, selector.snapshot_id)
    if isinstance(selector, FromLsn):
        return queries.as_of_lsn(deps.ledger, lineage, selector.lsn, skip_broken=True)
    assert isinstance(selector, FromTime)  # a generation's members: _member_base
    return queries.as_of_time(deps.ledger, lineage, selector.time, skip_broken=True)


#: Why a snapshot that is not REGISTERED cannot be a job's base, by its status.
_NOT_RESTORABLE = {
    SnapshotStatus.EXPIRING: "GC is deleting its files",
    SnapshotStatus.DELETED: "GC deleted its files",
    SnapshotStatus.REJECTED: "registration rejected it",
}


def refuse_unrestorable(base: SnapshotRecord, lineage: LineageId) -> None:
    """Refuse, before anything is recorded, a base that is not REGISTERED (the lineage
    would refuse to pin it, and the job would be recorded FAILED for nothing), or that heal
    found broken (the job would read missing or damaged files)."""
    if base.status is SnapshotStatus.REGISTERED and base.broken:
        raise InvalidRequestError(
            f"the snapshot {base.snapshot_id} of {lineage} (LSN {base.lsn}) was found broken "
            f"({'; '.join(base.broken)}): it cannot be a job's base. Start from another "
            'snapshot (from "latest", {"lsn": ...} or {"time": ...} pass over broken ones; '
            "list the lineage's snapshots to see them)"
        )
    if base.status is SnapshotStatus.REGISTERED:
        return
    why = _NOT_RESTORABLE.get(base.status, "it is not live")
    if base.status is SnapshotStatus.REJECTED and base.rejection_reason:
        why += f" ({base.rejection_reason})"
    raise InvalidRequestError(
        f"the snapshot {base.snapshot_id} of {lineage} (LSN {base.lsn}) is "
        f"{base.status.value}: {why}; only a REGISTERED snapshot can be a job's base. "
        'Start from a REGISTERED one (from "latest", {"lsn": ...} or {"snapshot_id": ...}; '
        "list the lineage's snapshots to see them)"
    )


def _request_on_lineage(job: JobRecord, plan: PartitionPlan, deps: LaunchDeps) -> None:
    execute(
        deps.ledger,
        RequestJob(
            stream=job.stream,
            partition=plan.partition,
            job_id=job.job_id,
            job_kind=job.job_kind,
            base_snapshot_id=plan.base_snapshot_id,
            base_lsn=plan.base_lsn,
            target_lsn=plan.target_lsn,
        ),
        deps.clock.now(),
        snapshot_keys=base_keys(plan),
    )


def _fail(
    job: JobRecord, requested: list[PartitionPlan], reason: str, deps: LaunchDeps
) -> JobRecord:
    """Record the job FAILED with its cause and release what it had pinned."""
    failed, _ = update_job(
        deps.jobs,
        job,
        deps.clock,
        lambda current, now: advance_job(current, JobState.FAILED, now, reason=reason),
    )
    record_on_lineages(
        deps.ledger, job, requested, state=JobState.FAILED, reason=reason, clock=deps.clock
    )
    return failed
