"""One lineage's GC pass, step by step (``gc.py`` runs it over every lineage):

1. heal: what the layout does before planning (a producer's ``latest.json`` healed first,
   so that what it names after healing counts);
2. plan: what the policy keeps and dooms, planned again if a pointer object names a
   doomed snapshot; a lagging pointer is repaired (``gc_pointers.py``);
3. expire: the doomed snapshots marked EXPIRING in the ledger (not in a dry run);
4. list: the lineage's snapshot folders in the object store, past the ones the ledger
   keeps (every one, for a layout whose producer evicts its own); what the listing shows
   the producer did is recorded (evictions);
5. keep what a pointer names among the folders the orphan sweep would look at;
6. queue the deletions (the expired snapshots' objects), to finish once they are sent
   (and what the layout does after deleting);
7. sweep the orphans (folders no live record owns), then settle the lineage's jobs.

Where layouts differ the pass asks the stream's strategy (``LayoutStrategy.gc_steps``,
``gc_steps.py``); it never branches on a layout's name.

An error of the lineage's own ends its pass alone: reported on it, never the run's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from snapledger.core.retention import RetentionPlan
from snapledger.errors import InvalidKeyError, SnapledgerError
from snapledger.gc_settings import GcConfig
from snapledger.layout import MANIFEST_NAME
from snapledger.layouts.lineage import LineageLayout
from snapledger.limits import MAX_NEW_SHARED_FILE_AGE_S
from snapledger.models.ledger import Head, SnapshotRecord, SnapshotStatus, snapshot_sort_key
from snapledger.ports import ObjectInfo
from snapledger.services.deletion_batch import DeletionBatch, LineageTicket
from snapledger.services.expiry import expire_plan, finisher, plan_lineage, queue_deletions
from snapledger.services.gc_deps import Budget, GcDeps
from snapledger.services.gc_pointers import GenerationPointers, PointerUnreadableError
from snapledger.services.gc_references import NONE, lineage_references
from snapledger.services.gc_report import LineageReport, OrphanOutcome
from snapledger.services.gc_steps import CollectedStrategy, Listing, Pointers, StepsContext
from snapledger.services.generations import GenerationGuards
from snapledger.services.object_deletion import list_lineage
from snapledger.services.orphans import sweep_lineage
from snapledger.services.policies import PolicyCache, StoredPolicyError
from snapledger.services.stuck_jobs import settle_lineage_jobs

_log = logging.getLogger(__name__)
_EMPTY_PLAN = RetentionPlan(kept=(), doomed=(), witnesses=(), trim=None)
_DELETABLE = (SnapshotStatus.EXPIRING, SnapshotStatus.DELETED)
#: The records of the prefixes the orphan sweep looks at: none, or DELETED.
_DELETABLE_OR_NONE = (None, SnapshotStatus.DELETED)


@dataclass(frozen=True, slots=True)
class LineageCollector:
    """What every lineage of one run shares: its dependencies, settings, budget, the
    streams' policies and generations, and the streams' generation pointers."""

    deps: GcDeps[CollectedStrategy]
    config: GcConfig
    budget: Budget
    policies: PolicyCache
    generations: GenerationGuards
    generation_pointers: GenerationPointers
    run_id: str
    dry_run: bool

    def collect(
        self, head: Head, batch: DeletionBatch, ticket: LineageTicket
    ) -> tuple[LineageReport, bool]:
        """One lineage's pass; an error of its own ends it alone (reported), never the run."""
        report = LineageReport(head.lineage, _EMPTY_PLAN, trim_lsn=head.trim_lsn)
        ticket.errors = report.errors
        ticket.on_failure = report.fail
        try:
            return report, _LineagePass(self, head, batch, ticket, report).run()
        except (StoredPolicyError, PointerUnreadableError) as exc:  # the run alarms
            report.fail(str(exc))
        except SnapledgerError as exc:
            report.errors.append(str(exc))
        except Exception as exc:  # a bug or a hostile value: this lineage fails alone
            _log.exception("GC: lineage %s failed; the run goes on", head.lineage)
            report.fail(f"{type(exc).__name__}: {exc}")
        return report, False


class _LineagePass:
    """One lineage's steps, in order; each reads what the ones before it found."""

    def __init__(
        self,
        collector: LineageCollector,
        head: Head,
        batch: DeletionBatch,
        ticket: LineageTicket,
        report: LineageReport,
    ) -> None:
        self.collector = collector
        self.deps = collector.deps
        self.dry_run = collector.dry_run
        self.head = head
        self.batch = batch
        self.ticket = ticket
        self.report = report
        # The stream's generations first: its overdue ones are failed even when its policy
        # cannot be read (they then keep every member).
        self.generations = collector.generations(head.stream)
        self.policy = collector.policies(head.stream)
        self.layout = self.deps.layouts.for_stream(head.stream)
        self.steps = self.layout.gc_steps(
            StepsContext(self.deps, head, report, collector.generation_pointers, self.dry_run)
        )
        self.sort_key_of = _folder_sort_key(self.layout, head.partition)
        self.records: list[SnapshotRecord] = []
        self.statuses: dict[str, SnapshotStatus] = {}
        self.expiring: list[SnapshotRecord] = []
        self.shared: list[ObjectInfo] = []  # the lineage's shared/ folder, as listed
        self.references = NONE

    def run(self) -> bool:
        """Every step; whether the budget stopped the pass before its end."""
        self.heal()
        pointers = self.plan()
        if self.expire():
            return True
        listing = self.list_folders()
        if listing is None:
            return True
        self.steps.after_listing(listing, _as_marked(self.records, self.statuses), pointers)
        listing, kept = self.keep_named(listing, pointers)
        self.references = lineage_references(
            self.deps,
            self.head,
            self.records,
            self.statuses,
            deleting=bool(self.expiring or self.shared),
        )
        self.queue_deletions(listing, pointers)
        swept, stopped = self.sweep_orphans(listing)
        self.report.orphans = kept + swept
        self.settle_jobs()
        return stopped

    def heal(self) -> None:
        """What the layout does before planning (a producer's pointer healed first: what
        it names then counts)."""
        self.steps.heal()

    def plan(self) -> Pointers:
        """The retention plan, planned again if a pointer names a doomed snapshot; the
        lineage's pointers (read only when something is doomed, and repaired then)."""
        collector, report, head = self.collector, self.report, self.head
        report.plan, self.records = plan_lineage(
            self.deps,
            head,
            self.policy,
            collector.config,
            self.generations,
            unrestorable=self.unrestorable,
        )
        recorded = self.steps.as_recorded(self.records)
        if recorded is not self.records:
            # A dry run's heal records nothing: plan as the run would, on what it found.
            self.records = recorded
            report.plan, _ = plan_lineage(
                self.deps,
                head,
                self.policy,
                collector.config,
                self.generations,
                records=self.records,
                unrestorable=self.unrestorable,
            )
        pointers = self.steps.pointers()
        if report.plan.doomed:  # something to delete: what do the pointers name?
            members = any(d.record.member_of is not None for d in report.plan.doomed)
            named = pointers.named(members=members)
            if any(d.record.sort_key in named for d in report.plan.doomed):
                report.plan, self.records = plan_lineage(
                    self.deps,
                    head,
                    self.policy,
                    collector.config,
                    self.generations,
                    named=named,
                    records=self.records,
                    unrestorable=self.unrestorable,
                )
            pointers.repair(self.deps, dry_run=self.dry_run)
            report.pointer = pointers.check
        self.statuses = {r.sort_key: r.status for r in self.records}
        return pointers

    def unrestorable(self, records: list[SnapshotRecord]) -> dict[str, str]:
        """The REGISTERED snapshots the layout says cannot be restored from, and why
        (``LayoutStrategy.unrestorable``): retention counts none of them."""
        layout, now = self.layout, self.deps.clock.now()
        facts = layout.facts(records)
        found = {}
        for record in records:
            if record.status is SnapshotStatus.REGISTERED:
                why = layout.unrestorable(record, facts, now)
                if why is not None:
                    found[record.sort_key] = why
        return found

    def expire(self) -> bool:
        """The doomed snapshots marked EXPIRING (not in a dry run); whether it stopped."""
        if self.dry_run:
            return False
        collector = self.collector
        applied = expire_plan(
            self.deps,
            self.report,
            head=self.head,
            records=self.records,
            policy=self.policy,
            config=collector.config,
            run_id=collector.run_id,
            budget=collector.budget,
            generations=self.generations,
        )
        if applied.stopped:
            return True
        self.statuses, self.expiring = applied.statuses, applied.expiring
        return False

    def list_folders(self) -> Listing | None:
        """The lineage's snapshot folders, past the ones the ledger keeps this run (all of
        them where the producer evicts its own: they are noticed); None if stopped."""
        listing, stopped = list_lineage(
            self.deps.store,
            self.layout,
            self.head.partition,
            skip=_none
            if self.steps.lists_every_folder
            else _owned_by_ledger(self.statuses, self.sort_key_of),
            stop=self.collector.budget.exhausted,
            # references are a native manifest's (_manifest.json): its layouts' shared/
            shared=self.shared
            if self.layout.manifest_name == MANIFEST_NAME or self.steps.lists_shared
            else None,
        )
        return None if stopped else listing

    def keep_named(
        self, listing: Listing, pointers: Pointers
    ) -> tuple[Listing, list[OrphanOutcome]]:
        """The listing less the prefixes the orphan sweep would look at (no live record)
        that a pointer names, and those, each ``kept``; the pointers are read only when
        there is such a prefix."""
        report = self.report
        candidates = [
            p for p in listing if self.statuses.get(self.sort_key_of(p)) in _DELETABLE_OR_NONE
        ]
        if not candidates:
            return listing, []
        pointers.named()
        if report.pointer is None:
            pointers.repair(self.deps, dry_run=self.dry_run)
            report.pointer = pointers.check
        kept: list[OrphanOutcome] = []
        for prefix in candidates:
            why = pointers.named_prefix(prefix)
            if why is not None:
                kept.append(OrphanOutcome(prefix, "kept", objects=len(listing[prefix]), note=why))
        names = {outcome.prefix for outcome in kept}
        return {p: objects for p, objects in listing.items() if p not in names}, kept

    def queue_deletions(self, listing: Listing, pointers: Pointers) -> None:
        """The expired snapshots' objects queued on the run's batch, and what finishes the
        lineage once they are sent (not in a dry run)."""
        if self.dry_run:
            return
        ticket = self.ticket
        ticket.finish = finisher(
            self.deps,
            self.report,
            head=self.head,
            records=self.records,
            policy=self.policy,
            run_id=self.collector.run_id,
        )
        ticket.finish = self.steps.after_deleting(ticket.finish, pointers)
        queue_deletions(
            self.batch,
            ticket,
            self.report,
            self.expiring,
            listing,
            layout=self.layout,
            root=self.layout.root(self.head.partition),
            live=self.references.live
            | self.young_shared()
            | _held(self.steps.held_by_producer, self.shared),
            statuses={**self.statuses, **self.references.owners},
        )

    def young_shared(self) -> set[str]:
        """The ``shared/`` files written within twice ``MAX_NEW_SHARED_FILE_AGE_S``: a
        registration may still take one no registered snapshot references as new, so a
        deletion leaves them to the orphan sweep (``core/references.aged_shared``)."""
        now, young = self.deps.clock.now(), timedelta(seconds=2 * MAX_NEW_SHARED_FILE_AGE_S)
        return {info.key for info in self.shared if now - info.last_modified <= young}

    def sweep_orphans(self, listing: Listing) -> tuple[list[OrphanOutcome], bool]:
        """The folders no live record owns (``orphans.py``); whether it stopped."""
        collector = self.collector
        return sweep_lineage(
            self.deps,
            self.head.lineage,
            self.statuses,
            listing,
            collector.config,
            dry_run=self.dry_run,
            budget=collector.budget,
            batch=self.batch,
            ticket=self.ticket,
            protected=self.references.protected | _held(self.steps.held_by_producer, self.shared),
            shared=self.shared,
        )

    def settle_jobs(self) -> None:
        self.report.jobs_settled = settle_lineage_jobs(
            self.deps, self.head, dry_run=self.dry_run, budget=self.collector.budget
        )


def _as_marked(
    records: list[SnapshotRecord], statuses: Mapping[str, SnapshotStatus]
) -> list[SnapshotRecord]:
    """``records`` with the statuses after the pass's marks (its EXPIRING ones)."""
    return [
        r
        if statuses.get(r.sort_key, r.status) is r.status
        else r.model_copy(update={"status": statuses[r.sort_key]})
        for r in records
    ]


def _held(held: frozenset[str], shared: list[ObjectInfo]) -> set[str]:
    """The keys the producer's own list still uses that the ledger does not know
    (``LineageSteps.held_by_producer``; a folder's entry holds its listed files)."""
    folders = tuple(key for key in held if key.endswith("/"))
    if not folders:
        return set(held)
    return set(held) | {info.key for info in shared if info.key.startswith(folders)}


def _folder_sort_key(layout: LineageLayout, partition: int) -> Callable[[str], str]:
    """The sort key of the snapshot in a folder the lineage's listing returned."""

    def sort_key(prefix: str) -> str:
        folder = layout.folder(partition, prefix)
        if folder is None:  # list_lineage returns only the layout's snapshot folders
            raise InvalidKeyError(f"{prefix!r} is not a snapshot folder of {layout.stream}")
        return snapshot_sort_key(folder.lsn, folder.snapshot_id)

    return sort_key


def _none(prefix: str) -> bool:
    return False


def _owned_by_ledger(
    statuses: Mapping[str, SnapshotStatus], sort_key_of: Callable[[str], str]
) -> Callable[[str], bool]:
    """Whether a prefix is a snapshot GC leaves alone this run (neither EXPIRING, DELETED
    nor unknown to the ledger): the lineage's listing skips over its objects."""

    def owned(prefix: str) -> bool:
        status = statuses.get(sort_key_of(prefix))
        return status is not None and status not in _DELETABLE

    return owned
