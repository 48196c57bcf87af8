"""One GC run: stuck jobs, then every lineage (plan, apply, trim, orphans), then the
lineages that exist only in the object store. docs/retention.md tells the whole story.

The run pages through lineages (HEAD items via the ``by_kind`` index) and works up to
``gc_workers`` of them at once (``gc_parallel.py``); past ``gc_fan_out_above_lineages``,
with a shard queue, it sends them to workers instead (``gc_fanout.py``, ``run_gc_shard``).
It stops taking new work when ``remaining_seconds()`` drops under the configured reserve.
Where it stopped is saved as a checkpoint item (a conditional write) and the next
scheduled run resumes there; a lineage cut short is redone whole, which is safe because
every step is idempotent. A dry run, or a run over one stream, neither reads nor moves
the checkpoint.

``run_gc(..., dry_run=True)`` reads the same things and writes nothing: no ledger event,
no object deleted, no checkpoint; its report is the plan with every reason.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping

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
from snapledger.ports import LineageIndex
from snapledger.services.deletion_batch import DeletionBatch, LineageTicket
from snapledger.services.expiry import expire_plan, finisher, plan_lineage, queue_deletions
from snapledger.services.gc_deps import Budget, GcDeps
from snapledger.services.gc_fanout import GcShard, dispatch, shard_heads
from snapledger.services.gc_parallel import run_lineages
from snapledger.services.gc_report import GcReport, LineageReport
from snapledger.services.generations import GenerationGuards
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
    if stream is not None:
        check_stream_name(stream)
    run = _Run.start(
        deps, config, remaining_seconds, run_id=run_id or new_ulid(), dry_run=dry_run, stream=stream
    )
    run.execute()
    return run.report


def run_gc_shard(
    deps: GcDeps,
    shard: GcShard,
    *,
    config: GcConfig | None = None,
    remaining_seconds: Callable[[], float] | None = None,
) -> GcReport:
    """GC over one shard's lineages (sent by a coordinator): the lineage pass only, no
    checkpoint. ``complete`` is False if the budget ran out first: the shard is then
    delivered again, and the lineages already done cost only their reads."""
    run = _Run.start(deps, config, remaining_seconds, run_id=shard.run_id)
    run.execute_shard(shard)
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
        self.generations = GenerationGuards(
            deps.streams,
            lambda stream: policies(stream).min_generations,
            deps.clock,
            fail_overdue=not report.dry_run,
            failed=report.generations_failed,
        )

    @classmethod
    def start(
        cls,
        deps: GcDeps,
        config: GcConfig | None,
        remaining_seconds: Callable[[], float] | None,
        *,
        run_id: str,
        dry_run: bool = False,
        stream: str | None = None,
    ) -> _Run:
        config = config or GcConfig()
        return cls(
            deps=deps,
            config=config,
            budget=Budget(remaining_seconds, config.stop_with_seconds_left),
            policies=PolicyCache(deps.policies, config.default_policy()),
            report=GcReport(
                run_id=run_id, dry_run=dry_run, stream=stream, started_at=deps.clock.now()
            ),
        )

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
            finished, last = self._lineage_phase(start)
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

    def execute_shard(self, shard: GcShard) -> None:
        self.report.complete, _ = self._lineage_pass(shard_heads(self.deps.ledger, shard), None)

    def _lineage_phase(self, start: LineageId | None) -> tuple[bool, LineageId | None]:
        """Every lineage after ``start``, here or sent out in shards; (finished, where a
        stopped run resumes)."""
        heads = paged_heads(
            self.deps.lineages,
            stream=self.report.stream,
            after=start,
            page_size=self.config.page_size,
        )
        queue = self.deps.shards
        if queue is None or self.dry_run or self.report.stream is not None:
            return self._lineage_pass(heads, start)
        threshold = self.config.gc_fan_out_above_lineages
        ahead = list(itertools.islice(heads, threshold + 1))
        if len(ahead) <= threshold:
            return self._lineage_pass(iter(ahead), start)  # small: one invocation does it
        sent = dispatch(
            itertools.chain(ahead, heads),
            queue,
            run_id=self.report.run_id,
            shard_size=self.config.gc_shard_size,
            budget=self.budget,
            start=start,
        )
        self.report.shards_sent += sent.shards
        self.report.lineages_sent += sent.lineages
        self.report.errors += sent.errors
        return sent.finished, sent.last_sent

    def _lineage_pass(
        self, heads: Iterator[Head], start: LineageId | None
    ) -> tuple[bool, LineageId | None]:
        """Work every lineage of ``heads`` here, ``gc_workers`` at a time.

        A lineage is fully done once its batch has sent its objects and written its marks,
        so a stop resumes after the last lineage done with every one before it done too.
        """
        result = run_lineages(
            heads,
            self._collect,
            deps=self.deps,
            run_id=self.report.run_id,
            budget=self.budget,
            workers=self.config.gc_workers,
            start=start,
        )
        self.report.lineages += result.reports
        return result.finished, result.finished_through

    def _collect(
        self, head: Head, batch: DeletionBatch, ticket: LineageTicket
    ) -> tuple[LineageReport, bool]:
        report = LineageReport(head.lineage, _EMPTY_PLAN, trim_lsn=head.trim_lsn)
        ticket.errors = report.errors
        try:
            policy = self.policies(head.stream)
            generations = self.generations(head.stream)
            report.plan, records = plan_lineage(self.deps, head, policy, self.config, generations)
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
                    generations=generations,
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
            report.jobs_settled = settle_lineage_jobs(
                self.deps, head, dry_run=self.dry_run, budget=self.budget
            )
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


def paged_heads(
    index: LineageIndex, *, stream: str | None, after: LineageId | None, page_size: int
) -> Iterator[Head]:
    """Every lineage's HEAD after ``after`` (of ``stream``, or all), a page read at a time
    as the caller gets to it."""
    while True:
        page = index.list_heads(stream=stream, after=after, limit=page_size)
        yield from page.heads
        if not page.more or not page.heads:
            return
        after = page.heads[-1].lineage


def _lineage_from(text: str) -> LineageId:
    stream, _, partition = text.rpartition("/")
    return LineageId(stream=stream, partition=int(partition))
