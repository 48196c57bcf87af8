"""The Decider of a stream's own log: ``decide(state, command, now) -> events``, ``evolve``.

A stream's log holds the facts about the stream as a whole: its retention policy
(``PolicySet``, ``PolicyReset``) and its snapshots by generation (``core/generations.py``).
Both functions are pure; the adapter loads a ``StreamState`` (the stream's HEAD, its
POLICY item and the ``GEN#`` items the command reads), and writes HEAD, the POLICY and
GEN items and the events in one transaction conditioned on the versions it loaded.

Rules (docs/retention.md, *Policies*):
- a command whose id HEAD remembers is a duplicate: no event;
- ``expected_version`` (when given) must be the policy's version, 0 for the default;
- a set validates the whole resulting policy; one that changes nothing on a stored
  policy is a no-op (setting the default's values on a stream that has none stores
  them: the stream no longer follows the default);
- a reset of a stream that has no policy of its own is a no-op;
- policy versions are never reused: after a reset, the next set continues above the
  highest version the stream ever stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime

from snapledger.core.generations import GenerationCommand, decide_generation, evolve_generation
from snapledger.core.state import StreamSequencer
from snapledger.errors import StaleVersionError
from snapledger.models.commands import ResetPolicy, SetPolicy
from snapledger.models.events import (
    PolicyReset,
    PolicySet,
    StreamEvent,
    StreamSnapshotCompleted,
    StreamSnapshotFailed,
    StreamSnapshotMemberCounted,
    StreamSnapshotRequested,
)
from snapledger.models.generations import StreamGeneration
from snapledger.models.ledger import RECENT_COMMANDS_KEPT, StreamHead
from snapledger.models.policy import RetentionPolicy, StoredPolicy, parse_policy

StreamCommand = SetPolicy | ResetPolicy | GenerationCommand


@dataclass(frozen=True)
class StreamState:
    """A stream's HEAD, its stored policy (None: the configured default applies) and the
    generations loaded for the command (by number; absent: not loaded or never requested)."""

    head: StreamHead
    policy: StoredPolicy | None = None
    generations: dict[int, StreamGeneration] = field(default_factory=dict)

    @classmethod
    def empty(cls, stream: str) -> StreamState:
        return cls(head=StreamHead(stream=stream))

    @property
    def policy_version(self) -> int:
        """The stored policy's version; 0 when the stream follows the default."""
        return 0 if self.policy is None else self.policy.version

    def is_duplicate(self, command_id: str) -> bool:
        return command_id in self.head.recent_commands


def decide_stream(state: StreamState, command: StreamCommand, now: datetime) -> list[StreamEvent]:
    """The events ``command`` produces in ``state`` (empty: nothing to do)."""
    if state.is_duplicate(command.command_id):
        return []
    ev = StreamSequencer(state.head.version, command.stream, command.command_id, now)
    match command:
        case SetPolicy():
            _check_expected_version(state, command)
            previous = command.default if state.policy is None else state.policy.policy
            policy = parse_policy({**previous.model_dump(), **command.changes})
            if state.policy is not None and policy == state.policy.policy:
                return []
            # Above both: a legacy POLICY item (stored before the log existed) has a version
            # HEAD never counted, and after a reset HEAD remembers versions no item holds.
            version = max(state.head.policy_version, state.policy_version) + 1
            return [
                PolicySet(
                    **ev.next(),
                    policy=policy,
                    changed=_changed(previous, policy),
                    previous_policy=previous,
                    previous_version=None if state.policy is None else state.policy.version,
                    version=version,
                    by=command.by,
                )
            ]
        case ResetPolicy():
            _check_expected_version(state, command)
            if state.policy is None:
                return []
            return [
                PolicyReset(
                    **ev.next(),
                    policy=command.default,
                    previous_policy=state.policy.policy,
                    previous_version=state.policy.version,
                    by=command.by,
                )
            ]
        case _:
            return decide_generation(state.head, state.generations, command, ev, now)


def evolve_stream(state: StreamState, event: StreamEvent) -> StreamState:
    """The state after ``event``; every event bumps HEAD's version to its seq."""
    if event.seq != state.head.version + 1:
        raise ValueError(f"event seq {event.seq} does not follow version {state.head.version}")
    head = state.head.model_copy(
        update={
            "version": event.seq,
            "updated_at": event.at,
            "recent_commands": (*state.head.recent_commands, event.command_id)[
                -RECENT_COMMANDS_KEPT:
            ],
        }
    )
    match event:
        case PolicySet():
            stored = StoredPolicy(
                stream=event.stream,
                policy=event.policy,
                version=event.version,
                updated_at=event.at,
                updated_by=event.by,
            )
            head = head.model_copy(
                update={"policy_version": max(head.policy_version, event.version)}
            )
            return replace(state, head=head, policy=stored)
        case PolicyReset():
            head = head.model_copy(
                update={"policy_version": max(head.policy_version, event.previous_version)}
            )
            return replace(state, head=head, policy=None)
        case (
            StreamSnapshotRequested()
            | StreamSnapshotMemberCounted()
            | StreamSnapshotCompleted()
            | StreamSnapshotFailed()
        ):
            head, generations = evolve_generation(head, state.generations, event)
            return replace(state, head=head, generations=generations)
        case _:
            # a fact the log keeps and nothing reads back: it moves only HEAD's version
            return replace(state, head=head)


def evolve_stream_all(state: StreamState, events: Iterable[StreamEvent]) -> StreamState:
    for event in events:
        state = evolve_stream(state, event)
    return state


def _check_expected_version(state: StreamState, command: SetPolicy | ResetPolicy) -> None:
    expected = command.expected_version
    if expected is not None and expected != state.policy_version:
        raise StaleVersionError(
            f"the policy of {command.stream} is at version {state.policy_version}, not "
            f"{expected}: someone changed it since you read it; read it again and re-apply "
            "your change"
        )


def _changed(before: RetentionPolicy, after: RetentionPolicy) -> tuple[str, ...]:
    fields = RetentionPolicy.model_fields
    return tuple(name for name in fields if getattr(before, name) != getattr(after, name))
