"""Stream snapshots by generation: one snapshot per member partition at one generation G.

An operator asks for a snapshot of a whole stream (``RequestStreamSnapshot``); the stream's
log gives it the next generation G and announces it (``StreamSnapshotRequested`` on the
bus). Each processor writes a snapshot whose manifest names ``"generation": G``; its
registration *counts* for G (in the same transaction) when its partition is a member, its
LSN is at least the partition's minimum and G is still open. When every member has
counted, G is COMPLETED; past its deadline, or when a newer request supersedes it, it is
FAILED. docs/ledger.md, *Stream snapshots*, states the rules.

The record of G is the ``GEN#{G:012d}`` item of the stream's log (``STREAM#{stream}``).
"""

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from snapledger.models.base import Frozen, Stored
from snapledger.models.snapshot import GenerationMember

#: How many completed generations the stream's HEAD remembers (newest first): the most
#: ``min_generations`` a retention policy may ask GC to protect.
COMPLETED_GENERATIONS_KEPT = 16


class GenerationStatus(StrEnum):
    REQUESTED = "REQUESTED"  # open: members are counting
    COMPLETED = "COMPLETED"  # every member partition counted
    FAILED = "FAILED"  # past its deadline, or superseded by a newer request


class FailureCause(StrEnum):
    DEADLINE = "deadline"
    SUPERSEDED = "superseded"


class StreamMember(GenerationMember, Frozen):
    pass  # a member as StreamSnapshotCompleted lists it: its fields are models/snapshot.py's


class CountedMember(GenerationMember, Stored):
    """A member of the ``GEN#`` record: the snapshot that counted for a partition, and when."""

    counted_at: datetime


class StreamGeneration(Stored):
    """One generation of a stream's snapshots (the ``GEN#`` item)."""

    stream: str
    generation: int = Field(ge=1)
    status: GenerationStatus
    partitions: tuple[int, ...] = Field(description="The member partitions, ascending")
    min_lsn: dict[int, int] = Field(
        default_factory=dict, description="A partition's snapshot counts only at or above it"
    )
    deadline: datetime
    requested_at: datetime
    requested_by: str = ""
    command_id: str = Field(default="", description="The request that opened it")
    members: dict[int, CountedMember] = Field(default_factory=dict)
    completed_at: datetime | None = None
    failed_at: datetime | None = None
    failure_cause: FailureCause | None = None
    failure_reason: str | None = None
    superseded_by: int | None = None
    version: int = Field(ge=1, description="Sequence number of the last event that changed it")

    @property
    def missing(self) -> tuple[int, ...]:
        """The member partitions that have not counted yet."""
        return tuple(p for p in self.partitions if p not in self.members)

    @property
    def is_open(self) -> bool:
        return self.status is GenerationStatus.REQUESTED

    def overdue(self, now: datetime) -> bool:
        return self.is_open and now > self.deadline

    def member_list(self) -> list[CountedMember]:
        return [self.members[p] for p in sorted(self.members)]


class ProtectedGenerations(Frozen):
    """Which generations' members GC keeps (keep reason ``generation``), as read from the
    stream's HEAD at the start of a run.

    Protected: the newest ``min_generations`` completed, the open one, and any newer than
    the newest the read saw (requested since). Every other generation had ended for good
    when HEAD was read (failed, or completed and pushed out by newer completions), so a
    stale read only ever protects more, never less.
    """

    completed: tuple[int, ...] = ()
    open: int | None = None
    newest: int = 0

    def protects(self, member_of: int | None) -> bool:
        if member_of is None:
            return False
        return member_of in self.completed or member_of == self.open or member_of > self.newest


def protected_generations(
    generation: int, open_generation: int | None, completed: tuple[int, ...], keep: int
) -> ProtectedGenerations:
    """The guard for a stream whose HEAD says so, keeping ``keep`` completed generations."""
    return ProtectedGenerations(completed=completed[:keep], open=open_generation, newest=generation)
