"""One GC run: stuck jobs, then every lineage (plan, apply, trim, orphans), then the
lineages that exist only in the object store. docs/retention.md tells the whole story.

The run pages through lineages (HEAD items via the ``by_kind`` index) and stops taking
new work when ``remaining_seconds()`` drops under the configured reserve. Where it stopped
is saved as a checkpoint item (a conditional write) and the next scheduled run resumes
there; a lineage cut short is redone whole, which is safe because every step is
idempotent. A dry run, or a run over one stream, neither reads nor moves the checkpoint.

``run_gc(..., dry_run=True)`` reads the same things and writes nothing: no ledger event,
no object deleted, no checkpoint; its report is the plan with every reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from snapledger.core.retention import RetentionPlan
from snapledger.errors import SnapledgerError
from snapledger.gc_settings import GcConfig
from snapledger.ids import new_ulid
from snapledger.layout import check_stream_name, parse_snapshot_prefix
from snapledger.models.gc import GcCheckpoint, GcPhase
from snapledger.models.ledger import (
    Head,
    LineageId,
    SnapshotRecord,
    SnapshotStatus,
    snapshot_sort_key,
)
from snapledger.services.deletion_batch import DeletionBatch, LineageTicket
from snapledger.services.expiry import expire_plan, finisher, plan_lineage, queue_deletions
from snapledger.services.gc_deps import Budget, GcDeps
from snapledger.services.gc_report import GcReport, LineageReport
from snapledger.services.object_deletion import list_lineage
from snapledger.services.orphans import sweep_lineage, sweep_unledgered_streams
from snapledger.services.policies import PolicyCache
from snapledger.services.stuck_jobs import reconcile_stuck_jobs, settle_lineage_jobs

_EMPTY_PLAN = RetentionPlan(kept=(), doomed=(), witnesses=(), trim=None)
_DELETABLE = (SnapshotStatus.EXPIRING, SnapshotStatus.DELETED)


def run_gc(
    deps: GcDeps,
    *,
    dry_run: bool = False,
    stream: str | None = None,
    config: GcConfig | None = None,
    remaining_seconds: Callable[[], float] | None = None,
    run_id: str | None = None,
) -> GcReport:
    """Apply (or, with ``dry_run``, only plan) retention on every lineage, or one stream's."""
    config = config or GcConfig()
    if stream is not None:
        check_stream_name(stream)
    run = _Run(
        deps=deps,
        config=config,
        budget=Budget(remaining_seconds, config.stop_with_seconds_left),
        policies=PolicyCache(deps.policies, config.default_policy()),
        report=GcReport(
            run_id=run_id or new_ulid(), dry_run=dry_run, stream=stream, started_at=deps.clock.now()
        ),
    )
    run.execute()
    return run.report


class _Run:
    def __init__(
        self,
        *,
        deps: GcDeps,
        config: GcConfig,
        budget: Budget,
        policies: PolicyCache,
        report: GcReport,
    ) -> None:
        self.deps = deps
        self.config = config
        self.budget = budget
        self.policies = policies
        self.report = report

    @property
    def dry_run(self) -> bool:
        return self.report.dry_run

    def execute(self) -> None:
        report = self.report
        resumable = not self.dry_run and report.stream is None
        checkpoint = self.deps.lineages.load_checkpoint() if resumable else None
        report.stuck_jobs = reconcile_stuck_jobs(
            self.deps, self.config, stream=report.stream, dry_run=self.dry_run, budget=self.budget
        )
        after_stream: str | None = None
        if checkpoint is None or checkpoint.phase == "lineages":
            start = _lineage_from(checkpoint.after) if checkpoint and checkpoint.after else None
            finished, last = self._lineage_pass(start)
            if not finished:
                self._stop(checkpoint, "lineages", None if last is None else str(last))
                return
        else:
            after_stream = checkpoint.after
        outcomes, finished, last_stream = sweep_unledgered_streams(
            self.deps,
            self.config,
            run_id=report.run_id,
            stream=report.stream,
            after_stream=after_stream,
            dry_run=self.dry_run,
            budget=self.budget,
        )
        report.orphans = outcomes
        if not finished:
            self._stop(checkpoint, "orphans", last_stream)
            return
        report.complete = True
        if checkpoint is not None and resumable:
            self.deps.lineages.clear_checkpoint(read_version=checkpoint.version)

    def _lineage_pass(self, start: LineageId | None) -> tuple[bool, LineageId | None]:
        """Every lineage after ``start``; (finished, the last lineage fully done).

        Deletes go into one batch across lineages; a lineage is fully done once the batch
        has sent its objects and written its marks, so a stop resumes after the last such.
        """
        batch = DeletionBatch(self.deps, run_id=self.report.run_id, budget=self.budget)
        after = start
        while True:
            page = self.deps.lineages.list_heads(
                stream=self.report.stream, after=after, limit=self.config.page_size
            )
            for head in page.heads:
                if self.budget.exhausted() or batch.stopped:
                    return self._drained(batch, start)
                ticket = batch.open(head.lineage, [])
                lineage_report, stopped = self._collect(head, batch, ticket)
                self.report.lineages.append(lineage_report)
                if stopped:
                    return self._drained(batch, start)  # this lineage is redone next time
                batch.close(ticket)
                after = head.lineage
            if not page.more or not page.heads:
                batch.flush()
                if batch.stopped:
                    return self._drained(batch, start)
                return True, batch.finished_through or start

    def _drained(
        self, batch: DeletionBatch, start: LineageId | None
    ) -> tuple[bool, LineageId | None]:
        """Stopped: finish what the batch holds on the reserve; resume after what is done."""
        batch.drain(self.budget.for_finishing())
        return False, batch.finished_through or start

    def _collect(
        self, head: Head, batch: DeletionBatch, ticket: LineageTicket
    ) -> tuple[LineageReport, bool]:
        report = LineageReport(head.lineage, _EMPTY_PLAN, trim_lsn=head.trim_lsn)
        ticket.errors = report.errors
        try:
            policy = self.policies(head.stream)
            report.plan, records = plan_lineage(self.deps, head, policy, self.config)
            statuses = {r.sort_key: r.status for r in records}
            expiring: list[SnapshotRecord] = []
            if not self.dry_run:
                applied = expire_plan(
                    self.deps,
                    report,
                    head=head,
                    records=records,
                    policy=policy,
                    config=self.config,
                    run_id=self.report.run_id,
                    budget=self.budget,
                )
                if applied.stopped:
                    return report, True
                statuses, expiring = applied.statuses, applied.expiring
            listing, stopped = list_lineage(
                self.deps.store,
                head.stream,
                head.partition,
                skip=_owned_by_ledger(statuses),
                stop=self.budget.exhausted,
            )
            if stopped:
                return report, True
            if not self.dry_run:
                ticket.finish = finisher(
                    self.deps,
                    report,
                    head=head,
                    records=records,
                    policy=policy,
                    run_id=self.report.run_id,
                )
                queue_deletions(batch, ticket, report, expiring, listing)
            report.orphans, stopped = sweep_lineage(
                self.deps,
                head.lineage,
                statuses,
                listing,
                self.config,
                dry_run=self.dry_run,
                budget=self.budget,
                batch=batch,
                ticket=ticket,
            )
            report.jobs_settled = settle_lineage_jobs(self.deps, head, dry_run=self.dry_run)
        except SnapledgerError as exc:
            report.errors.append(str(exc))
            return report, False
        return report, stopped

    def _stop(self, checkpoint: GcCheckpoint | None, phase: GcPhase, after: str | None) -> None:
        """Out of time: say where the next run resumes, and save it unless a dry run."""
        report = self.report
        report.resume_after = f"{phase}:{after or ''}"
        if self.dry_run or report.stream is not None:
            return
        saved = self.deps.lineages.save_checkpoint(
            GcCheckpoint(
                phase=phase,
                after=after,
                run_id=report.run_id,
                updated_at=self.deps.clock.now(),
                version=1 if checkpoint is None else checkpoint.version + 1,
            ),
            read_version=None if checkpoint is None else checkpoint.version,
        )
        if not saved:
            report.errors.append(
                "another GC run moved the checkpoint meanwhile; the next run resumes from its"
            )


def _owned_by_ledger(statuses: Mapping[str, SnapshotStatus]) -> Callable[[str], bool]:
    """Whether a prefix is a snapshot GC leaves alone this run (neither EXPIRING, DELETED
    nor unknown to the ledger): the lineage's listing skips over its objects."""

    def owned(prefix: str) -> bool:
        location = parse_snapshot_prefix(prefix)
        status = statuses.get(snapshot_sort_key(location.lsn, location.snapshot_id))
        return status is not None and status not in _DELETABLE

    return owned


def _lineage_from(text: str) -> LineageId:
    stream, _, partition = text.rpartition("/")
    return LineageId(stream=stream, partition=int(partition))
