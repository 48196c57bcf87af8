"""Apply a lineage's retention plan, crash-safe: EXPIRING → delete objects → DELETED.

1. ``ExpireSnapshots`` marks the plan's new deletions EXPIRING in one transaction per 40,
   each re-checked against the state read for the commit (HEAD first, then the targets
   and the newest ``min_count``): a pin, hold or new latest that arrived since the plan
   wins, and the snapshot is reported as spared.
2. Every EXPIRING snapshot (new, or left by an earlier run) has the objects of its prefix,
   from the lineage's one listing, queued in the run's deletion batch (up to 1,000 keys
   per DeleteObjects, across snapshots and lineages, manifest last).
3. ``MarkSnapshotsDeleted`` records the ones whose objects are all gone (after the batch
   that sent their last key).
4. Once all of them are resolved, the trim point moves forward to the oldest retained
   snapshot (``TrimPointAdvanced``), and, if the stream's policy says so, changelog
   segments wholly below it are deleted.

A crash anywhere leaves the ledger saying what is in progress: a rerun finds EXPIRING
snapshots and finishes them; nothing is deleted that is not EXPIRING first. Two runs at
once both pass through the same conditional transactions: one wins each write, the
other's decision is re-made on the winner's state and changes nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from snapledger.core.gc_rules import expiry_refusal, restorable_newer
from snapledger.core.references import keys_to_delete
from snapledger.core.retention import (
    CAPS,
    Doomed,
    Named,
    RetentionPlan,
    plan,
    trim_point,
)
from snapledger.core.state import LineageState
from snapledger.errors import InvalidKeyError
from snapledger.gc_settings import GcConfig
from snapledger.layout import lineage_changelog_prefix, parse_segment_key
from snapledger.layouts.lineage import folder_of_manifest
from snapledger.layouts.strategy import LayoutStrategy
from snapledger.models.events import LedgerEvent, SnapshotExpiring, TrimPointAdvanced
from snapledger.models.gc_commands import (
    MAX_EXPIRE_PER_COMMAND,
    MAX_MARK_PER_COMMAND,
    AdvanceTrimPoint,
    DeletedPrefix,
    ExpireSnapshots,
    ExpiryTarget,
    TrimProposal,
)
from snapledger.models.generations import ProtectedGenerations
from snapledger.models.ledger import Head, SnapshotRecord, SnapshotStatus
from snapledger.models.policy import RetentionPolicy
from snapledger.ports import MAX_KEYS_PER_REQUEST, ObjectInfo
from snapledger.services import queries
from snapledger.services.commands import execute
from snapledger.services.deletion_batch import (
    DeletionBatch,
    DeletionUnit,
    Finish,
    LineageTicket,
    mark_deleted,
)
from snapledger.services.gc_deps import Budget, GcDeps
from snapledger.services.gc_report import LineageReport
from snapledger.services.object_deletion import DeletionFailedError, delete_objects, list_prefix


@dataclass
class Applied:
    """What expiring leaves for the rest of the lineage's pass."""

    statuses: dict[str, SnapshotStatus]  # sort key -> status after expiring
    expiring: list[SnapshotRecord]  # every EXPIRING snapshot, to delete
    stopped: bool  # the time budget ran out before every transaction was made


def plan_lineage(
    deps: GcDeps[LayoutStrategy],
    head: Head,
    policy: RetentionPolicy,
    config: GcConfig,
    generations: ProtectedGenerations | None = None,
    *,
    named: Named | None = None,
    records: list[SnapshotRecord] | None = None,
    unrestorable: Callable[[list[SnapshotRecord]], Mapping[str, str]] | None = None,
) -> tuple[RetentionPlan, list[SnapshotRecord]]:
    """Read the lineage's live snapshot records and plan them (no write).

    Live: REGISTERED, EXPIRING and REJECTED (``queries.live_snapshots``). The plan skips
    DELETED records anyway, and a prefix whose record is DELETED (or gone with its TTL) is
    the orphan sweep's, as one with no record is (docs/retention.md). ``records``: plan
    these (already read) again; ``named``: what the pointer objects name (kept);
    ``unrestorable``: which of the records the layout says cannot be restored from, and why.
    """
    if records is None:
        records = queries.live_snapshots(deps.ledger, head.lineage)
    now = deps.clock.now()
    planned = plan(
        records,
        head,
        policy,
        now,
        grace=config.orphan_grace,
        generations=generations,
        named=named,
        unrestorable=None if unrestorable is None else unrestorable(records),
    )
    return planned, records


def expire_plan(
    deps: GcDeps[LayoutStrategy],
    report: LineageReport,
    *,
    head: Head,
    records: list[SnapshotRecord],
    policy: RetentionPolicy,
    config: GcConfig,
    run_id: str,
    budget: Budget,
    generations: ProtectedGenerations | None = None,
) -> Applied:
    """Step 1: mark the plan's new deletions EXPIRING (with the ones left EXPIRING before).

    The plan's reads (HEAD from the index page, the live records) seed each transaction:
    no read before it, and a stale seed only makes its commit fail and load.
    """
    report.known = LineageState(head=head, snapshots={r.sort_key: r for r in records})
    statuses = {r.sort_key: r.status for r in records}
    expiring = [d.record for d in report.plan.doomed if not d.fresh]
    fresh = [d for d in report.plan.doomed if d.fresh]
    for start in range(0, len(fresh), MAX_EXPIRE_PER_COMMAND):
        if budget.exhausted():
            return Applied(statuses=statuses, expiring=[], stopped=True)
        chunk = fresh[start : start + MAX_EXPIRE_PER_COMMAND]
        expiring += _expire(
            deps, report, chunk, policy, config, run_id=run_id, generations=generations
        )
    for record in expiring:
        statuses[record.sort_key] = SnapshotStatus.EXPIRING
    return Applied(statuses=statuses, expiring=expiring, stopped=False)


def queue_deletions(
    batch: DeletionBatch,
    ticket: LineageTicket,
    report: LineageReport,
    expiring: list[SnapshotRecord],
    listing: Mapping[str, list[ObjectInfo]],
    *,
    layout: LayoutStrategy,
    root: str,
    live: Collection[str] = (),
    statuses: Mapping[str, SnapshotStatus] | None = None,
) -> None:
    """Step 2: every EXPIRING snapshot's objects (as listed) and the files it references
    into the deletion batch, less what a registered snapshot still uses (``live``: the
    keys they reference; ``statuses``: whose own folders; ``core/references.py``), each
    with its layout's manifest name (deleted last). ``root``: the lineage's folder."""
    taken: set[str] = set()
    for record in expiring:
        if batch.stopped:
            return
        prefix = folder_of_manifest(record.manifest_key)
        keys = keys_to_delete(
            record,
            (info.key for info in listing.get(prefix, [])),
            root,
            live=live,
            statuses=statuses or {},
            taken=taken,
        )
        unit = DeletionUnit(
            prefix=prefix,
            keys=keys,
            sort_key=record.sort_key,
            manifest_name=layout.manifest_name,
            on_deleted=functools.partial(report.deleted.__setitem__, record.snapshot_id),
        )
        batch.add(ticket, unit)


def finisher(
    deps: GcDeps[LayoutStrategy],
    report: LineageReport,
    *,
    head: Head,
    records: list[SnapshotRecord],
    policy: RetentionPolicy,
    run_id: str,
) -> Finish:
    """Steps 3 and 4, once the batch has sent every object of the lineage's units."""

    def finish(remaining: list[DeletedPrefix], budget: Budget) -> bool:
        report.trim_lsn = head.trim_lsn
        trim = _trim_proposal(report, head, records)
        stopped = _record_deleted(deps, report, head, remaining, trim, run_id=run_id, budget=budget)
        if policy.delete_changelog_below_trim and not stopped:
            _delete_segments(deps, report, head, budget)
        return stopped

    return finish


def _record_deleted(
    deps: GcDeps[LayoutStrategy],
    report: LineageReport,
    head: Head,
    done: list[DeletedPrefix],
    trim: TrimProposal | None,
    *,
    run_id: str,
    budget: Budget,
) -> bool:
    """Mark ``done`` DELETED, the trim point riding in the last transaction (or alone).

    True if the budget ran out first (the rest stay EXPIRING for the next run).
    """
    for start in range(0, len(done), MAX_MARK_PER_COMMAND):
        if budget.exhausted():
            return True
        last = start + MAX_MARK_PER_COMMAND >= len(done)
        chunk = done[start : start + MAX_MARK_PER_COMMAND]
        result = mark_deleted(
            deps, head.lineage, chunk, run_id=run_id, trim=trim if last else None, known=report
        )
        _note_trim(report, result.events, result.state.head.trim_lsn)
    if trim is not None and not done:
        alone = AdvanceTrimPoint(
            stream=head.stream,
            partition=head.partition,
            lsn=trim.lsn,
            snapshot_key=trim.snapshot_key,
        )
        result = execute(deps.ledger, alone, deps.clock.now(), snapshot_keys=(trim.snapshot_key,))
        _note_trim(report, result.events, result.state.head.trim_lsn)
    return False


def _expire(
    deps: GcDeps[LayoutStrategy],
    report: LineageReport,
    chunk: list[Doomed],
    policy: RetentionPolicy,
    config: GcConfig,
    *,
    run_id: str,
    generations: ProtectedGenerations | None,
) -> list[SnapshotRecord]:
    lineage = report.lineage
    command = ExpireSnapshots(
        stream=lineage.stream,
        partition=lineage.partition,
        run_id=run_id,
        targets=tuple(_target(d) for d in chunk),
        witnesses=report.plan.witnesses,
        policy=policy,
        grace_hours=config.orphan_grace_hours,
        generations=generations,
        unrestorable=tuple(sorted(report.plan.unrestorable)),
    )
    now = deps.clock.now()
    keys = command.snapshot_keys
    result = execute(deps.ledger, command, now, snapshot_keys=keys, seed=report.seed(keys))
    report.learn(result.state)
    report.expired += [e.snapshot_id for e in result.events if isinstance(e, SnapshotExpiring)]
    expiring: list[SnapshotRecord] = []
    for target in command.targets:
        record = result.state.snapshots.get(target.sort_key)
        if record is None or record.status is SnapshotStatus.DELETED:
            continue  # another run finished it
        if record.status is SnapshotStatus.EXPIRING:
            expiring.append(record)  # ours, or another run's: deleting twice is harmless
        else:
            report.spared[record.snapshot_id] = _why_spared(
                result.state, record, target, command, now
            )
    return expiring


def _target(doomed: Doomed) -> ExpiryTarget:
    # Prefer a cause the commit can re-check on the record itself (max_age) over one it
    # takes from the plan (max_count).
    rechecked = (c for c in doomed.causes if c in CAPS and CAPS[c].on_record_alone)
    return ExpiryTarget(sort_key=doomed.record.sort_key, cause=next(rechecked, doomed.causes[0]))


def _why_spared(
    state: LineageState,
    record: SnapshotRecord,
    target: ExpiryTarget,
    command: ExpireSnapshots,
    now: datetime,
) -> str:
    newer = restorable_newer(state.snapshots, record.sort_key, command.unrestorable)
    why = expiry_refusal(
        record,
        target,
        state.head,
        command.policy,
        now,
        grace=timedelta(hours=command.grace_hours),
        registered_newer=newer,
        generations=command.generations,
        unrestorable=command.unrestorable,
    )
    return why or "the ledger changed since the plan; the next run plans it again"


def _trim_proposal(
    report: LineageReport, head: Head, records: list[SnapshotRecord]
) -> TrimProposal | None:
    """The oldest snapshot still retained after apply (the plan's, and any it spared)."""
    spared = set(report.spared)
    retained = [k.record for k in report.plan.kept if k.record.status is SnapshotStatus.REGISTERED]
    retained += [
        r for r in records if r.snapshot_id in spared and r.status is SnapshotStatus.REGISTERED
    ]
    point = trim_point(retained, head)
    if point is None or (head.trim_lsn is not None and point.lsn <= head.trim_lsn):
        return None
    return TrimProposal(lsn=point.lsn, snapshot_key=point.snapshot_key)


def _note_trim(report: LineageReport, events: list[LedgerEvent], trim_lsn: int | None) -> None:
    if any(isinstance(e, TrimPointAdvanced) for e in events):
        report.trim_advanced = True
    report.trim_lsn = trim_lsn


def _delete_segments(
    deps: GcDeps[LayoutStrategy], report: LineageReport, head: Head, budget: Budget
) -> None:
    """The lineage's changelog segments wholly below its trim point: listed and deleted a
    request at a time, the budget checked before each (what is left waits for the next
    run)."""
    fresh = deps.ledger.get_head(head.lineage, consistent=True)
    if fresh is None or fresh.trim_lsn is None:
        return
    jobs = fresh.active_jobs.values()
    if any(job.base_lsn is None or job.base_lsn < fresh.trim_lsn for job in jobs):
        return  # a running job reads the changelog below the trim point
    below: list[str] = []
    changelog = lineage_changelog_prefix(head.stream, head.partition)
    for info in list_prefix(deps.store, changelog, stop=budget.exhausted):
        try:
            segment = parse_segment_key(info.key)
        except InvalidKeyError:
            continue  # not a segment: not ours to delete
        if segment.last_lsn < fresh.trim_lsn:
            below.append(info.key)
    for start in range(0, len(below), MAX_KEYS_PER_REQUEST):
        if budget.exhausted():
            return
        try:
            chunk = below[start : start + MAX_KEYS_PER_REQUEST]
            report.segments_deleted += delete_objects(deps.store, chunk)
        except DeletionFailedError as exc:
            report.errors.append(f"changelog below LSN {fresh.trim_lsn}: {exc}")
