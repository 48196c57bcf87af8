"""Stream snapshots by generation: the pure rules (``models/generations.py`` has the words).

Rules (docs/ledger.md, *Stream snapshots*):

- a request takes the stream's next generation (``HEAD.generation + 1``: monotonic, never
  reused); an open generation it finds is **superseded**: it fails in the same
  transaction, naming the new one (at most one generation is open per stream);
- a registered snapshot counts for generation G when G is open, its deadline has not
  passed, the partition is a member that has not counted yet, and its LSN is at least the
  partition's minimum; otherwise it is recorded on its lineage and the answer says why
  (``verdict``);
- G completes in the transaction of its last member's count: exactly once, never before;
- an open G past its deadline fails at the first command that finds it so (a registration,
  a newer request, GC's schedule), naming the partitions that had not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from snapledger.core.state import StreamSequencer
from snapledger.errors import InvalidRequestError
from snapledger.models.commands import (
    CountGenerationMember,
    FailOverdueGeneration,
    RequestStreamSnapshot,
)
from snapledger.models.events import (
    PartitionLsn,
    StreamEvent,
    StreamSnapshotCompleted,
    StreamSnapshotFailed,
    StreamSnapshotMemberCounted,
    StreamSnapshotRequested,
)
from snapledger.models.generations import (
    COMPLETED_GENERATIONS_KEPT,
    CountedMember,
    FailureCause,
    GenerationStatus,
    StreamGeneration,
    StreamMember,
)
from snapledger.models.ledger import StreamHead
from snapledger.models.snapshot import GenerationMember

GenerationCommand = RequestStreamSnapshot | CountGenerationMember | FailOverdueGeneration


@dataclass(frozen=True)
class Verdict:
    """Whether a registered snapshot counts for the generation its manifest names."""

    counts: bool
    reason: str  # why not, or "counted"


def verdict(
    head: StreamHead, generation: StreamGeneration | None, cmd: CountGenerationMember, now: datetime
) -> Verdict:
    """Whether ``cmd``'s snapshot counts for its generation, and if not, why."""
    if generation is not None and generation.is_open and now <= generation.deadline:
        why = _why_not_member(generation, cmd)
    else:
        why = _why_not_open(head, generation, cmd)
    return Verdict(False, why) if why else Verdict(True, "counted")


def _why_not_open(
    head: StreamHead, generation: StreamGeneration | None, cmd: CountGenerationMember
) -> str:
    g = cmd.generation
    if generation is None:
        newest = f"the newest is {head.generation}" if head.generation else "none was"
        return f"generation {g} of {cmd.stream} was never requested ({newest})"
    if generation.status is GenerationStatus.COMPLETED:
        return f"generation {g} had already completed"
    if generation.status is GenerationStatus.FAILED:
        return f"generation {g} had failed: {generation.failure_reason}"
    return f"generation {g} passed its deadline {generation.deadline.isoformat()}"


def _why_not_member(generation: StreamGeneration, cmd: CountGenerationMember) -> str | None:
    g, p = cmd.generation, cmd.partition
    if p not in generation.partitions:
        members = ", ".join(map(str, generation.partitions))
        return f"partition {p} is not a member of generation {g} ({members})"
    counted = generation.members.get(p)
    if counted is not None:
        return (
            f"partition {p} already counted for generation {g} with snapshot "
            f"{counted.snapshot_id} (LSN {counted.lsn}): the first to register counts"
        )
    minimum = generation.min_lsn.get(p, 0)
    if cmd.lsn < minimum:
        return (
            f"LSN {cmd.lsn} is below generation {g}'s minimum {minimum} for partition {p}: "
            "the processor's state is older than the request asked for"
        )
    return None


def decide_generation(
    head: StreamHead,
    generations: dict[int, StreamGeneration],
    command: GenerationCommand,
    ev: StreamSequencer,
    now: datetime,
) -> list[StreamEvent]:
    """The events of ``command``; ``generations`` holds the items it concerns (loaded)."""
    match command:
        case RequestStreamSnapshot():
            open_ = generations.get(head.open_generation or 0)
            return _request(head, open_, command, ev, now)
        case CountGenerationMember():
            return _count(head, generations.get(command.generation), command, ev, now)
        case FailOverdueGeneration():
            generation = generations.get(command.generation)
            if generation is None or not generation.overdue(now):
                return []
            return [_failed(generation, ev, FailureCause.DEADLINE, _late(generation))]


def _request(
    head: StreamHead,
    open_: StreamGeneration | None,
    command: RequestStreamSnapshot,
    ev: StreamSequencer,
    now: datetime,
) -> list[StreamEvent]:
    if command.deadline <= now:
        raise InvalidRequestError(
            f"the deadline {command.deadline.isoformat()} has passed: give a later one"
        )
    unknown = sorted(set(command.min_lsn) - set(command.partitions))
    if unknown:
        raise InvalidRequestError(
            f"min_lsn names partitions {unknown} that are not in 'partitions'"
        )
    new = head.generation + 1
    events: list[StreamEvent] = []
    if open_ is not None and open_.is_open:
        reason = f"superseded by generation {new} before every partition counted"
        events.append(_failed(open_, ev, FailureCause.SUPERSEDED, reason, superseded_by=new))
    events.append(
        StreamSnapshotRequested(
            **ev.next(),
            generation=new,
            partitions=tuple(sorted(set(command.partitions))),
            min_lsn=tuple(
                PartitionLsn(partition=p, lsn=n) for p, n in sorted(command.min_lsn.items())
            ),
            deadline=command.deadline,
            by=command.by,
            supersedes=open_.generation if events and open_ else None,
        )
    )
    return events


def _count(
    head: StreamHead,
    generation: StreamGeneration | None,
    command: CountGenerationMember,
    ev: StreamSequencer,
    now: datetime,
) -> list[StreamEvent]:
    if generation is not None and generation.overdue(now):
        return [_failed(generation, ev, FailureCause.DEADLINE, _late(generation))]
    if generation is None or not verdict(head, generation, command, now).counts:
        return []
    missing = tuple(p for p in generation.missing if p != command.partition)
    counted = StreamSnapshotMemberCounted(
        **ev.next(),
        generation=command.generation,
        partition=command.partition,
        snapshot_id=command.snapshot_id,
        lsn=command.lsn,
        epoch=command.epoch,
        offsets=command.offsets,
        missing=missing,
    )
    if missing:
        return [counted]
    members = [*(_as_member(m) for m in generation.members.values()), _as_member(counted)]
    completed = StreamSnapshotCompleted(
        **ev.next(),
        generation=command.generation,
        members=tuple(sorted(members, key=lambda m: m.partition)),
    )
    return [counted, completed]


def evolve_generation(
    head: StreamHead, generations: dict[int, StreamGeneration], event: StreamEvent
) -> tuple[StreamHead, dict[int, StreamGeneration]]:
    """HEAD and the generation items after ``event`` (HEAD's version already advanced)."""
    changed = dict(generations)
    match event:
        case StreamSnapshotRequested():
            changed[event.generation] = StreamGeneration(
                stream=event.stream,
                generation=event.generation,
                status=GenerationStatus.REQUESTED,
                partitions=event.partitions,
                min_lsn={m.partition: m.lsn for m in event.min_lsn},
                deadline=event.deadline,
                requested_at=event.at,
                requested_by=event.by,
                command_id=event.command_id,
                version=event.seq,
            )
            head = head.model_copy(
                update={
                    "generation": event.generation,
                    "open_generation": event.generation,
                    "open_deadline": event.deadline,
                }
            )
        case StreamSnapshotMemberCounted():
            generation = changed[event.generation]
            member = CountedMember.model_validate({**_member_fields(event), "counted_at": event.at})
            changed[event.generation] = generation.model_copy(
                update={
                    "members": {**generation.members, event.partition: member},
                    "version": event.seq,
                }
            )
        case StreamSnapshotCompleted():
            generation = changed[event.generation]
            changed[event.generation] = generation.model_copy(
                update={
                    "status": GenerationStatus.COMPLETED,
                    "completed_at": event.at,
                    "version": event.seq,
                }
            )
            completed = (event.generation, *head.completed_generations)
            head = head.model_copy(
                update={
                    **_ended(head, event.generation),
                    "completed_generations": completed[:COMPLETED_GENERATIONS_KEPT],
                }
            )
        case StreamSnapshotFailed():
            generation = changed[event.generation]
            changed[event.generation] = generation.model_copy(
                update={
                    "status": GenerationStatus.FAILED,
                    "failed_at": event.at,
                    "failure_cause": FailureCause(event.cause),
                    "failure_reason": event.reason,
                    "superseded_by": event.superseded_by,
                    "version": event.seq,
                }
            )
            head = head.model_copy(update=_ended(head, event.generation))
        case _:
            raise ValueError(f"{type(event).__name__} is not a generation event")
    return head, changed


def generations_to_load(head: StreamHead | None, command: GenerationCommand) -> tuple[int, ...]:
    """The ``GEN#`` items a command's decision reads (given HEAD, when already read)."""
    match command:
        case RequestStreamSnapshot():
            return () if head is None or head.open_generation is None else (head.open_generation,)
        case CountGenerationMember() | FailOverdueGeneration():
            return (command.generation,)


def _ended(head: StreamHead, ended: int) -> dict[str, object]:
    """HEAD's fields once ``ended`` completed or failed."""
    if head.open_generation != ended:
        return {}
    return {"open_generation": None, "open_deadline": None}


def _member_fields(member: GenerationMember) -> dict[str, object]:
    """The member's own fields (models/snapshot.py), whichever model carries them."""
    return {name: getattr(member, name) for name in GenerationMember.model_fields}


def _as_member(member: GenerationMember) -> StreamMember:
    return StreamMember.model_validate(_member_fields(member))


def _late(generation: StreamGeneration) -> str:
    missing = ", ".join(map(str, generation.missing))
    return (
        f"its deadline {generation.deadline.isoformat()} passed before partitions {missing} counted"
    )


def _failed(
    generation: StreamGeneration,
    ev: StreamSequencer,
    cause: FailureCause,
    reason: str,
    *,
    superseded_by: int | None = None,
) -> StreamSnapshotFailed:
    return StreamSnapshotFailed(
        **ev.next(),
        generation=generation.generation,
        cause=cause.value,
        reason=reason,
        missing=generation.missing,
        superseded_by=superseded_by,
    )
