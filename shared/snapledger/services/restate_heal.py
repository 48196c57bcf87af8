"""Heal a Restate partition whose latest snapshot is broken, and restore from a chosen one.

Restate restores a partition from the snapshot its ``latest.json`` names; if one of that
snapshot's files is missing, resized or not an SST, the partition processor fails on every
retry (every 2 s in 1.7) while the others run. **Heal** (each GC run, and on demand)
checks what latest.json names (``restate_snapshots.file_problems``: one listing, one small
GET per SST); when it is broken it records ``SnapshotFoundBroken`` with the files at fault,
repoints latest.json by compare-and-swap to the newest snapshot Restate still retains that
passes the same check and is REGISTERED in the ledger, and records
``ProducerLatestRepointed``. The processor's next retry restores from it and replays the log
after it (Restate keeps its log from the oldest retained snapshot: ``replay_floor``).
Nothing is deleted by healing.

**Restore from a chosen snapshot**: the operator names one; it is refused with the reason
unless Restate retains it (so can replay from it), it is REGISTERED and not broken, and it
passes the check; it is then held (GC keeps it), latest.json is repointed, and the ledger
records who did it.

The ledger record of a repoint follows the write of latest.json, and only a write that
changed it is recorded (a retry finds it done): a crash between the two leaves latest.json
repointed and the event unrecorded (``SnapshotFoundBroken``, or the restore's hold with
its ``by`` and reason, recorded first, still says why and who).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from snapledger.clock import Clock
from snapledger.core.manifest_rules import ManifestRejectedError
from snapledger.core.problems import join_problems
from snapledger.core.producer_pointers import repoint_problem
from snapledger.errors import (
    InvalidRequestError,
    ManifestTooLargeError,
    NotFoundError,
    StaleVersionError,
)
from snapledger.layouts import restate
from snapledger.layouts.restate_prefix import RestatePrefix
from snapledger.limits import MAX_MANIFEST_BYTES
from snapledger.models.commands import RecordBrokenSnapshot, RecordRepoint
from snapledger.models.ledger import LineageId, SnapshotRecord, SnapshotStatus, snapshot_sort_key
from snapledger.ports import Ledger, ObjectStore
from snapledger.services import restate_pointer, restate_snapshots
from snapledger.services.commands import execute
from snapledger.services.holds import hold_snapshot

HEALTHY = "healthy"
NO_POINTER = "no_pointer"  # Restate wrote no latest.json yet
HEALED = "healed"
WOULD_HEAL = "would_heal"  # a dry run
UNHEALED = "unhealed"  # broken, and no retained snapshot passes: the alarm's case
MOVED = "moved"  # Restate repointed it meanwhile: checked again next run


@dataclass
class HealOutcome:
    """What heal found in one partition's latest.json and what it did."""

    partition: int
    state: str
    names: str | None = None
    problems: list[str] = field(default_factory=list)
    healed_to: str | None = None
    note: str = ""
    #: latest.json as heal read it, while it still stands (heal wrote nothing): GC's reads
    #: of it start from here (one GET a lineage, not three).
    pointer: restate_pointer.ReadLatest | None = field(default=None, repr=False, compare=False)

    @property
    def broken(self) -> bool:
        return bool(self.problems)

    @property
    def healed(self) -> bool:
        return self.state == HEALED

    def to_dict(self) -> dict[str, object]:
        shown = {f: getattr(self, f) for f in _SHOWN}
        return {k: v for k, v in shown.items() if v not in (None, "", [])}


_SHOWN = ("partition", "state", "names", "problems", "healed_to", "note")


def snapshot_problems(
    store: ObjectStore,
    layout: RestatePrefix,
    partition: int,
    lsn: int,
    snapshot_id: str,
    *,
    registered_digest: str | None = None,
) -> list[str]:
    """Why Restate could not restore from the snapshot (empty: it could, as far as its
    metadata.json, one listing and each SST's footer tell), or would restore other state
    than was registered (``registered_digest``: its files' ETags at registration): one line
    per file at fault with each check it failed (``restate_snapshots.capped``)."""
    location = restate.RestateLocation(layout.prefix, partition, lsn, snapshot_id)
    try:
        raw = store.get(location.metadata_key, max_bytes=MAX_MANIFEST_BYTES)
    except NotFoundError:
        return [f"{location.metadata_key!r} is missing: Restate cannot read the snapshot"]
    except ManifestTooLargeError as exc:
        return restate_snapshots.capped([f"{location.metadata_key!r}: {exc}"])
    try:
        metadata = restate.parse_metadata(location, raw)
    except ManifestRejectedError as exc:
        return restate_snapshots.capped([exc.reason])
    checked = restate_snapshots.file_problems(
        store, location, metadata, registered_digest=registered_digest
    )
    return restate_snapshots.capped(checked.problems)


def heal_partition(
    ledger: Ledger,
    store: ObjectStore,
    clock: Clock,
    layout: RestatePrefix,
    partition: int,
    *,
    dry_run: bool = False,
) -> HealOutcome:
    """Check the snapshot the partition's latest.json names; repoint it when broken."""
    read = restate_pointer.read_latest(store, layout, partition)
    if read is None:
        return HealOutcome(partition, NO_POINTER, note="Restate has written no latest.json yet")
    latest = read.latest
    outcome = HealOutcome(partition, HEALTHY, names=latest.snapshot_id, pointer=read)
    lineage = LineageId(stream=layout.stream, partition=partition)
    named = ledger.get_snapshot(
        lineage, snapshot_sort_key(latest.min_applied_lsn, latest.snapshot_id)
    )
    outcome.problems = snapshot_problems(
        store,
        layout,
        partition,
        latest.min_applied_lsn,
        latest.snapshot_id,
        registered_digest=None if named is None else named.files_digest,
    )
    if not outcome.problems:
        return outcome
    outcome.pointer = None  # heal may write it from here on
    if not dry_run:
        _record_broken(
            ledger,
            clock,
            lineage,
            lsn=latest.min_applied_lsn,
            snapshot_id=latest.snapshot_id,
            outcome=outcome,
        )
    target, failed = _healthy_retained(ledger, store, layout, lineage, latest)
    for record, problems in [] if dry_run else failed:  # each recorded with its own reasons
        _record_broken(
            ledger,
            clock,
            lineage,
            lsn=record.lsn,
            snapshot_id=record.snapshot_id,
            outcome=HealOutcome(lineage.partition, UNHEALED, problems=problems),
        )
    if target is None:
        outcome.state = UNHEALED
        outcome.note = (
            "no snapshot Restate retains passes the check: the partition cannot restore "
            "until one does (raise num-retained so more are kept, or restore the files)"
        )
        return outcome
    outcome.healed_to = target.snapshot_id
    if dry_run:
        outcome.state = WOULD_HEAL
        return outcome
    return _repoint(ledger, store, clock, layout, read=read, target=target, outcome=outcome)


def _repoint(
    ledger: Ledger,
    store: ObjectStore,
    clock: Clock,
    layout: RestatePrefix,
    *,
    read: restate_pointer.ReadLatest,
    target: SnapshotRecord,
    outcome: HealOutcome,
) -> HealOutcome:
    """latest.json moved off its broken snapshot to ``target`` by compare-and-swap, then
    recorded; ``moved`` if Restate changed it meanwhile (checked again next run)."""
    latest, partition = read.latest, outcome.partition
    broken_id = latest.snapshot_id

    def repoint(current: restate.RestateLatest) -> bytes | None:
        if current.snapshot_id != broken_id:
            return None  # Restate (or an operator) moved it meanwhile
        return restate.latest_with(current, target.snapshot_id)

    try:
        written, _ = restate_pointer.rewrite(store, layout, partition, repoint, first=read)
    except restate.RestatePointerError as exc:  # Restate evicted the target meanwhile
        outcome.state, outcome.note = MOVED, f"{exc.reason}; checked again next run"
        return outcome
    if written is not restate_pointer.Rewrite.WRITTEN:
        outcome.state, outcome.note = MOVED, "latest.json changed meanwhile; checked next run"
        return outcome
    execute(
        ledger,
        RecordRepoint(
            stream=layout.stream,
            partition=partition,
            lsn=target.lsn,
            snapshot_id=target.snapshot_id,
            previous_snapshot_id=broken_id,
            previous_lsn=latest.min_applied_lsn,
            cause="heal",
            by="snapledger heal",
            reason=restate_snapshots.clip(outcome.problems[0]),
            request_id=f"heal:{broken_id}:{target.snapshot_id}",
        ),
        clock.now(),
        snapshot_keys=(target.sort_key,),
    )
    outcome.state = HEALED
    return outcome


@dataclass(frozen=True)
class RestoreResult:
    partition: int
    snapshot_id: str
    lsn: int
    #: What latest.json named before; None when it already named ``snapshot_id`` (a retry).
    previous_snapshot_id: str | None
    hold_id: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def restore_from_chosen(
    ledger: Ledger,
    store: ObjectStore,
    clock: Clock,
    layout: RestatePrefix,
    partition: int,
    *,
    snapshot_id: str,
    request_id: str,
    by: str = "",
    reason: str = "",
) -> RestoreResult:
    """Point the partition's latest.json at ``snapshot_id`` (see the module docstring).
    InvalidRequestError (with what to do) when it cannot be restored from."""
    lineage = LineageId(stream=layout.stream, partition=partition)
    record = ledger.find_snapshot(lineage, snapshot_id)
    if record is None:
        raise NotFoundError(
            f"{lineage} has no snapshot {snapshot_id}: list its snapshots to see their ids"
        )
    problem = repoint_problem(record)
    read = restate_pointer.read_latest(store, layout, partition)
    if problem is None and read is None:
        problem = f"Restate has written no latest.json for partition {partition}: it has no "
        problem += "snapshot to restore from yet"
    if problem is None and read is not None:
        try:
            restate.latest_with(read.latest, snapshot_id)
        except restate.RestatePointerError as exc:
            problem = exc.reason
    if problem is None:
        found = snapshot_problems(
            store,
            layout,
            partition,
            record.lsn,
            snapshot_id,
            registered_digest=record.files_digest,
        )
        if found:
            problem = f"snapshot {snapshot_id} fails the check: {join_problems(found)}"
    if problem is not None:
        raise InvalidRequestError(f"cannot restore {lineage} from {snapshot_id}: {problem}")
    assert read is not None
    hold_id = f"restore:{request_id}"
    hold_snapshot(
        ledger,
        lineage,
        snapshot_id,
        clock=clock,
        reason=restate_snapshots.clip(
            f"restore-from-chosen: {reason}" if reason else "restore-from-chosen"
        ),
        by=by,
        hold_id=hold_id,
    )

    def repoint(current: restate.RestateLatest) -> bytes | None:
        if current.snapshot_id == snapshot_id:
            return None  # already there (a retry)
        return restate.latest_with(current, snapshot_id)

    try:
        written, before = restate_pointer.rewrite(store, layout, partition, repoint)
    except restate.RestatePointerError as exc:  # Restate evicted it meanwhile
        raise InvalidRequestError(f"cannot restore {lineage} from {snapshot_id}: {exc}") from exc
    except StaleVersionError as exc:
        raise InvalidRequestError(
            f"Restate kept rewriting latest.json of {lineage}; try again: {exc}"
        ) from exc
    if written is not restate_pointer.Rewrite.WRITTEN:  # a retry: it already names it
        return RestoreResult(partition, snapshot_id, record.lsn, None, hold_id)
    assert before is not None
    previous, previous_lsn = before.snapshot_id, before.min_applied_lsn
    execute(
        ledger,
        RecordRepoint(
            stream=layout.stream,
            partition=partition,
            lsn=record.lsn,
            snapshot_id=snapshot_id,
            previous_snapshot_id=previous,
            previous_lsn=previous_lsn,
            cause="restore",
            by=by,
            reason=restate_snapshots.clip(reason),
            request_id=request_id,
        ),
        clock.now(),
        snapshot_keys=(record.sort_key,),
    )
    return RestoreResult(partition, snapshot_id, record.lsn, previous, hold_id)


def _record_broken(
    ledger: Ledger,
    clock: Clock,
    lineage: LineageId,
    *,
    lsn: int,
    snapshot_id: str,
    outcome: HealOutcome,
) -> None:
    key = snapshot_sort_key(lsn, snapshot_id)
    if ledger.get_snapshot(lineage, key) is None:
        outcome.note = "the broken snapshot is not in the ledger (never registered)"
        return
    execute(
        ledger,
        RecordBrokenSnapshot(
            stream=lineage.stream,
            partition=lineage.partition,
            lsn=lsn,
            snapshot_id=snapshot_id,
            problems=tuple(outcome.problems),  # snapshot_problems: capped, clipped
        ),
        clock.now(),
        snapshot_keys=(key,),
    )


def _healthy_retained(
    ledger: Ledger,
    store: ObjectStore,
    layout: RestatePrefix,
    lineage: LineageId,
    latest: restate.RestateLatest,
) -> tuple[SnapshotRecord | None, list[tuple[SnapshotRecord, list[str]]]]:
    """The newest snapshot Restate retains (so can replay from) other than the one named,
    REGISTERED and not broken in the ledger, whose files pass the check; and the
    registered ones passed over because they failed it, with their problems."""
    failed: list[tuple[SnapshotRecord, list[str]]] = []
    for entry in latest.retained():
        if entry.snapshot_id == latest.snapshot_id:
            continue
        record = ledger.get_snapshot(
            lineage, snapshot_sort_key(entry.min_applied_lsn, entry.snapshot_id)
        )
        if record is None or record.status is not SnapshotStatus.REGISTERED or record.broken:
            continue
        problems = snapshot_problems(
            store,
            layout,
            lineage.partition,
            entry.min_applied_lsn,
            entry.snapshot_id,
            registered_digest=record.files_digest,
        )
        if not problems:
            return record, failed
        failed.append((record, problems))
    return None, failed
