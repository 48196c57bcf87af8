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
deleted, and a lagging ``latest.json`` is repaired (``gc_pointers.py``). One lineage's pass,
step by step: ``gc_lineage.py``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterator

from snapledger.gc_settings import GcConfig
from snapledger.ids import new_ulid
from snapledger.layout import check_stream_name
from snapledger.models.gc import GcCheckpoint, GcPhase
from snapledger.models.ledger import Head, LineageId
from snapledger.ports import LineageIndex
from snapledger.services.gc_deps import Budget, GcDeps
from snapledger.services.gc_fanout import GcShard, dispatch, shard_heads
from snapledger.services.gc_lineage import LineageCollector
from snapledger.services.gc_parallel import run_lineages
from snapledger.services.gc_pointers import GenerationPointers
from snapledger.services.gc_report import GcReport
from snapledger.services.gc_steps import CollectedStrategy
from snapledger.services.generations import GenerationGuards
from snapledger.services.orphans import sweep_unledgered_streams
from snapledger.services.policies import PolicyCache
from snapledger.services.stuck_jobs import reconcile_stuck_jobs

_log = logging.getLogger(__name__)


def run_gc(
    deps: GcDeps[CollectedStrategy],
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
    deps: GcDeps[CollectedStrategy],
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
    """One run's phases: the stuck-job sweep, the lineages (here, or sent out in shards),
    the lineages with no ledger record; where it stopped, saved as the checkpoint."""

    def __init__(
        self,
        *,
        deps: GcDeps[CollectedStrategy],
        config: GcConfig,
        budget: Budget,
        policies: PolicyCache,
        report: GcReport,
    ) -> None:
        self.deps = deps
        self.config = config
        self.budget = budget
        self.report = report
        self.lineages = LineageCollector(
            deps=deps,
            config=config,
            budget=budget,
            policies=policies,
            generations=GenerationGuards(
                deps.streams,
                policies.min_generations,
                deps.clock,
                fail_overdue=not report.dry_run,
                failed=report.generations_failed,
            ),
            generation_pointers=GenerationPointers(deps.store),
            run_id=report.run_id,
            dry_run=report.dry_run,
        )
        report.policy_notes = policies.notes

    @classmethod
    def start(
        cls,
        deps: GcDeps[CollectedStrategy],
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
        self._sweep_stuck_jobs()
        after_stream: str | None = None
        if checkpoint is None or checkpoint.phase == "lineages":
            start = _lineage_from(checkpoint.after) if checkpoint and checkpoint.after else None
            finished, last = self._lineage_phase(start)
            if not finished:
                self._stop(checkpoint, "lineages", None if last is None else str(last))
                return
        else:
            after_stream = checkpoint.after
        finished, last_stream = self._sweep_unledgered(after_stream)
        if not finished:
            self._stop(checkpoint, "orphans", last_stream)
            return
        report.complete = True
        if checkpoint is not None and resumable:
            self.deps.lineages.clear_checkpoint(read_version=checkpoint.version)

    def execute_shard(self, shard: GcShard) -> None:
        self.report.complete, _ = self._lineage_pass(shard_heads(self.deps.ledger, shard), None)

    def _sweep_stuck_jobs(self) -> None:
        """The jobs whose runs ended unrecorded, settled; its own failure is reported and
        the lineages are still collected."""
        report = self.report
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
            self.lineages.collect,
            deps=self.deps,
            run_id=self.report.run_id,
            budget=self.budget,
            workers=self.config.gc_workers,
            start=start,
        )
        self.report.lineages += result.reports
        return result.finished, result.finished_through

    def _sweep_unledgered(self, after_stream: str | None) -> tuple[bool, str | None]:
        """The lineages that exist only in the object store, streams after
        ``after_stream``; (finished, the last stream swept)."""
        report = self.report
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
            outcomes, finished, last_stream = [], True, None
        report.orphans = outcomes
        return finished, last_stream

    def _failed(self, step: str, exc: Exception) -> None:
        _log.exception("GC: %s failed; the run goes on without it", step)
        self.report.failures.append(f"{step} failed: {type(exc).__name__}: {exc}")

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
