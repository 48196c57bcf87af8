"""The orphan sweep: snapshot prefixes the ledger has no live record of.

A prefix under ``snapshots/{stream}/{partition}/`` is a candidate when the ledger has no
record of it (files uploaded, manifest never registered: a writer that died, or a lost
event) or only a DELETED one (objects written again after GC deleted it). It is deleted
only when its newest object is older than the grace window (default 24h, never under 1h):
a writer may be between its last upload and its registration, and a prefix with anything
recent is never touched.

No record: before any delete the prefix is *claimed* in the ledger (``OrphanClaimed``,
decided on a consistent read). If a registration got there first, the claim is refused
and nothing is deleted; if the manifest arrives after the claim, registration finds the
record and answers "conflict", so a snapshot whose files are being deleted can never
become REGISTERED. The claimed prefix then follows the usual EXPIRING → DELETED path, so
a crash half-way is finished by the next run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from snapledger.errors import InvalidKeyError, SnapledgerError
from snapledger.gc_settings import GcConfig
from snapledger.layout import (
    SNAPSHOTS,
    SnapshotLocation,
    check_stream_name,
    lineage_snapshots_prefix,
    parse_snapshot_prefix,
)
from snapledger.models.commands import ClaimOrphan, DeletedPrefix, MarkSnapshotsDeleted
from snapledger.models.ledger import LineageId, SnapshotStatus, snapshot_sort_key
from snapledger.services.commands import execute
from snapledger.services.gc_deps import Budget, GcDeps
from snapledger.services.gc_report import OrphanOutcome
from snapledger.services.object_deletion import delete_objects, list_prefix


def sweep_lineage(
    deps: GcDeps,
    lineage: LineageId,
    statuses: Mapping[str, SnapshotStatus],
    config: GcConfig,
    *,
    run_id: str,
    dry_run: bool,
    budget: Budget,
) -> tuple[list[OrphanOutcome], bool]:
    """Sweep one lineage's prefixes; ``statuses`` are the ledger's records (sort key → status).

    Returns the outcomes and whether the time budget ran out first.
    """
    outcomes: list[OrphanOutcome] = []
    for prefix in deps.store.list_dirs(lineage_snapshots_prefix(lineage.stream, lineage.partition)):
        try:
            location = parse_snapshot_prefix(prefix)
        except InvalidKeyError:
            continue  # not a snapshot prefix: not ours to judge
        status = statuses.get(snapshot_sort_key(location.lsn, location.snapshot_id))
        if status is not None and status is not SnapshotStatus.DELETED:
            continue  # the ledger owns it: never touched here
        if budget.exhausted():
            return outcomes, True
        try:
            outcome = _sweep_prefix(deps, location, status, config, run_id=run_id, dry_run=dry_run)
        except SnapledgerError as exc:
            outcome = OrphanOutcome(prefix, "error", note=str(exc))
        if outcome is not None:
            outcomes.append(outcome)
    return outcomes, False


def sweep_unledgered_streams(
    deps: GcDeps,
    config: GcConfig,
    *,
    run_id: str,
    stream: str | None,
    after_stream: str | None,
    dry_run: bool,
    budget: Budget,
) -> tuple[list[OrphanOutcome], bool, str | None]:
    """Sweep the lineages that have snapshot prefixes but no HEAD in the ledger.

    Walks streams in name order after ``after_stream``. Returns the outcomes, whether it
    finished, and the last stream it finished (where a stopped sweep resumes).
    """
    outcomes: list[OrphanOutcome] = []
    done: str | None = after_stream
    for name in _streams(deps, stream):
        if after_stream is not None and name <= after_stream:
            continue
        if budget.exhausted():
            return outcomes, False, done
        with_head = _partitions_with_head(deps, name)
        for partition in _partitions(deps, name):
            if partition in with_head:
                continue  # swept with its lineage in the lineage pass
            found, stopped = sweep_lineage(
                deps,
                LineageId(stream=name, partition=partition),
                {},
                config,
                run_id=run_id,
                dry_run=dry_run,
                budget=budget,
            )
            outcomes += found
            if stopped:
                return outcomes, False, done
        done = name
    return outcomes, True, done


def _sweep_prefix(
    deps: GcDeps,
    location: SnapshotLocation,
    status: SnapshotStatus | None,
    config: GcConfig,
    *,
    run_id: str,
    dry_run: bool,
) -> OrphanOutcome | None:
    prefix = location.prefix
    objects = list_prefix(deps.store, prefix)
    if not objects:
        return None
    newest = max(info.last_modified for info in objects)
    now = deps.clock.now()
    outcome = OrphanOutcome(prefix, "in_flight", len(objects), newest)
    if now - newest <= config.orphan_grace:
        outcome.note = f"an object arrived within the {config.orphan_grace_hours:g}h window"
        return outcome
    if dry_run:
        outcome.action = "would_delete"
        return outcome
    keys = [info.key for info in objects]
    if status is SnapshotStatus.DELETED:
        outcome.objects = delete_objects(deps.store, keys)
        outcome.action = "deleted"
        outcome.note = "objects written again after the snapshot was deleted"
        return outcome
    if not _claim(deps, location, newest=newest, count=len(objects), config=config, now=now):
        outcome.action, outcome.note = "registered_meanwhile", "the ledger recorded it first"
        return outcome
    outcome.objects = delete_objects(deps.store, keys)
    key = snapshot_sort_key(location.lsn, location.snapshot_id)
    execute(
        deps.ledger,
        MarkSnapshotsDeleted(
            stream=location.stream,
            partition=location.partition,
            run_id=run_id,
            deleted=(DeletedPrefix(sort_key=key, objects_deleted=outcome.objects),),
        ),
        deps.clock.now(),
        snapshot_keys=(key,),
    )
    outcome.action, outcome.note = "deleted", "no ledger record"
    return outcome


def _claim(
    deps: GcDeps,
    location: SnapshotLocation,
    *,
    newest: datetime,
    count: int,
    config: GcConfig,
    now: datetime,
) -> bool:
    """Claim the prefix in the ledger; True if it is EXPIRING (ours, or another run's)."""
    key = snapshot_sort_key(location.lsn, location.snapshot_id)
    result = execute(
        deps.ledger,
        ClaimOrphan(
            stream=location.stream,
            partition=location.partition,
            lsn=location.lsn,
            snapshot_id=location.snapshot_id,
            manifest_key=location.manifest_key,
            object_count=count,
            newest_object_at=newest,
            grace_hours=config.orphan_grace_hours,
        ),
        now,
        snapshot_keys=(key,),
    )
    record = result.state.snapshots.get(key)
    return record is not None and record.status is SnapshotStatus.EXPIRING


def _streams(deps: GcDeps, stream: str | None) -> list[str]:
    if stream is not None:
        return [stream]
    names = []
    for prefix in deps.store.list_dirs(f"{SNAPSHOTS}/"):
        name = prefix.removeprefix(f"{SNAPSHOTS}/").rstrip("/")
        try:
            names.append(check_stream_name(name))
        except InvalidKeyError:
            continue
    return sorted(names)


def _partitions(deps: GcDeps, stream: str) -> list[int]:
    found = []
    for prefix in deps.store.list_dirs(f"{SNAPSHOTS}/{stream}/"):
        text = prefix.removeprefix(f"{SNAPSHOTS}/{stream}/").rstrip("/")
        if text.isdigit() and str(int(text)) == text:
            found.append(int(text))
    return found


def _partitions_with_head(deps: GcDeps, stream: str) -> set[int]:
    found: set[int] = set()
    after: LineageId | None = None
    while True:
        page = deps.lineages.list_heads(stream=stream, after=after, limit=1000)
        found |= {head.partition for head in page.heads}
        if not page.more or not page.heads:
            return found
        after = page.heads[-1].lineage
