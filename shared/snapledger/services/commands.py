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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Generic, Protocol, TypedDict, TypeVar, Unpack

from snapledger.core.generations import generations_to_load
from snapledger.core.lineage import Command, LineageState, decide, evolve_all
from snapledger.core.stream import StreamCommand, StreamState, decide_stream, evolve_stream_all
from snapledger.errors import ConcurrencyError, LostRaceError, TransientStoreError
from snapledger.models.commands import ResetPolicy, SetPolicy
from snapledger.models.events import LedgerEvent, StreamEvent
from snapledger.models.gc_commands import ExpireSnapshots, MarkSnapshotsDeleted
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
    #: Attempts that lost the race (a condition failed: another writer got there first).
    #: ``attempts - 1 - lost_races`` were retried for throttling or a lost answer.
    lost_races: int = 0


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
    seed: StateT | None = None,
) -> Committed[StateT, EventT]:
    """Decide and commit one command on ``log``; idempotent under redelivery.

    ``seed`` is a state the caller already read (perhaps stale: an index page, its own
    last commit): the first attempt decides on it instead of loading, and its commit,
    conditioned on every item the decision read, fails if it was stale. A seed is trusted
    only that way: if it leads to no events, the log is loaded and decided again.
    """
    policy = retry or RetryPolicy()
    jitter = rng or random.Random()
    # The write whose answer was lost, if any: (the version it expected, its events)
    pending: tuple[int, list[EventT]] | None = None
    lost = 0
    for attempt in range(1, policy.max_attempts + 1):
        seeded, seed = seed, None
        state = seeded if seeded is not None else log.load()
        version = log.version(state)
        if pending is not None and version > pending[0] and _landed(log, *pending):
            return Committed(events=pending[1], state=state, attempts=attempt, lost_races=lost)
        pending = None
        events = log.decide(state)
        if not events and seeded is not None:
            state = log.load()
            version = log.version(state)
            events = log.decide(state)
        if not events:
            return Committed(events=[], state=state, attempts=attempt, lost_races=lost)
        after = log.evolve(state, events)
        token = request_token(log.scope, version, command_id, now)
        try:
            log.commit(state, events, after, request_token=token)
        except LostRaceError as exc:
            if exc.committed_command_id == events[0].command_id:
                if len({e.command_id for e in events}) == 1:
                    # This very write had committed: an SDK retry found its own event there.
                    return Committed(events=events, state=after, attempts=attempt, lost_races=lost)
                # Several commands' events (a batch): read them all back before saying so.
                pending = (version, events)
                continue
            lost += 1
            if seeded is not None:
                continue  # the seed was stale: load and decide again at once
        except TransientStoreError:
            pending = (version, events)
        else:
            return Committed(events=events, state=after, attempts=attempt, lost_races=lost)
        sleep(policy.delay(attempt, jitter))
    raise ConcurrencyError(
        f"{what} lost the race {policy.max_attempts} times in a row; it is under heavy "
        "contention: retry later"
    )


def _landed(log: CommandLog[StateT, EventT], version: int, events: list[EventT]) -> bool:
    """Whether ``events``, written on ``version``, are in the log: our lost answer committed.

    One read per command among the events (one, unless a batch): the first event of each
    command must be there, with its command id, at the sequence it was given.
    """
    previous: str | None = None
    for offset, event in enumerate(events):
        if event.command_id == previous:
            continue
        previous = event.command_id
        landed = log.get_event(version + 1 + offset)
        if landed is None or landed.command_id != event.command_id:
            return False
    return True


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
        if isinstance(self.command, ExpireSnapshots | MarkSnapshotsDeleted):
            before = replace(before, check_unchanged=True)  # reads it does not write
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
        command, stream = self.command, self.command.stream
        if isinstance(command, SetPolicy | ResetPolicy):
            return self.store.load(stream)
        wanted = generations_to_load(None, command)
        state = self.store.load(stream, wanted)
        more = generations_to_load(state.head, command)
        if set(more) - set(wanted):  # named by HEAD (the open one): a second read
            state = self.store.load(stream, more)
        return state

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


@dataclass(frozen=True)
class _LineageBatchLog(_LineageLog):
    """Several commands on one lineage decided in turn and committed as one transaction."""

    commands: tuple[Command, ...] = field(default=())

    def decide(self, state: LineageState) -> list[LedgerEvent]:
        events: list[LedgerEvent] = []
        for command in self.commands:
            decided = decide(state, command, self.now)
            state = evolve_all(state, decided)
            events += decided
        return events


def execute_batch(
    ledger: LedgerStore,
    commands: Sequence[Command],
    now: datetime,
    *,
    snapshot_keys: tuple[str, ...] = (),
    retry: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
    seed: LineageState | None = None,
) -> CommandResult:
    """Decide ``commands`` (one lineage) in order and commit their events in one transaction.

    Each event carries its own command's id, exactly as if the commands had run one by
    one; a command the ones before it made a no-op (a duplicate) adds nothing. The caller
    keeps the transaction within DynamoDB's 100 items (``MAX_BATCH_COMMANDS``).
    """
    if not commands:
        raise ValueError("execute_batch needs at least one command")
    lineages = {(c.stream, c.partition) for c in commands}
    if len(lineages) != 1:
        raise ValueError(f"a batch is one lineage's commands; got {sorted(lineages)}")
    log = _LineageBatchLog(ledger, commands[0], now, snapshot_keys, commands=tuple(commands))
    if len(commands) == 1:
        command_id, what = commands[0].command_id, f"{commands[0].kind} on {log.lineage}"
    else:
        ids = "|".join(c.command_id for c in commands)
        command_id = "batch:" + hashlib.sha256(ids.encode()).hexdigest()
        kinds = ", ".join(sorted({c.kind for c in commands}))
        what = f"{len(commands)} commands ({kinds}) on {log.lineage}"
    return run_command(
        log, command_id, now, what=what, retry=retry, sleep=sleep, rng=rng, seed=seed
    )


class LineageRunOptions(TypedDict, total=False):
    """``execute_batch``'s keyword options, as ``execute`` passes them on."""

    snapshot_keys: tuple[str, ...]
    retry: RetryPolicy | None
    sleep: Callable[[float], None]
    rng: random.Random | None
    seed: LineageState | None


def execute(
    ledger: LedgerStore, command: Command, now: datetime, **options: Unpack[LineageRunOptions]
) -> CommandResult:
    """Decide and commit ``command`` on its lineage; idempotent under redelivery."""
    return execute_batch(ledger, [command], now, **options)


def events_by_command(
    commands: Sequence[Command], events: Sequence[LedgerEvent]
) -> list[list[LedgerEvent]]:
    """Each command's events in a batch's result (a repeated command: none, it added none)."""
    groups: dict[str, list[LedgerEvent]] = {}
    for event in events:
        groups.setdefault(event.command_id, []).append(event)
    answered: list[list[LedgerEvent]] = []
    for command in commands:
        answered.append(groups.pop(command.command_id, []))
    return answered


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
