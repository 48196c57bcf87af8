"""The events of a stream's own log (``STREAM#{stream}``): facts about the stream as a
whole (its retention policy, its snapshots by generation), with a ``stream`` and no
``partition`` (docs/ledger.md). ``models/events.py`` holds the lineages' events and the
rules both logs follow; it re-exports these.
"""

# No ``from __future__ import annotations`` here: see models/events.py.

from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import Field, TypeAdapter

from snapledger.models.base import DEFERRED, Frozen
from snapledger.models.event_evolution import Fields, upcaster
from snapledger.models.generations import StreamMember
from snapledger.models.policy import RetentionPolicy
from snapledger.models.snapshot import MEMBER_AS_JSON, GenerationMember


class StreamEventBase(Frozen):
    """What every event of a stream's own log carries: no partition, it is about them all."""

    schema_version: ClassVar[int] = 1  # stored with each event: models/upcasting.py
    seq: int = Field(ge=1, description="Gapless per stream, starting at 1")
    at: datetime = Field(description="Registry time (server clock)")
    stream: str
    command_id: str = Field(description="The command that produced it (for idempotency)")
    type: str  # the discriminator, as EventBase's: here, before a base's own fields


class PolicySet(StreamEventBase):
    """The stream's retention policy was set: ``policy`` is the whole policy now in force.

    ``changed`` names the fields whose value differs from ``previous_policy``, the policy in
    force before (the configured default when ``previous_version`` is None: the stream had
    none of its own). ``version`` is the policy's new version (what ``policy get`` answers).
    """

    type: Literal["PolicySet"] = "PolicySet"
    policy: RetentionPolicy
    changed: tuple[str, ...] = ()
    previous_policy: RetentionPolicy
    previous_version: int | None = None
    version: int = Field(ge=1)
    by: str = ""


class PolicyReset(StreamEventBase):
    """The stream's own policy was removed: the configured default applies again.

    ``policy`` is that default as configured when the reset was recorded (the default is
    configuration: it may change later without an event); ``previous_policy`` and
    ``previous_version`` are the stream's policy that was removed.
    """

    type: Literal["PolicyReset"] = "PolicyReset"
    policy: RetentionPolicy
    previous_policy: RetentionPolicy
    previous_version: int = Field(ge=1)
    by: str = ""


class PartitionLsn(Frozen):
    partition: int
    lsn: int


class StreamSnapshotRequested(StreamEventBase):
    """A snapshot of the stream at ``generation`` was asked for: each member partition's
    processor writes one whose manifest names this generation (and an LSN at or above
    the partition's ``min_lsn``) before ``deadline``."""

    type: Literal["StreamSnapshotRequested"] = "StreamSnapshotRequested"
    generation: int = Field(ge=1)
    partitions: tuple[int, ...]
    min_lsn: tuple[PartitionLsn, ...] = Field(
        default=(), description="A partition's snapshot counts only at or above its LSN here"
    )
    deadline: datetime
    by: str = ""
    supersedes: int | None = Field(
        default=None, description="The open generation this request failed (superseded)"
    )


class _GenerationEvent(StreamEventBase):
    generation: int = Field(ge=1)  # before the member's fields (models/snapshot.py)


class StreamSnapshotMemberCounted(GenerationMember, _GenerationEvent):
    """A member partition's snapshot counted for ``generation`` (recorded in the same
    transaction as its registration on the partition's own log)."""

    model_config = MEMBER_AS_JSON

    type: Literal["StreamSnapshotMemberCounted"] = "StreamSnapshotMemberCounted"
    missing: tuple[int, ...] = Field(description="The member partitions still to count")


class StreamSnapshotCompleted(StreamEventBase):
    """Every member partition counted: the stream can be restored to ``generation``."""

    # v2: a member's partition is ``partition`` (v1 ``member``), as in GEN# and generation.json
    schema_version: ClassVar[int] = 2
    type: Literal["StreamSnapshotCompleted"] = "StreamSnapshotCompleted"
    generation: int = Field(ge=1)
    members: tuple[StreamMember, ...]


@upcaster(StreamSnapshotCompleted, from_version=1)
def _members_name_their_partition(fields: Fields) -> Fields:
    """v2: each member's partition is ``partition`` (v1: ``member``), as in the generation
    record and ``generation.json``."""
    members = [
        {("partition" if name == "member" else name): value for name, value in member.items()}
        for member in fields.get("members", ())
    ]
    return {**fields, "members": members}


class StreamSnapshotFailed(StreamEventBase):
    """``generation`` will not complete: its deadline passed (``deadline``) or a newer
    request replaced it (``superseded``); ``missing`` names the partitions that had not
    counted."""

    type: Literal["StreamSnapshotFailed"] = "StreamSnapshotFailed"
    generation: int = Field(ge=1)
    cause: Literal["deadline", "superseded"]
    reason: str
    missing: tuple[int, ...]
    superseded_by: int | None = None


StreamEvent = Annotated[
    PolicySet
    | PolicyReset
    | StreamSnapshotRequested
    | StreamSnapshotMemberCounted
    | StreamSnapshotCompleted
    | StreamSnapshotFailed,
    Field(discriminator="type"),
]
STREAM_EVENT_ADAPTER: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent, config=DEFERRED)
