"""A lineage's state as a decision sees it, and the numbering of new events."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

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


class Sequencer:
    """Numbers the events of one decision, continuing from the head's version."""

    def __init__(self, state: LineageState, command_id: str, now: datetime) -> None:
        self._next = state.head.version + 1
        self.common = {
            "at": now,
            "stream": state.head.stream,
            "partition": state.head.partition,
            "command_id": command_id,
        }

    def seq(self) -> int:
        value, self._next = self._next, self._next + 1
        return value
