"""One writer per lineage in a process: commands on a lineage queue up and are combined.

Registrations that reach one process at once (the local runtime's router threads, a
stream processor's burst, the tests' 16 threads) would otherwise each load HEAD, decide
and race to commit on its ``version``: all but one lose, re-read and try again — a retry
storm that makes 16 writers slower than one. Here the first thread to submit on a
lineage becomes its **leader**: it takes every command queued for the lineage (up to
``MAX_BATCH_COMMANDS``), decides them in turn and commits them as one transaction
(``execute_batch``), hands each submitter its own command's events, and repeats until
the queue is empty. The others only wait. Validation (the object store reads) stays in
the submitting threads, in parallel; only load → decide → commit is serialized.

Across processes (Lambda) the SQS FIFO queue gives the same guarantee: one batch per
message group (lineage) in flight at a time (``docs/ledger.md``, "Hot lineages").
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from snapledger.clock import Clock
from snapledger.core.lineage import Command
from snapledger.models.events import LedgerEvent
from snapledger.ports import LedgerStore
from snapledger.services.commands import (
    CommandResult,
    Committed,
    RetryPolicy,
    events_by_command,
    execute_batch,
)

#: Commands per transaction: a registration writes at most 3 items (SNAP + 2 events), so
#: 10 commands and HEAD are 31 of DynamoDB's 100; and an SQS batch holds at most 10.
MAX_BATCH_COMMANDS = 10


@dataclass
class _Pending:
    command: Command
    snapshot_keys: tuple[str, ...]
    future: Future[CommandResult] = field(default_factory=Future)


@dataclass
class _Lineage:
    queue: deque[_Pending] = field(default_factory=deque)
    leader: bool = False


class LineageCombiner:
    """Serializes and combines the commands submitted on each lineage of one ledger."""

    def __init__(self, *, max_batch: int = MAX_BATCH_COMMANDS) -> None:
        if not 1 <= max_batch <= MAX_BATCH_COMMANDS:
            raise ValueError(f"max_batch must be 1..{MAX_BATCH_COMMANDS}, got {max_batch}")
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._lineages: dict[tuple[int, str, int], _Lineage] = {}

    def run(
        self,
        ledger: LedgerStore,
        commands: Sequence[tuple[Command, tuple[str, ...]]],
        clock: Clock,
        *,
        retry: RetryPolicy | None = None,
    ) -> list[CommandResult | Exception]:
        """Run ``commands`` (one lineage; each with the SNAP keys its decision reads); each
        one's result, or the exception that failed it.

        Each answer holds only its own command's events (none: a no-op, e.g. a duplicate)
        and the lineage's state after the transaction that carried it. When a transaction
        of several commands fails, each is committed again alone, so one command the table
        refuses never fails another's (each failed one is safe to submit again).
        """
        if not commands:
            return []
        first = commands[0][0]
        slot = (id(ledger), first.stream, first.partition)
        pending = [_Pending(command, keys) for command, keys in commands]
        with self._lock:
            lineage = self._lineages.setdefault(slot, _Lineage())
            lineage.queue.extend(pending)
            lead = not lineage.leader
            lineage.leader = True
        if lead:
            self._drain(slot, lineage, ledger, clock, retry)
        return [_outcome(p.future) for p in pending]

    def _drain(
        self,
        slot: tuple[int, str, int],
        lineage: _Lineage,
        ledger: LedgerStore,
        clock: Clock,
        retry: RetryPolicy | None,
    ) -> None:
        batch: list[_Pending] = []
        try:
            while True:
                with self._lock:
                    batch = [
                        lineage.queue.popleft()
                        for _ in range(min(self.max_batch, len(lineage.queue)))
                    ]
                    if not batch:
                        lineage.leader = False
                        del self._lineages[slot]
                        return
                self._commit(batch, ledger, clock, retry)
        except BaseException as exc:  # interrupted: no waiter may be left waiting
            with self._lock:
                abandoned = [p for p in batch if not p.future.done()] + list(lineage.queue)
                lineage.queue.clear()
                lineage.leader = False
                self._lineages.pop(slot, None)
            for p in abandoned:
                p.future.set_exception(exc)
            raise

    @staticmethod
    def _commit(
        batch: list[_Pending], ledger: LedgerStore, clock: Clock, retry: RetryPolicy | None
    ) -> None:
        commands = [p.command for p in batch]
        keys = tuple(dict.fromkeys(k for p in batch for k in p.snapshot_keys))
        try:
            result = execute_batch(ledger, commands, clock.now(), snapshot_keys=keys, retry=retry)
        except Exception as exc:
            if len(batch) == 1:  # handed to its submitter, raised in its own thread
                batch[0].future.set_exception(exc)
                return
            # One command may be what the table refuses: nothing of the transaction was
            # written, so each is committed alone and fails (or succeeds) on its own.
            for p in batch:
                LineageCombiner._commit([p], ledger, clock, retry)
            return
        for p, events in zip(batch, events_by_command(commands, result.events), strict=True):
            p.future.set_result(_own(result, events))


def _outcome(future: Future[CommandResult]) -> CommandResult | Exception:
    error = future.exception()
    if error is None:
        return future.result()
    if isinstance(error, Exception):
        return error
    raise error  # KeyboardInterrupt and the like are not a command's answer


def _own(result: CommandResult, events: list[LedgerEvent]) -> CommandResult:
    return Committed(
        events=events,
        state=result.state,
        attempts=result.attempts,
        lost_races=result.lost_races,
    )
