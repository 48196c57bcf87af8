"""GC's deletes, batched across snapshots and lineages: up to 1,000 keys per DeleteObjects.

Every EXPIRING snapshot (and every claimed orphan prefix) becomes a *unit*: its keys,
manifest last. Units queue in order; whenever 1,000 keys are waiting, one DeleteObjects
takes them, whichever snapshots and lineages they belong to (a big snapshot spans several
requests, its manifest in the last). A unit is *resolved* once its last key was sent: if
every key went, it is recorded DELETED; if one failed, it stays EXPIRING with the reason
in its lineage's errors, and a later run finishes it.

The ledger writes follow the deletes, never precede them: ``MarkSnapshotsDeleted`` for 45
resolved units of a lineage at a time, and a lineage's last marks (with its trim point)
once every unit of it is resolved. Lineages are finished in the order they were opened,
so ``finished_through`` is a safe place for the next run to resume: every lineage up to
it is wholly done; one after it may have keys sent and marks not yet written, which a
crash there leaves EXPIRING with some objects gone, exactly as a crash inside one
snapshot's delete always could, and the next run finishes them.

The time budget is checked before every DeleteObjects and every mark transaction. When it
runs out, the run stops taking new lineages and ``drain``s the batch on what is left of its
reserve (``Budget.for_finishing``): the queued keys (under 1,000) go in one more request and
the lineages they complete are finished. Whatever that cannot finish stays EXPIRING for the
next run, which resumes after ``finished_through``.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from snapledger.errors import SnapledgerError
from snapledger.layouts.strategy import LayoutStrategy
from snapledger.models.gc_commands import (
    MAX_MARK_PER_COMMAND,
    DeletedPrefix,
    MarkSnapshotsDeleted,
    TrimProposal,
)
from snapledger.models.ledger import LineageId
from snapledger.ports import MAX_KEYS_PER_REQUEST
from snapledger.services.commands import CommandResult, execute
from snapledger.services.gc_deps import Budget, GcDeps
from snapledger.services.gc_report import LineageReport
from snapledger.services.latest_protection import release_failure
from snapledger.services.object_deletion import failure_message

_log = logging.getLogger(__name__)

#: What a lineage does once all its units are resolved: write its last marks (``DeletedPrefix``
#: not yet marked) and anything that must follow them, on the batch's budget; True if that
#: ran out meanwhile.
Finish = Callable[[list[DeletedPrefix], Budget], bool]


@dataclass
class DeletionUnit:
    """One snapshot prefix's objects, deleted together and marked DELETED together."""

    prefix: str
    keys: list[str]
    sort_key: str | None  # the record to mark DELETED; None: nothing to mark
    #: The object its layout's producer writes last (``LayoutStrategy.manifest_name``): sent
    #: last, so a half-deleted prefix still says what it was.
    manifest_name: str
    on_deleted: Callable[[int], None] = lambda count: None  # every key went
    on_failed: Callable[[str], None] | None = None  # None: the reason joins the lineage's errors
    unsent: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class LineageTicket:
    """A lineage's place in the batch: its units in flight and its marks not yet written."""

    lineage: LineageId
    errors: list[str]
    finish: Finish | None = None  # None: the remaining marks, nothing else
    #: Told of an unexpected error in this lineage's marks or finish (the run goes on).
    on_failure: Callable[[str], None] = lambda failure: None
    open_units: int = 0
    closed: bool = False
    to_mark: list[DeletedPrefix] = field(default_factory=list)


class DeletionBatch:
    """Queue units; send DeleteObjects of up to 1,000 keys; mark what went, lineage by lineage.

    Thread-safe: the workers of a parallel pass (``services/gc_parallel.py``) share one,
    so requests fill across all their lineages. Each public method holds the batch's lock
    for its whole length, requests and transactions included: one thread at a time sends
    deletes and writes marks, in the order the methods are called, exactly as one thread
    would; the other threads meanwhile plan, expire and list their own lineages.
    """

    def __init__(self, deps: GcDeps[LayoutStrategy], *, run_id: str, budget: Budget) -> None:
        self._deps = deps
        self._run_id = run_id
        self._budget = budget
        self._queue: deque[tuple[LineageTicket, DeletionUnit, list[str]]] = deque()
        self._queued_keys = 0
        self._tickets: deque[LineageTicket] = deque()
        self._lock = threading.RLock()
        self.stopped = False
        self.finished_through: LineageId | None = None
        # Told of each lineage as it is finished (the parallel pass tracks resume points).
        self.on_finished: Callable[[LineageId], None] = lambda lineage: None

    def open(self, lineage: LineageId, errors: list[str]) -> LineageTicket:
        """Start a lineage's units; ``close`` it once all are added."""
        ticket = LineageTicket(lineage=lineage, errors=errors)
        with self._lock:
            self._tickets.append(ticket)
        return ticket

    def add(self, ticket: LineageTicket, unit: DeletionUnit) -> None:
        """Queue ``unit`` (its manifest last); sends every full batch now waiting."""
        keys = sorted(unit.keys, key=lambda key: (key.endswith("/" + unit.manifest_name), key))
        with self._lock:
            unit.keys, unit.unsent = keys, len(keys)
            ticket.open_units += 1
            if not keys:  # already gone (a crashed run deleted them): mark it
                self._resolve(ticket, unit)
            else:
                self._queue.append((ticket, unit, keys))
                self._queued_keys += len(keys)
            self._send(full_only=True)

    def close(self, ticket: LineageTicket) -> None:
        with self._lock:
            ticket.closed = True
            self._finish_ready()

    def flush(self) -> None:
        """Send everything queued and finish every closed lineage (unless the budget runs out)."""
        with self._lock:
            self._send(full_only=False)

    def drain(self, budget: Budget) -> None:
        """Out of time for new work: flush what is in flight on ``budget`` (the reserve's)."""
        with self._lock:
            self._budget, self.stopped = budget, False
            self._mark_full_chunks()
            self._send(full_only=False)

    # -- internals -------------------------------------------------------------------

    def _send(self, *, full_only: bool) -> None:
        while self._queue and not self.stopped:
            if full_only and self._queued_keys < MAX_KEYS_PER_REQUEST:
                return
            if self._budget.exhausted():
                self.stopped = True
                return
            self._send_one()
            self._mark_full_chunks()
            self._finish_ready()
        self._finish_ready()

    def _send_one(self) -> None:
        """One DeleteObjects of the first (up to) 1,000 queued keys."""
        request: list[str] = []
        owners: dict[str, DeletionUnit] = {}
        taken: list[tuple[LineageTicket, DeletionUnit, int]] = []
        while self._queue and len(request) < MAX_KEYS_PER_REQUEST:
            ticket, unit, keys = self._queue[0]
            room = MAX_KEYS_PER_REQUEST - len(request)
            part, rest = keys[:room], keys[room:]
            request += part
            owners.update(dict.fromkeys(part, unit))
            taken.append((ticket, unit, len(part)))
            if rest:
                self._queue[0] = (ticket, unit, rest)
            else:
                self._queue.popleft()
        self._queued_keys -= len(request)
        try:
            result = self._deps.store.delete_many(request)
            for key, why in result.failed:
                owners[key].failed.append((key, why))
        except SnapledgerError as exc:  # the whole request failed after the client's retries
            for key, unit in owners.items():
                unit.failed.append((key, str(exc)))
        for ticket, unit, count in taken:
            unit.unsent -= count
            if unit.unsent == 0:
                self._resolve(ticket, unit)

    def _resolve(self, ticket: LineageTicket, unit: DeletionUnit) -> None:
        ticket.open_units -= 1
        # Its legal holds go once every key is deleted, before it is marked DELETED.
        why = (
            failure_message(unit.failed, len(unit.keys))
            if unit.failed
            else release_failure(self._deps.holds, unit.prefix)
        )
        if why is not None:
            if unit.on_failed is not None:
                unit.on_failed(why)
            else:
                ticket.errors.append(f"{unit.prefix}: {why}")
            return
        unit.on_deleted(len(unit.keys))
        if unit.sort_key is not None:
            ticket.to_mark.append(
                DeletedPrefix(sort_key=unit.sort_key, objects_deleted=len(unit.keys))
            )

    def _mark_full_chunks(self) -> None:
        """Write the marks of lineages with a whole transaction's worth resolved."""
        for ticket in self._tickets:
            while len(ticket.to_mark) >= MAX_MARK_PER_COMMAND and not self.stopped:
                if self._budget.exhausted():
                    self.stopped = True
                    return
                chunk = ticket.to_mark[:MAX_MARK_PER_COMMAND]
                del ticket.to_mark[:MAX_MARK_PER_COMMAND]
                try:
                    mark_deleted(self._deps, ticket.lineage, chunk, run_id=self._run_id)
                except SnapledgerError as exc:
                    ticket.errors.append(f"marking {len(chunk)} snapshots DELETED: {exc}")
                except Exception as exc:  # this lineage's alone: the others go on
                    _log.exception("GC: marking %s's snapshots DELETED failed", ticket.lineage)
                    ticket.on_failure(f"marking {len(chunk)} snapshots DELETED: {exc!r}")

    def _finish_ready(self) -> None:
        """Finish lineages, in the order opened, whose units are all resolved."""
        while self._tickets and not self.stopped:
            ticket = self._tickets[0]
            if not ticket.closed or ticket.open_units:
                return
            remaining, ticket.to_mark = ticket.to_mark, []
            try:
                if ticket.finish is not None:
                    self.stopped = ticket.finish(remaining, self._budget)
                else:
                    self.stopped = mark_all(
                        self._deps,
                        ticket.lineage,
                        remaining,
                        run_id=self._run_id,
                        budget=self._budget,
                    )
            except SnapledgerError as exc:
                ticket.errors.append(str(exc))
            except Exception as exc:  # this lineage's alone: the others go on
                _log.exception("GC: finishing %s failed", ticket.lineage)
                ticket.on_failure(f"finishing the lineage: {exc!r}")
            if self.stopped:
                return
            self._tickets.popleft()
            self.finished_through = ticket.lineage
            self.on_finished(ticket.lineage)


def mark_deleted(
    deps: GcDeps[LayoutStrategy],
    lineage: LineageId,
    deleted: list[DeletedPrefix],
    *,
    run_id: str,
    trim: TrimProposal | None = None,
    known: LineageReport | None = None,
) -> CommandResult:
    """One ``MarkSnapshotsDeleted`` transaction (at most 45 snapshots, and the trim point),
    seeded with what ``known`` knows of the lineage (else its items are loaded first)."""
    command = MarkSnapshotsDeleted(
        stream=lineage.stream,
        partition=lineage.partition,
        run_id=run_id,
        deleted=tuple(deleted),
        trim=trim,
    )
    keys = command.snapshot_keys
    seed = known.seed(keys) if known is not None else None
    result = execute(deps.ledger, command, deps.clock.now(), snapshot_keys=keys, seed=seed)
    if known is not None:
        known.learn(result.state)
    return result


def mark_all(
    deps: GcDeps[LayoutStrategy],
    lineage: LineageId,
    deleted: list[DeletedPrefix],
    *,
    run_id: str,
    budget: Budget,
) -> bool:
    """Mark ``deleted`` in transactions of 45; True if the budget ran out first."""
    for start in range(0, len(deleted), MAX_MARK_PER_COMMAND):
        if budget.exhausted():
            return True
        mark_deleted(deps, lineage, deleted[start : start + MAX_MARK_PER_COMMAND], run_id=run_id)
    return False
