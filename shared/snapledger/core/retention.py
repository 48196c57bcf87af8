"""The retention planner: which snapshots of a lineage GC keeps (and why) and which it deletes.

Pure: ``plan(snapshots, head, policy, now)`` reads no clock and does no I/O, and its
result does not depend on the order of ``snapshots``.

The rule (docs/retention.md). A REGISTERED snapshot is *protected* while ANY holds:

- it is the latest (``latest``);
- it is among the newest ``min_count`` REGISTERED snapshots by LSN (``newest``);
- it was registered ``min_age`` or less ago, by registry time (``too_young``);
- a job has it pinned (``pinned``), or an operator's hold on it is live (``held``);
- it counted for a stream snapshot GC keeps: one of the newest ``min_generations``
  completed, the open one, or one newer than GC's read (``generation``;
  ``models/generations.ProtectedGenerations``).

Only what can be restored is counted (DESIGN invariant 14). A REGISTERED snapshot found
broken (``SnapshotRecord.broken``, heal's check) keeps the protections it has of its own
(latest, young, pinned, held, a generation's member, named by a pointer), but it fills no
newest-``min_count`` slot, is no witness of ``min_count`` and is not counted among the
snapshots ``max_count`` keeps: the next restorable one takes its place. Kept, it carries
``broken_not_counted`` after its reasons (not a protection: the dry run's note).

A snapshot its layout says the changelog can no longer continue (``unrestorable``: sort
key -> why, from ``LayoutStrategy.unrestorable``; a Kafka Streams snapshot below the
changelog's log start or older than its ``delete.retention.ms``) is counted exactly as a
broken one is not, and carries ``unrestorable_not_counted`` when kept; every plan entry of
one says why (``unrestorable``). Both only ever grow for a snapshot (a log start and an
age only advance), so the commit re-checks with the plan's set (``ExpireSnapshots``).

Whatever its status, a snapshot that a pointer object names as GC read it (``named``:
``latest.json`` or ``generation.json``, ``services/gc_pointers.py``) is kept
(``named_by_latest_json``, ``named_by_generation_json``): a reader may be following that
pointer, even while it lags behind the ledger (DESIGN invariant 12). An EXPIRING one
stays EXPIRING, its files untouched, until the pointer names another.

An unprotected snapshot is deleted. When caps are configured they choose which
unprotected snapshots go: one with at least ``max_count`` retained REGISTERED snapshots
newer than it (``beyond_max_count``) or older than ``max_age`` (``older_than_max_age``);
the others are kept (``within_caps``). Caps never touch a protected snapshot. The caps are
the rows of ``CAPS``; every reason and cause, with its text and picture marker, is declared
once in ``models/retention_reasons.py``.

A REJECTED snapshot's files are garbage once it is older than the grace window, unless
held. An EXPIRING snapshot is already committed to deletion: the plan finishes it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from snapledger.models.generations import ProtectedGenerations
from snapledger.models.ledger import Head, SnapshotRecord, SnapshotStatus, snapshot_sort_key
from snapledger.models.policy import RetentionPolicy
from snapledger.models.retention_reasons import DeleteCause, KeepReason

#: How long REJECTED snapshots' files and unregistered prefixes wait (and the least allowed).
DEFAULT_GRACE = timedelta(hours=24)
MIN_GRACE = timedelta(hours=1)


#: The reasons GC promises to honour whatever else happens (invariant 3).
PROTECTIONS = frozenset(
    {
        KeepReason.LATEST,
        KeepReason.NEWEST,
        KeepReason.TOO_YOUNG,
        KeepReason.PINNED,
        KeepReason.HELD,
        KeepReason.GENERATION,
        KeepReason.NAMED_BY_LATEST_JSON,
        KeepReason.NAMED_BY_GENERATION_JSON,
    }
)
#: What the pointer objects name, as GC read them: sort key -> the pointers naming it.
Named = Mapping[str, tuple[KeepReason, ...]]


@dataclass(frozen=True, slots=True)
class Kept:
    record: SnapshotRecord
    reasons: tuple[KeepReason, ...]


@dataclass(frozen=True, slots=True)
class Doomed:
    record: SnapshotRecord
    causes: tuple[DeleteCause, ...]

    @property
    def fresh(self) -> bool:
        """True if it still has to be marked EXPIRING (it is not yet)."""
        return self.record.status is not SnapshotStatus.EXPIRING


@dataclass(frozen=True, slots=True)
class TrimPoint:
    lsn: int
    snapshot_key: str
    snapshot_id: str


@dataclass(frozen=True)
class RetentionPlan:
    """The plan for one lineage; ``kept`` and ``doomed`` are newest first."""

    kept: tuple[Kept, ...]
    doomed: tuple[Doomed, ...]
    witnesses: tuple[str, ...]  # sort keys of the newest min_count REGISTERED
    trim: TrimPoint | None  # None: nothing retained, or a job without a base is running
    #: Sort key -> why its layout says it cannot be restored from (not counted).
    unrestorable: Mapping[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        why = self.unrestorable
        return {
            "kept": [
                {**_describe(k.record, why), "reasons": [r.value for r in k.reasons]}
                for k in self.kept
            ],
            "deleted": [
                {**_describe(d.record, why), "causes": [c.value for c in d.causes]}
                for d in self.doomed
            ],
            "trim_lsn": None if self.trim is None else self.trim.lsn,
        }


def plan(
    snapshots: Iterable[SnapshotRecord],
    head: Head,
    policy: RetentionPolicy,
    now: datetime,
    *,
    grace: timedelta = DEFAULT_GRACE,
    generations: ProtectedGenerations | None = None,
    named: Named | None = None,
    unrestorable: Mapping[str, str] | None = None,
) -> RetentionPlan:
    """Decide every snapshot of one lineage: kept with all its reasons, or deleted.

    ``generations``: the stream snapshots whose members are kept (None: every member);
    ``named``: the snapshots the pointer objects name (kept, whatever else holds);
    ``unrestorable``: the ones its layout says cannot be restored from (not counted)."""
    named = named or {}
    unrestorable = unrestorable or {}
    newest_first = _newest_first(snapshots)
    kept: list[Kept] = []
    doomed: list[Doomed] = []
    registered_newer = 0  # restorable REGISTERED snapshots seen so far (all newer)
    retained_newer: list[SnapshotRecord] = []  # of which the plan keeps, newest first
    for record in newest_first:
        if record.status is SnapshotStatus.DELETED:
            continue
        pointed = named.get(record.sort_key, ())
        if record.status is SnapshotStatus.EXPIRING:
            if pointed:
                kept.append(Kept(record, pointed))
            else:
                doomed.append(Doomed(record, (DeleteCause.EXPIRING,)))
        elif record.status is SnapshotStatus.REJECTED:
            rejected_reasons = rejected_protections(record, now, grace) + pointed
            if rejected_reasons:
                kept.append(Kept(record, rejected_reasons))
            else:
                doomed.append(Doomed(record, (DeleteCause.REJECTED,)))
        else:
            reasons = protections(
                record,
                head,
                policy,
                now,
                registered_newer=registered_newer,
                generations=generations,
                unrestorable=unrestorable,
            )
            reasons += pointed
            counted = counts_as_restorable(record, unrestorable)
            registered_newer += counted
            causes = () if reasons else cap_causes(record, policy, now, retained_newer)
            if reasons or (policy.has_caps and not causes):
                reasons = reasons or (KeepReason.WITHIN_CAPS,)
                if not counted:
                    reasons += (
                        KeepReason.BROKEN_NOT_COUNTED
                        if record.broken
                        else KeepReason.UNRESTORABLE_NOT_COUNTED,
                    )
                kept.append(Kept(record, reasons))
                retained_newer += (record,) if counted else ()
            else:
                doomed.append(Doomed(record, causes or (DeleteCause.UNPROTECTED,)))
    witnesses = tuple(
        r.sort_key
        for r in newest_first
        if r.status is SnapshotStatus.REGISTERED and counts_as_restorable(r, unrestorable)
    )[: policy.min_count]
    retained = [k.record for k in kept if k.record.status is SnapshotStatus.REGISTERED]
    return RetentionPlan(
        tuple(kept), tuple(doomed), witnesses, trim_point(retained, head), dict(unrestorable)
    )


def protections(
    record: SnapshotRecord,
    head: Head,
    policy: RetentionPolicy,
    now: datetime,
    *,
    registered_newer: int,
    generations: ProtectedGenerations | None = None,
    unrestorable: Collection[str] = (),
) -> tuple[KeepReason, ...]:
    """Every protection a REGISTERED snapshot has; ``registered_newer`` (the restorable
    REGISTERED snapshots newer than it) ranks it, and one found broken or ``unrestorable``
    has no rank; ``generations`` says which stream snapshots' members are kept (None: all)."""
    reasons: list[KeepReason] = []
    if _is_latest(record, head):
        reasons.append(KeepReason.LATEST)
    if registered_newer < policy.min_count and counts_as_restorable(record, unrestorable):
        reasons.append(KeepReason.NEWEST)
    if now - record.registered_at <= policy.min_age:
        reasons.append(KeepReason.TOO_YOUNG)
    if record.pins:
        reasons.append(KeepReason.PINNED)
    if record.live_holds(now):
        reasons.append(KeepReason.HELD)
    if record.member_of is not None and (
        generations is None or generations.protects(record.member_of)
    ):
        reasons.append(KeepReason.GENERATION)
    return tuple(reasons)


def counts_as_restorable(record: SnapshotRecord, unrestorable: Collection[str] = ()) -> bool:
    """Whether a REGISTERED snapshot counts toward ``min_count`` and ``max_count``: not
    found broken (heal's check found it cannot be restored from), and not among the sort
    keys its layout says cannot be restored from (``unrestorable``)."""
    return not record.broken and record.sort_key not in unrestorable


def rejected_protections(
    record: SnapshotRecord, now: datetime, grace: timedelta
) -> tuple[KeepReason, ...]:
    reasons: list[KeepReason] = []
    if now - record.registered_at <= grace:
        reasons.append(KeepReason.IN_GRACE)
    if record.live_holds(now):
        reasons.append(KeepReason.HELD)
    return tuple(reasons)


#: Whether a cap selects an unprotected snapshot: (the snapshot, the policy, now, the
#: restorable REGISTERED snapshots the plan keeps that are newer than it, newest first).
Selects = Callable[[SnapshotRecord, RetentionPolicy, datetime, Sequence[SnapshotRecord]], bool]


@dataclass(frozen=True, slots=True)
class Cap:
    """A cap rule: its policy field (declared with ``Bounds("cap", ...)`` in
    models/policy.py; None: not configured), the cause it deletes with (declared with its
    text and marker in models/retention_reasons.py) and which snapshots it selects."""

    field: str
    cause: DeleteCause
    selects: Selects
    #: It reads the snapshot and the policy alone, so the commit re-checks it on the state
    #: it loads (a cap that counts the snapshots newer than it cannot be: the commit loads
    #: only its targets and the witnesses).
    on_record_alone: bool = False


#: The caps, in the order a plan lists their causes. A new cap is a row here, its policy
#: field and its cause.
CAPS: dict[DeleteCause, Cap] = {
    cap.cause: cap
    for cap in (
        Cap(
            "max_count",
            DeleteCause.BEYOND_MAX_COUNT,
            lambda _, policy, __, newer: (
                policy.max_count is not None and len(newer) >= policy.max_count
            ),
        ),
        Cap(
            "max_age_hours",
            DeleteCause.OLDER_THAN_MAX_AGE,
            lambda record, policy, now, _: (
                policy.max_age is not None and now - record.registered_at > policy.max_age
            ),
            on_record_alone=True,
        ),
    )
}


def cap_causes(
    record: SnapshotRecord,
    policy: RetentionPolicy,
    now: datetime,
    retained_newer: Sequence[SnapshotRecord],
) -> tuple[DeleteCause, ...]:
    """The configured caps that select an unprotected snapshot (empty: none does)."""
    return tuple(
        cause for cause, cap in CAPS.items() if cap.selects(record, policy, now, retained_newer)
    )


def trim_point(retained: Iterable[SnapshotRecord], head: Head) -> TrimPoint | None:
    """The LSN below which no retained snapshot (nor a running job) needs the changelog.

    That is the oldest retained REGISTERED snapshot's LSN, held back to the base of any
    running job; a running job with no base (a bootstrap reads the changelog from the
    start) holds it back entirely (None).
    """
    oldest = min(retained, key=lambda r: (r.lsn, r.snapshot_id), default=None)
    if oldest is None:
        return None
    lsn = oldest.lsn
    for job in head.active_jobs.values():
        if job.base_lsn is None:
            return None
        lsn = min(lsn, job.base_lsn)
    if lsn != oldest.lsn:
        return None  # a job reads from below every retained snapshot: wait for it
    return TrimPoint(lsn=lsn, snapshot_key=oldest.sort_key, snapshot_id=oldest.snapshot_id)


def _newest_first(snapshots: Iterable[SnapshotRecord]) -> list[SnapshotRecord]:
    by_key: dict[str, SnapshotRecord] = {}
    for record in snapshots:
        if record.sort_key in by_key:
            raise ValueError(f"snapshot {record.sort_key} is listed twice")
        by_key[record.sort_key] = record
    # The sort key is (zero-padded LSN, ULID): LSN order, ties broken by id, total.
    return [by_key[key] for key in sorted(by_key, reverse=True)]


def _is_latest(record: SnapshotRecord, head: Head) -> bool:
    if head.latest_snapshot_id is None or head.latest_lsn is None:
        return False
    return record.sort_key == snapshot_sort_key(head.latest_lsn, head.latest_snapshot_id)


def _describe(record: SnapshotRecord, unrestorable: Mapping[str, str]) -> dict[str, object]:
    described: dict[str, object] = {
        "snapshot_id": record.snapshot_id,
        "lsn": record.lsn,
        "status": record.status.value,
        "registered_at": record.registered_at.isoformat(),
    }
    if record.broken:
        described["broken"] = list(record.broken)
    why = unrestorable.get(record.sort_key)
    if why is not None and not record.broken:
        described["unrestorable"] = why
    return described
