"""GC's lineage pass: up to ``workers`` lineages at once, sharing one deletion batch.

A lineage is worked by one thread from start to end (plan, expire, list, queue its
deletes, sweep its orphans). The threads share the run's ``DeletionBatch``, which is
thread-safe: its requests still fill to 1,000 keys across every lineage, so the request
counts are those of one thread (⌈keys/1000⌉ ``DeleteObjects``), and its guarantees are
unchanged (a unit is marked DELETED only after the request with its last key answered).
Sending deletes and writing marks hold the batch's lock, so they are done one at a time;
reading, planning, expiring and listing run in parallel.

Where a stopped run resumes: lineages are handed out in the order the source gives them
(HEAD order), but finish out of order. ``finished_through`` is the last lineage of the
longest run of handed-out lineages that are all finished: everything up to it is wholly
done; a lineage after it may be finished too and is simply done again next time (every
step is idempotent). With one worker this is exactly the single batch's
``finished_through``.

The time budget is shared: once it runs out, no worker takes a new lineage; when all
have returned, the batch is drained on the reserve (``Budget.for_finishing``). A worker
that raises stops the others from taking new lineages, and the error ends the run (as a
crash would: nothing is drained).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from snapledger.models.ledger import Head, LineageId
from snapledger.services.deletion_batch import DeletionBatch, LineageTicket
from snapledger.services.gc_deps import Budget, GcDeps
from snapledger.services.gc_report import LineageReport
from snapledger.services.gc_steps import CollectedStrategy

#: One lineage's work: its report, and True if the budget ran out inside it.
Collect = Callable[[Head, DeletionBatch, LineageTicket], tuple[LineageReport, bool]]


@dataclass
class PassResult:
    finished: bool  # every lineage the source gave was finished
    finished_through: LineageId | None  # resume after this (None: nothing finished in order)
    reports: list[LineageReport] = field(default_factory=list)  # in the source's order


class _Lineages:
    """The source of lineages, shared by the workers: hands each out once, in order, and
    knows which are finished."""

    def __init__(self, heads: Iterator[Head], start: LineageId | None) -> None:
        self._heads = heads
        self._lock = threading.Lock()
        self._order: list[LineageId] = []
        self._done: set[LineageId] = set()
        self._through = 0  # how many of _order, from the start, are done
        self._start = start
        self._reports: dict[int, LineageReport] = {}
        self.stopped = False
        self.exhausted = False

    def take(self) -> tuple[int, Head] | None:
        with self._lock:
            if self.stopped or self.exhausted:
                return None
            head = next(self._heads, None)
            if head is None:
                self.exhausted = True
                return None
            self._order.append(head.lineage)
            return len(self._order) - 1, head

    def stop(self) -> None:
        with self._lock:
            self.stopped = True

    def report(self, index: int, report: LineageReport) -> None:
        with self._lock:
            self._reports[index] = report

    def finished(self, lineage: LineageId) -> None:
        with self._lock:
            self._done.add(lineage)
            while self._through < len(self._order) and self._order[self._through] in self._done:
                self._through += 1

    def result(self) -> PassResult:
        with self._lock:
            through = self._order[self._through - 1] if self._through else self._start
            complete = self.exhausted and not self.stopped and self._through == len(self._order)
            reports = [self._reports[i] for i in sorted(self._reports)]
            return PassResult(finished=complete, finished_through=through, reports=reports)


def run_lineages(
    heads: Iterator[Head],
    collect: Collect,
    *,
    deps: GcDeps[CollectedStrategy],
    run_id: str,
    budget: Budget,
    workers: int,
    start: LineageId | None = None,
) -> PassResult:
    """Work every lineage ``heads`` yields, ``workers`` at a time (1: in this thread)."""
    lineages = _Lineages(heads, start)
    batch = DeletionBatch(deps, run_id=run_id, budget=budget)
    batch.on_finished = lineages.finished

    def work() -> None:
        _worker(lineages, collect, batch, budget)

    if workers <= 1:
        work()
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gc-lineage") as pool:
            for running in [pool.submit(work) for _ in range(workers)]:
                running.result()
    if not lineages.stopped:
        batch.flush()
    if lineages.stopped or batch.stopped:
        lineages.stop()
        batch.drain(budget.for_finishing())  # finish what is in flight on the reserve
    return lineages.result()


def _worker(lineages: _Lineages, collect: Collect, batch: DeletionBatch, budget: Budget) -> None:
    """Take lineages until none is left or the time is up (then every worker stops)."""
    try:
        while True:
            if budget.exhausted() or batch.stopped:
                lineages.stop()
                return
            taken = lineages.take()
            if taken is None:
                return
            index, head = taken
            ticket = batch.open(head.lineage, [])
            report, stopped = collect(head, batch, ticket)
            lineages.report(index, report)
            if stopped:
                lineages.stop()  # this lineage is redone next time
                return
            batch.close(ticket)
    except BaseException:
        lineages.stop()  # the others take nothing new; the run ends with the error
        raise
