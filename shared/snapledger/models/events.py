"""The ledger's events: the append-only ``EV#{seq}`` items, one type per fact.

Two logs hold them (docs/ledger.md):

- a **lineage's** log (``LIN#{stream}#{partition}``): ``LedgerEvent``, every event with its
  ``stream`` and ``partition``;
- a **stream's** log (``STREAM#{stream}``): ``StreamEvent``, facts about the stream as a
  whole (its retention policy, its snapshots by generation), with a ``stream`` and no
  ``partition`` (declared in ``models/stream_events.py``, re-exported here).

Each log numbers its events from 1 with no gap. Wire names are stable: ``type`` is the
discriminator (unique across both logs), fields are snake_case. New event types are
added, never renamed; readers skip types they do not know.

A change to a type's fields that a stored event would not validate against (a rename, a
new type of value) bumps the type's ``schema_version`` and declares, right below the
class, the ``@upcaster`` that reads the version before; a type given a new name declares
``renamed_type(old, Model)`` there (``models/event_evolution.py``; applied and checked by
``models/upcasting.py``): every event stored earlier still reads.
"""

# No ``from __future__ import annotations`` here: every Lambda function imports these models,
# and pydantic would compile and evaluate each annotation string of each model at import
# (cold start); the annotations name only what is defined above them.

from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import Field, TypeAdapter

from snapledger.limits import MAX_PROBLEM_CHARS, MAX_RECORDED_PROBLEMS
from snapledger.models.base import DEFERRED, Frozen
from snapledger.models.jobs import RecordedKind, ReportedState
from snapledger.models.snapshot import (
    GenerationMembership,
    ProducerFields,
    SnapshotFields,
)
from snapledger.models.stream_events import (  # the stream's log, re-exported
    STREAM_EVENT_ADAPTER,
    PartitionLsn,
    PolicyReset,
    PolicySet,
    StreamEvent,
    StreamEventBase,
    StreamSnapshotCompleted,
    StreamSnapshotFailed,
    StreamSnapshotMemberCounted,
    StreamSnapshotRequested,
)

__all__ = [
    "STREAM_EVENT_ADAPTER",
    "PartitionLsn",
    "PolicyReset",
    "PolicySet",
    "StreamEvent",
    "StreamEventBase",
    "StreamSnapshotCompleted",
    "StreamSnapshotFailed",
    "StreamSnapshotMemberCounted",
    "StreamSnapshotRequested",
]


class EventBase(Frozen):
    """What every event carries."""

    schema_version: ClassVar[int] = 1  # stored with each event: models/upcasting.py
    seq: int = Field(ge=1, description="Gapless per lineage, starting at 1")
    at: datetime = Field(description="Registry time (server clock)")
    stream: str
    partition: int
    command_id: str = Field(description="The command that produced it (for idempotency)")
    # The discriminator: each event narrows it to its own Literal, and it stays here, after
    # the fields above, when a base between declares fields of its own.
    type: str


#: Why a manifest was refused: unreadable or wrong, an older writer's, or another content.
RejectionCode = Literal["invalid", "fenced", "conflict"]


class ManifestEvent(EventBase):
    """An event about the manifest that arrived for a snapshot: registered or rejected."""

    snapshot_id: str
    lsn: int
    epoch: int | None = None
    manifest_key: str
    manifest_digest: str


# The snapshot's fields are declared once (models/snapshot.py); this event lists them after
# ManifestEvent's, in that order (bases from the last).
class SnapshotRegistered(ProducerFields, GenerationMembership, SnapshotFields, ManifestEvent):
    type: Literal["SnapshotRegistered"] = "SnapshotRegistered"
    epoch: int


class SnapshotRejected(ManifestEvent):
    """A manifest refused: ``code`` is ``invalid``, ``fenced`` or ``conflict``."""

    type: Literal["SnapshotRejected"] = "SnapshotRejected"
    code: RejectionCode
    reason: str


class LatestAdvanced(EventBase):
    type: Literal["LatestAdvanced"] = "LatestAdvanced"
    snapshot_id: str
    lsn: int
    previous_snapshot_id: str | None = None
    previous_lsn: int | None = None


class SnapshotPinned(EventBase):
    """A job reads the snapshot: GC keeps it until the job ends."""

    type: Literal["SnapshotPinned"] = "SnapshotPinned"
    snapshot_id: str
    lsn: int
    job_id: str


class SnapshotUnpinned(EventBase):
    type: Literal["SnapshotUnpinned"] = "SnapshotUnpinned"
    snapshot_id: str
    lsn: int
    job_id: str


class JobRequested(EventBase):
    """A job will work on this lineage, from ``base_lsn`` (None: empty) to ``target_lsn``."""

    type: Literal["JobRequested"] = "JobRequested"
    job_id: str
    job_kind: RecordedKind
    base_snapshot_id: str | None = None
    base_lsn: int | None = None
    target_lsn: int


class JobStateChanged(EventBase):
    """The runner reported a state; terminal ones are followed by Succeeded/Failed."""

    type: Literal["JobStateChanged"] = "JobStateChanged"
    job_id: str
    state: ReportedState
    run_id: str | None = None


class JobSucceeded(EventBase):
    type: Literal["JobSucceeded"] = "JobSucceeded"
    job_id: str


class JobFailed(EventBase):
    """The job failed or was cancelled; ``reason`` is what the runner said."""

    type: Literal["JobFailed"] = "JobFailed"
    job_id: str
    state: ReportedState
    reason: str


class SnapshotExpiring(EventBase):
    """GC committed to deleting the snapshot's objects: ``cause`` says which rule chose it.

    From here the snapshot is never used again; its objects are deleted next and
    ``SnapshotDeleted`` follows. A GC run that finds a snapshot EXPIRING finishes the job.
    """

    type: Literal["SnapshotExpiring"] = "SnapshotExpiring"
    snapshot_id: str
    lsn: int
    cause: str
    reason: str


class OrphanClaimed(EventBase):
    """GC claimed a snapshot prefix that had no record and no object within the grace window.

    It creates an EXPIRING record, so a manifest arriving later is a conflict, never a
    registration of files that are being deleted.
    """

    type: Literal["OrphanClaimed"] = "OrphanClaimed"
    snapshot_id: str
    lsn: int
    manifest_key: str
    object_count: int
    newest_object_at: datetime
    reason: str


class SnapshotDeleted(EventBase):
    """Every object of the snapshot's prefix that GC listed is deleted."""

    type: Literal["SnapshotDeleted"] = "SnapshotDeleted"
    snapshot_id: str
    lsn: int
    objects_deleted: int


class SnapshotHeld(EventBase):
    """An operator's hold: GC keeps the snapshot while the hold is live."""

    type: Literal["SnapshotHeld"] = "SnapshotHeld"
    snapshot_id: str
    lsn: int
    hold_id: str
    expires_at: datetime | None = None
    reason: str = ""
    by: str = ""


class SnapshotReleased(EventBase):
    type: Literal["SnapshotReleased"] = "SnapshotReleased"
    snapshot_id: str
    lsn: int
    hold_id: str
    by: str = ""


class TrimPointAdvanced(EventBase):
    """The changelog below ``lsn`` is no longer needed to restore any retained snapshot."""

    type: Literal["TrimPointAdvanced"] = "TrimPointAdvanced"
    lsn: int
    previous_lsn: int | None = None
    snapshot_id: str = Field(description="The oldest retained snapshot, at ``lsn``")


class SnapshotFoundBroken(EventBase):
    """Heal found that a snapshot can no longer be restored from: the files at fault and
    why (nothing is deleted; a producer's pointer naming it is repointed)."""

    type: Literal["SnapshotFoundBroken"] = "SnapshotFoundBroken"
    snapshot_id: str
    lsn: int
    problems: tuple[str, ...] = Field(
        description="One line per file at fault naming each check it failed, then one if "
        f"the files' ETags differ from registration's digest; at most {MAX_RECORDED_PROBLEMS} "
        f"lines of at most {MAX_PROBLEM_CHARS:,} characters, the last then counting the rest"
    )


class ProducerLatestRepointed(EventBase):
    """A producer-owned pointer (Restate's latest.json) now names ``snapshot_id``: heal
    moved it off a broken snapshot, or an operator restored from a chosen one."""

    type: Literal["ProducerLatestRepointed"] = "ProducerLatestRepointed"
    snapshot_id: str
    lsn: int
    previous_snapshot_id: str | None = None
    previous_lsn: int | None = None
    cause: Literal["heal", "restore"]
    by: str = ""
    reason: str = ""


class SnapshotEvicted(EventBase):
    """A REGISTERED snapshot's files were found gone, deleted by its producer (Restate's
    ``num-retained``) or outside snapledger: the record is DELETED with ``reason``."""

    type: Literal["SnapshotEvicted"] = "SnapshotEvicted"
    snapshot_id: str
    lsn: int
    reason: str


class ChangelogSegmentRejected(EventBase):
    """A file under the lineage's changelog folder that is not a segment: jobs skip it."""

    type: Literal["ChangelogSegmentRejected"] = "ChangelogSegmentRejected"
    segment_key: str
    size: int = Field(ge=0)
    reason: str


LedgerEvent = Annotated[
    SnapshotRegistered
    | SnapshotRejected
    | LatestAdvanced
    | SnapshotPinned
    | SnapshotUnpinned
    | JobRequested
    | JobStateChanged
    | JobSucceeded
    | JobFailed
    | SnapshotExpiring
    | OrphanClaimed
    | SnapshotDeleted
    | SnapshotHeld
    | SnapshotReleased
    | TrimPointAdvanced
    | ChangelogSegmentRejected
    | SnapshotFoundBroken
    | ProducerLatestRepointed
    | SnapshotEvicted,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[LedgerEvent] = TypeAdapter(LedgerEvent, config=DEFERRED)
