"""The Restate layout's steps in a lineage's GC pass (``gc_steps.py``).

1. heal: the partition's ``latest.json`` healed first, so that what it names after healing
   counts (``restate_heal.py``); a dry run's heal records nothing, so the latest it finds
   broken is planned as broken in memory (``as_recorded``);
2. pointers: Restate's ``latest.json`` (``restate_pointer.RestatePointers``): what it names
   is kept; Restate writes it, so GC repairs nothing there;
3. the listing takes every folder (Restate evicts beyond ``num-retained``: GC notices);
4. after listing: the snapshots Restate evicted recorded (a dry run names them), then
   ``retained_snapshots`` rid of what snapledger deleted when an earlier run's drop did
   not finish (``restate_retained.reconcile``; not in a dry run);
5. after deleting: what this run deleted dropped from ``retained_snapshots``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from snapledger.layouts.restate_prefix import RestatePrefix
from snapledger.models.gc_commands import DeletedPrefix
from snapledger.models.ledger import SnapshotRecord
from snapledger.services import restate_evictions, restate_retained
from snapledger.services.deletion_batch import Finish
from snapledger.services.gc_deps import Budget
from snapledger.services.gc_steps import Listing, Pointers, StepsContext
from snapledger.services.restate_heal import HealOutcome, heal_partition
from snapledger.services.restate_pointer import RestatePointers


@dataclass
class RestateSteps:
    """A Restate lineage's steps (see the module docstring)."""

    context: StepsContext
    layout: RestatePrefix
    lists_every_folder: bool = True
    lists_shared: bool = False
    held_by_producer: frozenset[str] = frozenset()
    _pointers: RestatePointers | None = field(default=None, repr=False)
    _heal: HealOutcome | None = field(default=None, repr=False)  # also the report's part

    def heal(self) -> None:
        context = self.context
        deps = context.deps
        context.report.heal = self._heal = heal_partition(
            deps.ledger,
            deps.store,
            deps.clock,
            self.layout,
            context.head.partition,
            dry_run=context.dry_run,
        )

    def as_recorded(self, records: list[SnapshotRecord]) -> list[SnapshotRecord]:
        heal = self._heal
        if self.context.dry_run and heal is not None and heal.broken:
            return _found_broken(records, heal)
        return records

    def pointers(self) -> Pointers:
        heal = self._heal
        self._pointers = RestatePointers(
            self.context.deps.store,
            self.layout,
            self.context.head.partition,
            known=heal.pointer if heal else None,
        )
        return self._pointers

    def after_listing(
        self, listing: Listing, records: list[SnapshotRecord], pointers: Pointers
    ) -> None:
        context, report = self.context, self.context.report
        deps, lineage = context.deps, context.head.lineage
        gone = restate_evictions.evicted(records, listing)
        report.evicted = [record.snapshot_id for record in gone]
        if context.dry_run:
            report.notes += [restate_evictions.dry_run_note(record) for record in gone]
            return
        report.notes += restate_evictions.record_evictions(
            deps.ledger, deps.clock, lineage, gone, report.plan
        )
        if self._pointers is not None:
            restate_retained.reconcile(deps.ledger, self._pointers, lineage, records, report)

    def after_deleting(self, finish: Finish, pointers: Pointers) -> Finish:
        """``finish``, then the snapshots it deleted dropped from Restate's latest.json
        ``retained_snapshots`` by compare-and-swap (conditioned on the version this run
        read, if any: a lost race reads again). A failure is the lineage's error; the
        entries it leaves name deleted files, which heal and restore-from-chosen check and
        pass over, and the next run drops (``restate_retained.reconcile``)."""
        restate, report = self._pointers, self.context.report
        if restate is None:
            return finish

        def finish_and_prune(remaining: list[DeletedPrefix], budget: Budget) -> bool:
            stopped = finish(remaining, budget)
            if report.deleted:
                restate_retained.drop(restate, report.deleted, report)
            return stopped

        return finish_and_prune


def _found_broken(records: list[SnapshotRecord], heal: HealOutcome) -> list[SnapshotRecord]:
    """``records`` with the snapshot heal found broken marked so, as a real run records it
    (``SnapshotFoundBroken``) before it plans."""
    problems = tuple(heal.problems)
    return [
        r.model_copy(update={"broken": problems})
        if r.snapshot_id == heal.names and not r.broken
        else r
        for r in records
    ]
