"""Run one command against a lineage: load → decide → commit, retrying lost races.

A lost race re-reads and decides again, with full-jitter exponential backoff, bounded.
A write whose answer was lost (timeout, throttle after the fact) is never reported as a
failure when it had in fact committed: every event carries its command id, and before
deciding again we look at the event our earlier attempt would have written.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from snapledger.core.lineage import Command, LineageState, decide, evolve_all
from snapledger.errors import ConcurrencyError, LostRaceError, TransientStoreError
from snapledger.models.events import LedgerEvent
from snapledger.models.ledger import LineageId
from snapledger.ports import LedgerStore


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try before giving up: attempts and the backoff's base and cap (s)."""

    max_attempts: int = 40
    base_delay: float = 0.005
    max_delay: float = 0.5

    def delay(self, attempt: int, rng: random.Random) -> float:
        return rng.uniform(0, min(self.max_delay, self.base_delay * 2**attempt))


@dataclass(frozen=True)
class CommandResult:
    """What a command did: its events (empty for a no-op) and the state after them."""

    events: list[LedgerEvent]
    state: LineageState
    attempts: int


def request_token(lineage: LineageId, expected_version: int, command_id: str, now: datetime) -> str:
    """A ClientRequestToken (<= 36 chars) that is the same for the same write, only.

    ``now`` is part of the decision (event times), so a later redelivery of the command
    is a different request, never an "idempotent parameter mismatch".
    """
    raw = f"{lineage.stream}|{lineage.partition}|{expected_version}|{command_id}|{now.isoformat()}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def execute(
    ledger: LedgerStore,
    command: Command,
    now: datetime,
    *,
    snapshot_keys: tuple[str, ...] = (),
    retry: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> CommandResult:
    """Decide and commit ``command`` on its lineage; idempotent under redelivery."""
    policy = retry or RetryPolicy()
    jitter = rng or random.Random()
    lineage = LineageId(stream=command.stream, partition=command.partition)
    # The write whose answer was lost, if any: (the version it expected, its events)
    pending: tuple[int, list[LedgerEvent]] | None = None
    for attempt in range(1, policy.max_attempts + 1):
        state = ledger.load(lineage, snapshot_keys)
        if pending is not None and state.head.version > pending[0]:
            landed = ledger.get_event(lineage, pending[0] + 1)
            if landed is not None and landed.command_id == command.command_id:
                return CommandResult(events=pending[1], state=state, attempts=attempt)
        events = decide(state, command, now)
        if not events:
            return CommandResult(events=[], state=state, attempts=attempt)
        after = evolve_all(state, events)
        token = request_token(lineage, state.head.version, command.command_id, now)
        try:
            ledger.commit(state, events, after, request_token=token)
        except LostRaceError as exc:
            if exc.committed_command_id == command.command_id:
                # This very write had committed: an SDK retry found its own event there.
                return CommandResult(events=events, state=after, attempts=attempt)
            pending = None
        except TransientStoreError:
            pending = (state.head.version, events)
        else:
            return CommandResult(events=events, state=after, attempts=attempt)
        sleep(policy.delay(attempt, jitter))
    raise ConcurrencyError(
        f"{command.kind} on {lineage} lost the race {policy.max_attempts} times in a row; "
        "the lineage is under heavy contention: retry later"
    )
