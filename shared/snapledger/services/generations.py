"""Stream snapshots by generation: request one, count members as they register, fail the
overdue (rules: ``core/generations.py``; docs/ledger.md). Reads are in
``generation_reads``.

A registration whose manifest names a generation is one command on TWO logs: the
partition's lineage (``RegisterSnapshot``) and the stream's (``CountGenerationMember``),
decided together and committed in one transaction, so a snapshot counts for its generation
exactly when it is registered, and a redelivered manifest counts nothing twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from snapledger.clock import Clock
from snapledger.core.generations import verdict
from snapledger.core.lineage import LineageState, decide, evolve_all
from snapledger.core.stream import StreamState, decide_stream, evolve_stream_all
from snapledger.errors import InvalidRequestError, NotFoundError
from snapledger.ids import new_ulid
from snapledger.layout import check_stream_name
from snapledger.models.commands import (
    CountGenerationMember,
    FailOverdueGeneration,
    RegisterSnapshot,
    RequestStreamSnapshot,
)
from snapledger.models.events import (
    LedgerEvent,
    SnapshotRegistered,
    StreamEvent,
    StreamEventBase,
    StreamSnapshotCompleted,
    StreamSnapshotMemberCounted,
)
from snapledger.models.generations import (
    ProtectedGenerations,
    StreamGeneration,
    protected_generations,
)
from snapledger.models.ledger import (
    RECENT_COMMANDS_KEPT,
    LineageId,
    SnapshotStatus,
    snapshot_sort_key,
)
from snapledger.ports import LedgerStore, StreamLogStore
from snapledger.services.commands import (
    CommandResult,
    Committed,
    RetryPolicy,
    execute_on_stream,
    run_command,
)

#: The most partitions one stream snapshot may have (one job restores them all).
MAX_MEMBERS = 64
#: How long a request waits for its members when it names no deadline, and the longest.
DEFAULT_DEADLINE = timedelta(minutes=30)
MAX_DEADLINE = timedelta(days=7)


# --- request --------------------------------------------------------------------------


@dataclass(frozen=True)
class StreamSnapshotRequest:
    """What a request did: the generation it opened (``created``: now, else by an earlier
    delivery of the same request)."""

    generation: StreamGeneration
    created: bool


def request_stream_snapshot(
    streams: StreamLogStore,
    stream: str,
    partitions: Sequence[int],
    *,
    clock: Clock,
    deadline: datetime | None = None,
    min_lsn: dict[int, int] | None = None,
    by: str = "",
    request_id: str | None = None,
) -> StreamSnapshotRequest:
    """Open the stream's next generation (superseding an open one); idempotent by request:
    a request seen before answers the generation it opened."""
    check_stream_name(stream)
    now = clock.now()
    if not 1 <= len(set(partitions)) <= MAX_MEMBERS:
        raise InvalidRequestError(
            f"a stream snapshot has 1 to {MAX_MEMBERS} partitions, got {len(set(partitions))}"
        )
    deadline = deadline or now + DEFAULT_DEADLINE
    if deadline - now > MAX_DEADLINE:
        raise InvalidRequestError(
            f"the deadline {deadline.isoformat()} is more than {MAX_DEADLINE.days} days away: "
            "give a nearer one"
        )
    command = RequestStreamSnapshot(
        stream=stream,
        partitions=tuple(sorted(set(partitions))),
        min_lsn=dict(min_lsn or {}),
        deadline=deadline,
        by=by,
        request_id=request_id or new_ulid(),
    )
    result = execute_on_stream(streams, command, now)
    if result.events:
        number = result.state.head.generation
        return StreamSnapshotRequest(result.state.generations[number], created=True)
    return StreamSnapshotRequest(_opened_by(streams, stream, command.command_id), created=False)


def _opened_by(streams: StreamLogStore, stream: str, command_id: str) -> StreamGeneration:
    """The generation a request opened: among the newest (HEAD remembers only the last
    ``RECENT_COMMANDS_KEPT`` commands, so a redelivery is always that recent)."""
    page = streams.list_generations(stream, limit=RECENT_COMMANDS_KEPT)
    for generation in page.items:
        if generation.command_id == command_id:
            return generation
    raise NotFoundError(f"{stream}: the generation request {command_id} opened is not there")


def fail_overdue(streams: StreamLogStore, stream: str, *, clock: Clock) -> StreamGeneration | None:
    """Fail the stream's open generation if its deadline has passed; the failed record, or
    None if nothing was overdue. GC's schedule calls it for every stream it walks."""
    head = streams.get_head(stream)
    if head is None or head.open_generation is None:
        return None
    command = FailOverdueGeneration(stream=stream, generation=head.open_generation)
    result = execute_on_stream(streams, command, clock.now())
    if not result.events:
        return None
    return result.state.generations.get(head.open_generation)


# --- a registration that names a generation --------------------------------------------


@dataclass(frozen=True)
class MemberState:
    """What a member's registration reads: its lineage and its stream."""

    lineage: LineageState
    stream: StreamState


@dataclass(frozen=True)
class MemberRegistration:
    """A registration's result on its lineage, and what it did for its generation."""

    result: CommandResult
    generation: int
    counted: bool
    reason: str  # why it did not count ("counted" when it did)
    stream: StreamState  # the stream's state it committed (or loaded, for a no-op)
    completed: bool = False  # its count completed the generation


@dataclass(frozen=True)
class _MemberLog:
    ledger: LedgerStore
    streams: StreamLogStore
    command: RegisterSnapshot
    generation: int
    now: datetime

    @property
    def lineage(self) -> LineageId:
        return LineageId(stream=self.command.stream, partition=self.command.partition)

    @property
    def scope(self) -> str:
        return f"{self.command.stream}|{self.command.partition}|G{self.generation}"

    def load(self) -> MemberState:
        key = snapshot_sort_key(self.command.lsn, self.command.snapshot_id)
        return MemberState(
            lineage=self.ledger.load(self.lineage, (key,)),
            stream=self.streams.load(self.command.stream, (self.generation,)),
        )

    def version(self, state: MemberState) -> int:
        return state.lineage.head.version

    def decide(self, state: MemberState) -> list[LedgerEvent | StreamEvent]:
        registered = decide(state.lineage, self.command, self.now)
        if not registered or not isinstance(registered[0], SnapshotRegistered):
            return list(registered)
        event = registered[0]
        count = CountGenerationMember(
            stream=event.stream,
            generation=self.generation,
            partition=event.partition,
            snapshot_id=event.snapshot_id,
            lsn=event.lsn,
            epoch=event.epoch,
            offsets=event.offsets,
            registration_command_id=self.command.command_id,
        )
        on_stream = decide_stream(state.stream, count, self.now)
        if any(isinstance(e, StreamSnapshotMemberCounted) for e in on_stream):
            registered = [event.model_copy(update={"member_of": self.generation}), *registered[1:]]
        return [*registered, *on_stream]

    def evolve(self, state: MemberState, events: list[LedgerEvent | StreamEvent]) -> MemberState:
        lineage_events, stream_events = _split(events)
        return MemberState(
            lineage=evolve_all(state.lineage, lineage_events),
            stream=evolve_stream_all(state.stream, stream_events),
        )

    def commit(
        self,
        before: MemberState,
        events: list[LedgerEvent | StreamEvent],
        after: MemberState,
        *,
        request_token: str,
    ) -> None:
        lineage_events, stream_events = _split(events)
        if not stream_events and not any(isinstance(e, SnapshotRegistered) for e in events):
            # Rejected, fenced or in conflict: it counts for no generation, whatever the
            # stream's state, so the lineage commits alone.
            self.ledger.commit(
                before.lineage, lineage_events, after.lineage, request_token=request_token
            )
            return
        # Registered: whether it counted was decided on the stream HEAD read, so the commit
        # is conditioned on it (with no stream event, a ConditionCheck): a request that
        # committed since makes this a lost race, and the retry decides on the new HEAD.
        # The token names the stream's version too: a retry after a race lost on the
        # stream alone is a different transaction.
        self.streams.commit_with_lineage(
            self.ledger,
            (before.lineage, lineage_events, after.lineage),
            (before.stream, stream_events, after.stream),
            request_token=f"{request_token}|S{before.stream.head.version}",
        )

    def get_event(self, seq: int) -> LedgerEvent | None:
        return self.ledger.get_event(self.lineage, seq)


def register_member(
    ledger: LedgerStore,
    streams: StreamLogStore,
    command: RegisterSnapshot,
    now: datetime,
    *,
    retry: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> MemberRegistration:
    """Register ``command`` (whose manifest names a generation) and count it, atomically."""
    assert command.summary is not None and command.summary.generation is not None
    generation = command.summary.generation
    log = _MemberLog(ledger, streams, command, generation, now)
    what = f"{command.kind} on {log.lineage} for generation {generation}"
    done = run_command(log, command.command_id, now, what=what, retry=retry, sleep=sleep)
    lineage_events, stream_events = _split(done.events)
    result: CommandResult = Committed(
        events=lineage_events,
        state=done.state.lineage,
        attempts=done.attempts,
        lost_races=done.lost_races,
    )
    record = done.state.lineage.snapshots.get(snapshot_sort_key(command.lsn, command.snapshot_id))
    counted = record is not None and record.member_of == generation
    if counted:
        reason = "counted"
    elif record is None or record.status is SnapshotStatus.REJECTED:
        reason = "the snapshot was not registered (rejected, fenced or in conflict)"
    else:
        count = CountGenerationMember(
            stream=command.stream,
            generation=generation,
            partition=command.partition,
            snapshot_id=command.snapshot_id,
            lsn=command.lsn,
            epoch=record.epoch or 0,
            registration_command_id=command.command_id,
        )
        stream = done.state.stream
        found = verdict(stream.head, stream.generations.get(generation), count, now)
        reason = found.reason
        if found.counts:
            # Registered without counting, yet it would count now: its commit was checked
            # against a stream HEAD without this generation, so the request came after it
            # (a redelivery). Say so, never "counted".
            reason = (
                f"generation {generation} of {command.stream} was requested after this "
                "snapshot registered: it was recorded without counting; a newer snapshot of "
                f"partition {command.partition} counts for it"
            )
    completed = any(isinstance(e, StreamSnapshotCompleted) for e in stream_events)
    return MemberRegistration(result, generation, counted, reason, done.state.stream, completed)


def _split(
    events: Sequence[LedgerEvent | StreamEvent],
) -> tuple[list[LedgerEvent], list[StreamEvent]]:
    lineage: list[LedgerEvent] = []
    stream: list[StreamEvent] = []
    for event in events:
        if isinstance(event, StreamEventBase):
            stream.append(event)
        else:
            lineage.append(event)
    return lineage, stream


# --- what GC keeps ----------------------------------------------------------------------


class GenerationGuards:
    """Each stream's ``ProtectedGenerations``, read once per GC run (one GetItem of the
    stream's HEAD). With ``fail_overdue`` (a run that changes things, not a dry run), an
    open generation past its deadline is failed on the way, naming its missing partitions.
    Without ``streams`` every member is protected (the safe answer)."""

    def __init__(
        self,
        streams: StreamLogStore | None,
        min_generations: Callable[[str], int],
        clock: Clock,
        *,
        fail_overdue: bool,
        failed: list[StreamGeneration] | None = None,
    ) -> None:
        self._streams = streams
        self._min_generations = min_generations
        self._clock = clock
        self._fail_overdue = fail_overdue
        self._cache: dict[str, ProtectedGenerations | None] = {}
        self.failed: list[StreamGeneration] = [] if failed is None else failed

    def __call__(self, stream: str) -> ProtectedGenerations | None:
        if stream not in self._cache:
            self._cache[stream] = self._read(stream)
        return self._cache[stream]

    def _read(self, stream: str) -> ProtectedGenerations | None:
        if self._streams is None:
            return None
        head = self._streams.get_head(stream)
        if head is None:
            return ProtectedGenerations()
        deadline = head.open_deadline
        if self._fail_overdue and deadline is not None and self._clock.now() > deadline:
            failed = fail_overdue(self._streams, stream, clock=self._clock)
            if failed is not None:
                self.failed.append(failed)
            head = self._streams.get_head(stream) or head
        return protected_generations(
            head.generation,
            head.open_generation,
            head.completed_generations,
            self._min_generations(stream),
        )
