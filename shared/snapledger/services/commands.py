"""Run one command against an event log: load → decide → commit, retrying lost races.

Two kinds of log take commands: a lineage's (``execute``) and a stream's own
(``execute_on_stream``); both run through ``run_command``.

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
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, Protocol, TypeVar

from snapledger.core.lineage import Command, LineageState, decide, evolve_all
from snapledger.core.stream import StreamCommand, StreamState, decide_stream, evolve_stream_all
from snapledger.errors import ConcurrencyError, LostRaceError, TransientStoreError
from snapledger.models.events import LedgerEvent, StreamEvent
from snapledger.models.ledger import LineageId
from snapledger.ports import LedgerStore, StreamLogStore


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try before giving up: attempts and the backoff's base and cap (s)."""

    max_attempts: int = 40
    base_delay: float = 0.005
    max_delay: float = 0.5

    def delay(self, attempt: int, rng: random.Random) -> float:
        return rng.uniform(0, min(self.max_delay, self.base_delay * 2**attempt))


class HasCommandId(Protocol):
    @property
    def command_id(self) -> str: ...


StateT = TypeVar("StateT")
EventT = TypeVar("EventT", bound=HasCommandId)


@dataclass(frozen=True)
class Committed(Generic[StateT, EventT]):
    """What a command did: its events (empty for a no-op) and the state after them."""

    events: list[EventT]
    state: StateT
    attempts: int


CommandResult = Committed[LineageState, LedgerEvent]
StreamCommandResult = Committed[StreamState, StreamEvent]


class CommandLog(Protocol[StateT, EventT]):
    """One event log, as one command (already bound) runs against it."""

    @property
    def scope(self) -> str:
        """Names the log: in the request token and in messages."""
        ...

    def load(self) -> StateT: ...

    def version(self, state: StateT) -> int: ...

    def decide(self, state: StateT) -> list[EventT]: ...

    def evolve(self, state: StateT, events: list[EventT]) -> StateT: ...

    def commit(
        self, before: StateT, events: list[EventT], after: StateT, *, request_token: str
    ) -> None: ...

    def get_event(self, seq: int) -> EventT | None: ...


def request_token(scope: str, expected_version: int, command_id: str, now: datetime) -> str:
    """A ClientRequestToken (<= 36 chars) that is the same for the same write, only.

    ``now`` is part of the decision (event times), so a later redelivery of the command
    is a different request, never an "idempotent parameter mismatch".
    """
    raw = f"{scope}|{expected_version}|{command_id}|{now.isoformat()}"
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def run_command(
    log: CommandLog[StateT, EventT],
    command_id: str,
    now: datetime,
    *,
    what: str,
    retry: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> Committed[StateT, EventT]:
    """Decide and commit one command on ``log``; idempotent under redelivery."""
    policy = retry or RetryPolicy()
    jitter = rng or random.Random()
    # The write whose answer was lost, if any: (the version it expected, its events)
    pending: tuple[int, list[EventT]] | None = None
    for attempt in range(1, policy.max_attempts + 1):
        state = log.load()
        version = log.version(state)
        if pending is not None and version > pending[0]:
            landed = log.get_event(pending[0] + 1)
            if landed is not None and landed.command_id == command_id:
                return Committed(events=pending[1], state=state, attempts=attempt)
        events = log.decide(state)
        if not events:
            return Committed(events=[], state=state, attempts=attempt)
        after = log.evolve(state, events)
        token = request_token(log.scope, version, command_id, now)
        try:
            log.commit(state, events, after, request_token=token)
        except LostRaceError as exc:
            if exc.committed_command_id == command_id:
                # This very write had committed: an SDK retry found its own event there.
                return Committed(events=events, state=after, attempts=attempt)
            pending = None
        except TransientStoreError:
            pending = (version, events)
        else:
            return Committed(events=events, state=after, attempts=attempt)
        sleep(policy.delay(attempt, jitter))
    raise ConcurrencyError(
        f"{what} lost the race {policy.max_attempts} times in a row; it is under heavy "
        "contention: retry later"
    )


@dataclass(frozen=True)
class _LineageLog:
    ledger: LedgerStore
    command: Command
    now: datetime
    snapshot_keys: tuple[str, ...] = field(default=())

    @property
    def lineage(self) -> LineageId:
        return LineageId(stream=self.command.stream, partition=self.command.partition)

    @property
    def scope(self) -> str:
        return f"{self.command.stream}|{self.command.partition}"

    def load(self) -> LineageState:
        return self.ledger.load(self.lineage, self.snapshot_keys)

    def version(self, state: LineageState) -> int:
        return state.head.version

    def decide(self, state: LineageState) -> list[LedgerEvent]:
        return decide(state, self.command, self.now)

    def evolve(self, state: LineageState, events: list[LedgerEvent]) -> LineageState:
        return evolve_all(state, events)

    def commit(
        self,
        before: LineageState,
        events: list[LedgerEvent],
        after: LineageState,
        *,
        request_token: str,
    ) -> None:
        self.ledger.commit(before, events, after, request_token=request_token)

    def get_event(self, seq: int) -> LedgerEvent | None:
        return self.ledger.get_event(self.lineage, seq)


@dataclass(frozen=True)
class _StreamLog:
    store: StreamLogStore
    command: StreamCommand
    now: datetime

    @property
    def scope(self) -> str:
        return f"STREAM#{self.command.stream}"

    def load(self) -> StreamState:
        return self.store.load(self.command.stream)

    def version(self, state: StreamState) -> int:
        return state.head.version

    def decide(self, state: StreamState) -> list[StreamEvent]:
        return decide_stream(state, self.command, self.now)

    def evolve(self, state: StreamState, events: list[StreamEvent]) -> StreamState:
        return evolve_stream_all(state, events)

    def commit(
        self,
        before: StreamState,
        events: list[StreamEvent],
        after: StreamState,
        *,
        request_token: str,
    ) -> None:
        self.store.commit(before, events, after, request_token=request_token)

    def get_event(self, seq: int) -> StreamEvent | None:
        return self.store.get_event(self.command.stream, seq)


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
    log = _LineageLog(ledger, command, now, snapshot_keys)
    what = f"{command.kind} on {log.lineage}"
    return run_command(log, command.command_id, now, what=what, retry=retry, sleep=sleep, rng=rng)


def execute_on_stream(
    store: StreamLogStore,
    command: StreamCommand,
    now: datetime,
    *,
    retry: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> StreamCommandResult:
    """Decide and commit ``command`` on its stream's own log; idempotent under redelivery."""
    log = _StreamLog(store, command, now)
    what = f"{command.kind} on the stream {command.stream}"
    return run_command(log, command.command_id, now, what=what, retry=retry, sleep=sleep, rng=rng)
