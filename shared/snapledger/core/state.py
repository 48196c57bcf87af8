"""A lineage's state as a decision sees it, and the numbering of new events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypedDict

from snapledger.models.ledger import Head, SnapshotRecord


@dataclass(frozen=True)
class LineageState:
    """HEAD plus the snapshot records a decision needs (keyed by sort key)."""

    head: Head
    snapshots: Mapping[str, SnapshotRecord] = field(default_factory=dict)
    #: The commit also checks the snapshots it holds and leaves unchanged (GC's expiry
    #: and marks: witnesses and a trim point read without being written, perhaps from a
    #: seed); other commands decide only on the items they write, which their Puts check.
    check_unchanged: bool = False

    @classmethod
    def empty(cls, stream: str, partition: int) -> LineageState:
        return cls(head=Head(stream=stream, partition=partition))


class EventFields(TypedDict):
    """What every event of a lineage's log carries (``EventBase``), for an event built as
    ``SomeEvent(**ev.next(), snapshot_id=..., ...)``: mypy checks each keyword, these and
    the event's own, against the event's fields (a misspelled or missing one fails)."""

    seq: int
    at: datetime
    stream: str
    partition: int
    command_id: str


class StreamEventFields(TypedDict):
    """What every event of a stream's own log carries (``StreamEventBase``)."""

    seq: int
    at: datetime
    stream: str
    command_id: str


class Sequencer:
    """Numbers the events of one decision, continuing from the head's version."""

    def __init__(self, state: LineageState, command_id: str, now: datetime) -> None:
        self._numbers = StreamSequencer(state.head.version, state.head.stream, command_id, now)
        self._partition = state.head.partition

    def next(self) -> EventFields:
        """The common fields of the decision's next event (its ``seq`` the next number)."""
        common = self._numbers.next()
        return EventFields(**common, partition=self._partition)


class StreamSequencer:
    """Numbers the events of one decision on a stream's own log, after ``version``."""

    def __init__(self, version: int, stream: str, command_id: str, now: datetime) -> None:
        self._next = version + 1
        self._stream = stream
        self._command_id = command_id
        self._now = now

    def next(self) -> StreamEventFields:
        """The common fields of the decision's next event (its ``seq`` the next number)."""
        seq, self._next = self._next, self._next + 1
        return StreamEventFields(
            seq=seq, at=self._now, stream=self._stream, command_id=self._command_id
        )
