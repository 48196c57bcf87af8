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

One part's failure is its own: an unexpected error in a lineage (e.g. its stream's stored
policy cannot be read) is logged and reported on that lineage (``failure``), in the stuck-job
sweep or the unledgered sweep on the run (``failures``); every other lineage, stream and
step still runs, and the report says the run ``failed`` so that the gc function fails the
scheduled invocation (retried, then alarmed). What a lineage's pointer objects name is never
deleted, and a lagging ``latest.json`` is repaired (``gc_pointers.py``).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator, Mapping

from snapledger.core.retention import RetentionPlan
from snapledger.errors import InvalidKeyError, SnapledgerError
from snapledger.gc_settings import GcConfig
from snapledger.ids import new_ulid
from snapledger.layout import check_stream_name
from snapledger.layouts.lineage import LineageLayout
from snapledger.models.commands import DeletedPrefix
from snapledger.models.gc import GcCheckpoint, GcPhase
from snapledger.models.ledger import (
    Head,
    LineageId,
    SnapshotRecord,
    SnapshotStatus,
    snapshot_sort_key,
)
from snapledger.ports import LineageIndex, ObjectInfo
from snapledger.services import restate_evictions, restate_pointer
from snapledger.services.deletion_batch import DeletionBatch, Finish, LineageTicket
from snapledger.services.expiry import expire_plan, finisher, plan_lineage, queue_deletions
from snapledger.services.gc_deps import Budget, GcDeps
from snapledger.services.gc_fanout import GcShard, dispatch, shard_heads
from snapledger.services.gc_parallel import run_lineages
from snapledger.services.gc_pointers import GenerationPointers, LineagePointers
from snapledger.services.gc_report import GcReport, LineageReport, OrphanOutcome
from snapledger.services.generations import GenerationGuards
from snapledger.services.object_deletion import list_lineage
from snapledger.services.orphans import sweep_lineage, sweep_unledgered_streams
from snapledger.services.policies import PolicyCache, StoredPolicyError
from snapledger.services.restate_heal import heal_partition
from snapledger.services.restate_pointer import PointerUnreadableError, RestatePointers
from snapledger.services.stuck_jobs import reconcile_stuck_jobs, settle_lineage_jobs

_log = logging.getLogger(__name__)
_EMPTY_PLAN = RetentionPlan(kept=(), doomed=(), witnesses=(), trim=None)
_DELETABLE = (SnapshotStatus.EXPIRING, SnapshotStatus.DELETED)
#: The records of the prefixes the orphan sweep looks at: none, or DELETED.
_DELETABLE_OR_NONE = (None, SnapshotStatus.DELETED)


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
            policies.min_generations,
            deps.clock,
            fail_overdue=not report.dry_run,
            failed=report.generations_failed,
        )
        self.generation_pointers = GenerationPointers(deps.store)
        report.policy_notes = policies.notes

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
        try:
            report.stuck_jobs = reconcile_stuck_jobs(
                self.deps,
                self.config,
                stream=report.stream,
                dry_run=self.dry_run,
                budget=self.budget,
            )
        except Exception as exc:  # its own failure: the lineages are still collected
            self._failed("the stuck-job sweep", exc)
        after_stream: str | None = None
        if checkpoint is None or checkpoint.phase == "lineages":
            start = _lineage_from(checkpoint.after) if checkpoint and checkpoint.after else None
            finished, last = self._lineage_phase(start)
            if not finished:
                self._stop(checkpoint, "lineages", None if last is None else str(last))
                return
        else:
            after_stream = checkpoint.after
        try:
            outcomes, finished, last_stream = sweep_unledgered_streams(
                self.deps,
                self.config,
                run_id=report.run_id,
                stream=report.stream,
                after_stream=after_stream,
                dry_run=self.dry_run,
                budget=self.budget,
            )
        except Exception as exc:  # the next run starts over (no checkpoint inside it)
            self._failed("the sweep of lineages with no ledger record", exc)
            outcomes, finished = [], True
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

    def _failed(self, step: str, exc: Exception) -> None:
        _log.exception("GC: %s failed; the run goes on without it", step)
        self.report.failures.append(f"{step} failed: {type(exc).__name__}: {exc}")

    def _collect(
        self, head: Head, batch: DeletionBatch, ticket: LineageTicket
    ) -> tuple[LineageReport, bool]:
        """One lineage's pass; an error of its own ends it alone (reported), never the run."""
        report = LineageReport(head.lineage, _EMPTY_PLAN, trim_lsn=head.trim_lsn)
        ticket.errors = report.errors
        ticket.on_failure = report.fail
        try:
            return self._collect_lineage(head, batch, ticket, report)
        except (StoredPolicyError, PointerUnreadableError) as exc:  # the run alarms
            report.fail(str(exc))
        except SnapledgerError as exc:
            report.errors.append(str(exc))
        except Exception as exc:  # a bug or a hostile value: this lineage fails alone
            _log.exception("GC: lineage %s failed; the run goes on", head.lineage)
            report.fail(f"{type(exc).__name__}: {exc}")
        return report, False

    def _collect_lineage(
        self, head: Head, batch: DeletionBatch, ticket: LineageTicket, report: LineageReport
    ) -> tuple[LineageReport, bool]:
        # The stream's generations first: its overdue ones are failed even when its policy
        # cannot be read (they then keep every member).
        generations = self.generations(head.stream)
        policy = self.policies(head.stream)
        layout = self.deps.layouts.for_stream(head.stream)
        restate_layout = self.deps.layouts.restate_for(head.stream)
        if restate_layout is not None:  # first: what latest.json names after healing counts
            report.heal = heal_partition(
                self.deps.ledger,
                self.deps.store,
                self.deps.clock,
                restate_layout,
                head.partition,
                dry_run=self.dry_run,
            )
        report.plan, records = plan_lineage(self.deps, head, policy, self.config, generations)
        pointers: LineagePointers | RestatePointers = (
            LineagePointers(self.deps.store, head, self.generation_pointers)
            if restate_layout is None
            else RestatePointers(
                self.deps.store,
                restate_layout,
                head.partition,
                known=report.heal.pointer if report.heal else None,
            )
        )
        sort_key_of = _folder_sort_key(layout, head.partition)
        if report.plan.doomed:  # something to delete: what do the pointers name?
            members = any(d.record.member_of is not None for d in report.plan.doomed)
            named = pointers.named(members=members)
            if any(d.record.sort_key in named for d in report.plan.doomed):
                report.plan, records = plan_lineage(
                    self.deps,
                    head,
                    policy,
                    self.config,
                    generations,
                    named=named,
                    records=records,
                )
            pointers.repair(self.deps, dry_run=self.dry_run)
            report.pointer = pointers.check
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
            layout,
            head.partition,
            # A Restate lineage is listed whole: its evictions are noticed (it is small)
            skip=_owned_by_ledger(statuses, sort_key_of) if restate_layout is None else _none,
            stop=self.budget.exhausted,
        )
        if stopped:
            return report, True
        if restate_layout is not None and not self.dry_run:
            gone = restate_evictions.evicted(records, listing)
            report.notes += restate_evictions.record_evictions(
                self.deps.ledger, self.deps.clock, head.lineage, gone, report.plan
            )
        listing, kept = self._unnamed(listing, statuses, pointers, report, sort_key_of)
        if not self.dry_run:
            ticket.finish = finisher(
                self.deps,
                report,
                head=head,
                records=records,
                policy=policy,
                run_id=self.report.run_id,
            )
            if isinstance(pointers, RestatePointers):
                ticket.finish = _pruning(ticket.finish, self.deps, pointers, report)
            queue_deletions(batch, ticket, report, expiring, listing)
        swept, stopped = sweep_lineage(
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
        report.orphans = kept + swept
        report.jobs_settled = settle_lineage_jobs(
            self.deps, head, dry_run=self.dry_run, budget=self.budget
        )
        return report, stopped

    def _unnamed(
        self,
        listing: dict[str, list[ObjectInfo]],
        statuses: Mapping[str, SnapshotStatus],
        pointers: LineagePointers | RestatePointers,
        report: LineageReport,
        sort_key_of: Callable[[str], str],
    ) -> tuple[dict[str, list[ObjectInfo]], list[OrphanOutcome]]:
        """The listing less the prefixes the orphan sweep would look at (no live record)
        that a pointer names, and those, each ``kept``; the pointers are read only when
        there is such a prefix."""
        candidates = [p for p in listing if statuses.get(sort_key_of(p)) in _DELETABLE_OR_NONE]
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


def _folder_sort_key(layout: LineageLayout, partition: int) -> Callable[[str], str]:
    """The sort key of the snapshot in a folder the lineage's listing returned."""

    def sort_key(prefix: str) -> str:
        folder = layout.folder(partition, prefix)
        if folder is None:  # list_lineage returns only the layout's snapshot folders
            raise InvalidKeyError(f"{prefix!r} is not a snapshot folder of {layout.stream}")
        return snapshot_sort_key(folder.lsn, folder.snapshot_id)

    return sort_key


def _pruning(
    finish: Finish, deps: GcDeps, pointers: RestatePointers, report: LineageReport
) -> Finish:
    """``finish``, then the snapshots it deleted dropped from Restate's latest.json
    ``retained_snapshots`` by compare-and-swap (conditioned on the version this run read,
    if any: a lost race reads again). A failure is the lineage's error; the entries it
    leaves name deleted files, which heal and restore-from-chosen check and pass over,
    and Restate drops them itself as it evicts."""

    def finish_and_prune(remaining: list[DeletedPrefix], budget: Budget) -> bool:
        stopped = finish(remaining, budget)
        if report.deleted:
            try:
                restate_pointer.prune(
                    deps.store,
                    pointers.layout,
                    pointers.partition,
                    report.deleted,
                    first=pointers.known,
                )
            except Exception as exc:  # the deletions stand
                report.errors.append(
                    f"dropping deleted snapshots from Restate's latest.json failed: "
                    f"{type(exc).__name__}: {exc}"
                )
        return stopped

    return finish_and_prune


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
