"""What a GC run did (or, in a dry run, would do): JSON-able, per lineage, with counts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from snapledger.core.retention import RetentionPlan
from snapledger.core.state import LineageState
from snapledger.models.generations import StreamGeneration
from snapledger.models.ledger import LineageId

if TYPE_CHECKING:
    from snapledger.services.gc_pointers import PointerCheck


class HealPart(Protocol):
    """A lineage report's layout part: its layout's check of the pointer its producer owns,
    which the strategy's GC steps fill (``LineageSteps.heal``; Restate's
    ``restate_heal.HealOutcome``), rendered under ``heal`` and counted in the summary."""

    @property
    def broken(self) -> bool:
        """The pointer named a snapshot its producer could not restore from."""
        ...

    @property
    def healed(self) -> bool:
        """The pointer was moved to one it can."""
        ...

    def to_dict(self) -> dict[str, object]: ...


@dataclass
class OrphanOutcome:
    """One snapshot prefix the ledger has no live record of."""

    prefix: str
    # "deleted", "claimed" (deletion queued; a stopped run leaves it to the next),
    # "would_delete", "in_flight", "registered_meanwhile", "error"; a prefix holding an
    # unrecorded manifest: "registered" (handed to registration), "would_register", "kept"
    action: str
    objects: int = 0
    newest_object_at: datetime | None = None
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "prefix": self.prefix,
            "action": self.action,
            "objects": self.objects,
            "newest_object_at": None
            if self.newest_object_at is None
            else self.newest_object_at.isoformat(),
            "note": self.note,
        }


@dataclass
class LineageReport:
    lineage: LineageId
    plan: RetentionPlan
    expired: list[str] = field(default_factory=list)  # snapshot ids marked EXPIRING now
    deleted: dict[str, int] = field(default_factory=dict)  # snapshot id -> objects deleted
    spared: dict[str, str] = field(default_factory=dict)  # snapshot id -> why apply kept it
    trim_lsn: int | None = None
    trim_advanced: bool = False
    segments_deleted: int = 0
    orphans: list[OrphanOutcome] = field(default_factory=list)
    jobs_settled: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: What the run noticed that is no error (e.g. snapshots Restate evicted itself).
    notes: list[str] = field(default_factory=list)
    #: Snapshot ids the producer evicted itself, found by this run's listing: recorded
    #: DELETED (a dry run only names them), so never reported kept, whatever the plan
    #: made before the listing said.
    evicted: list[str] = field(default_factory=list)
    #: An unexpected error that ended this lineage's pass (its stream's policy could not be
    #: read, or a bug): also in ``errors``; the run goes on and reports itself failed.
    failure: str | None = None
    #: What GC found in the lineage's pointer objects (None: it had nothing to delete, so
    #: they were not read) and whether it repaired a lagging ``latest.json``.
    pointer: PointerCheck | None = None
    #: The layout's heal check of the snapshot its producer's pointer names (Restate's
    #: latest.json; None: the layout has none, or it was not checked).
    heal: HealPart | None = None
    # What GC last knew of the lineage (the plan's reads, then each of its commits): the
    # seed of its next command there, checked by that command's commit (not reported).
    known: LineageState | None = field(default=None, repr=False, compare=False)

    def fail(self, failure: str) -> None:
        """An unexpected error ended (part of) this lineage's pass: reported, and the run
        reports itself failed."""
        if self.failure is None:
            self.failure = failure
        self.errors.append(failure)

    def seed(self, keys: Sequence[str]) -> LineageState | None:
        """A command's seed (HEAD and the items ``keys``), if GC knows all of them."""
        known = self.known
        if known is None or any(k not in known.snapshots for k in keys):
            return None
        return LineageState(head=known.head, snapshots={k: known.snapshots[k] for k in keys})

    def learn(self, state: LineageState) -> None:
        """A commit's resulting state: newer than anything known before it."""
        base = self.known.snapshots if self.known is not None else {}
        self.known = LineageState(head=state.head, snapshots={**base, **state.snapshots})

    def shown_plan(self) -> RetentionPlan:
        """The plan as reported: a snapshot the listing found evicted is not kept."""
        gone = set(self.evicted)
        kept = tuple(k for k in self.plan.kept if k.record.snapshot_id not in gone)
        return replace(self.plan, kept=kept)

    def to_dict(self) -> dict[str, object]:
        planned = self.shown_plan().to_dict()
        return {
            "stream": self.lineage.stream,
            "partition": self.lineage.partition,
            "kept": planned["kept"],
            "evicted": self.evicted,
            "deleted": planned["deleted"],
            "expired_now": self.expired,
            "objects_deleted": self.deleted,
            "spared": self.spared,
            "trim_lsn": self.trim_lsn,
            "trim_advanced": self.trim_advanced,
            "segments_deleted": self.segments_deleted,
            "orphans": [o.to_dict() for o in self.orphans],
            "jobs_settled": self.jobs_settled,
            "errors": self.errors,
            "notes": self.notes,
            "failure": self.failure,
            "pointer": None if self.pointer is None else self.pointer.to_dict(),
            "heal": None if self.heal is None else self.heal.to_dict(),
        }


#: A stuck job's actions that changed it (what ``stuck_jobs_reconciled`` counts).
SETTLED = ("reconciled", "adopted", "failed_never_started")


@dataclass
class StuckJob:
    job_id: str
    stream: str
    state: str
    run_id: str | None
    stuck_for_hours: float
    # "found", "reconciled", "adopted", "failed_never_started", "still_running", "error"
    action: str
    new_state: str | None = None
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "job_id": self.job_id,
            "stream": self.stream,
            "state": self.state,
            "run_id": self.run_id,
            "stuck_for_hours": round(self.stuck_for_hours, 3),
            "action": self.action,
            "new_state": self.new_state,
            "note": self.note,
        }


@dataclass
class GcReport:
    run_id: str
    dry_run: bool
    stream: str | None
    started_at: datetime
    lineages: list[LineageReport] = field(default_factory=list)
    orphans: list[OrphanOutcome] = field(default_factory=list)  # lineages with no HEAD
    stuck_jobs: list[StuckJob] = field(default_factory=list)
    #: Stream snapshots this run failed past their deadline (not in a dry run).
    generations_failed: list[StreamGeneration] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    #: Unexpected errors of a whole step (the stuck-job sweep, the unledgered sweep): the
    #: run went on without it and reports itself failed.
    failures: list[str] = field(default_factory=list)
    #: Streams whose stored policy was clamped to the bounds as GC read it: why.
    policy_notes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    complete: bool = False
    resume_after: str | None = None  # where the next run resumes (when not complete)
    shards_sent: int = 0  # fan-out: shard messages sent to the workers
    lineages_sent: int = 0  # ... and the lineages in them (not in ``lineages``)

    @property
    def failed_streams(self) -> dict[str, str]:
        """Each stream a lineage of which failed unexpectedly, with its first failure."""
        failed: dict[str, str] = {}
        for r in self.lineages:
            if r.failure is not None:
                failed.setdefault(r.lineage.stream, r.failure)
        return failed

    @property
    def pointers_unrepaired(self) -> list[LineageReport]:
        """Lineages whose ``latest.json`` lags the ledger and could not be repaired."""
        return [r for r in self.lineages if r.pointer is not None and r.pointer.unrepaired]

    @property
    def failed(self) -> bool:
        """Whether the run must be retried and alarmed: a step or a stream failed
        unexpectedly, or a lagging pointer could not be repaired (what it names is kept)."""
        return bool(self.failures or self.failed_streams or self.pointers_unrepaired)

    def counts(self) -> dict[str, int]:
        all_orphans = self.orphans + [o for r in self.lineages for o in r.orphans]
        return {
            "lineages": len(self.lineages),
            "snapshots_kept": sum(len(r.shown_plan().kept) + len(r.spared) for r in self.lineages),
            "snapshots_planned_for_deletion": sum(len(r.plan.doomed) for r in self.lineages),
            "snapshots_deleted": sum(len(r.deleted) for r in self.lineages),
            "snapshots_spared": sum(len(r.spared) for r in self.lineages),
            "objects_deleted": sum(sum(r.deleted.values()) for r in self.lineages)
            + sum(o.objects for o in all_orphans if o.action == "deleted"),
            "orphans_deleted": sum(1 for o in all_orphans if o.action == "deleted"),
            "orphans_in_flight": sum(1 for o in all_orphans if o.action == "in_flight"),
            "trim_points_advanced": sum(1 for r in self.lineages if r.trim_advanced),
            "segments_deleted": sum(r.segments_deleted for r in self.lineages),
            "shards_sent": self.shards_sent,
            "lineages_sent": self.lineages_sent,
            "generations_failed": len(self.generations_failed),
            "stuck_jobs_found": len(self.stuck_jobs),
            "streams_failed": len(self.failed_streams),
            "pointers_read": sum(1 for r in self.lineages if r.pointer is not None),
            "pointers_lagging": sum(
                1 for r in self.lineages if r.pointer is not None and r.pointer.lagging
            ),
            "pointers_repaired": sum(
                1 for r in self.lineages if r.pointer is not None and r.pointer.repaired
            ),
            "pointers_unrepaired": len(self.pointers_unrepaired),
            "latests_broken": sum(1 for r in self.lineages if r.heal and r.heal.broken),
            "latests_healed": sum(1 for r in self.lineages if r.heal and r.heal.healed),
            "stuck_jobs_reconciled": sum(1 for j in self.stuck_jobs if j.action in SETTLED),
            "errors": len(self.errors)
            + len(self.failures)
            + sum(len(r.errors) for r in self.lineages)
            + sum(1 for o in all_orphans if o.action == "error")
            + sum(1 for j in self.stuck_jobs if j.action == "error"),
        }

    def to_dict(self) -> dict[str, object]:
        return {
            "run_id": self.run_id,
            "dry_run": self.dry_run,
            "stream": self.stream,
            "started_at": self.started_at.isoformat(),
            "complete": self.complete,
            "failed": self.failed,
            "resume_after": self.resume_after,
            "counts": self.counts(),
            "lineages": [r.to_dict() for r in self.lineages],
            "orphans": [o.to_dict() for o in self.orphans],
            "stuck_jobs": [j.to_dict() for j in self.stuck_jobs],
            "generations_failed": [
                {"stream": g.stream, "generation": g.generation, "missing": list(g.missing)}
                for g in self.generations_failed
            ],
            "errors": self.errors,
            "failures": self.failures,
            "failed_streams": self.failed_streams,
            "policy_notes": {stream: list(notes) for stream, notes in self.policy_notes.items()},
        }
