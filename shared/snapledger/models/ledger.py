"""The ledger's projections: a lineage's HEAD and its snapshot records."""

from datetime import datetime
from enum import StrEnum

from pydantic import Field

from snapledger.layout import LSN_WIDTH
from snapledger.models.base import Frozen, Stored
from snapledger.models.jobs import RecordedKind, ReportedState
from snapledger.models.snapshot import GenerationMembership, ProducerFields, SnapshotFields


class SnapshotStatus(StrEnum):
    """A snapshot's life: REGISTERED → EXPIRING → DELETED, or REJECTED from the start."""

    REGISTERED = "REGISTERED"
    REJECTED = "REJECTED"
    EXPIRING = "EXPIRING"
    DELETED = "DELETED"


class LineageId(Frozen):
    """One (stream, partition): the unit of consistency."""

    stream: str
    partition: int = Field(ge=0)

    def __str__(self) -> str:
        return f"{self.stream}/{self.partition}"


class Pin(Frozen):
    """A job reading the snapshot; released when the job ends."""

    job_id: str
    at: datetime


class Hold(Frozen):
    """An operator's "keep this", with an optional expiry."""

    hold_id: str
    at: datetime
    expires_at: datetime | None = None
    reason: str = ""
    by: str = ""

    def is_live(self, now: datetime) -> bool:
        return self.expires_at is None or self.expires_at > now


class SnapshotKey(Stored):
    """Which snapshot a record is, and the manifest it was recorded from."""

    stream: str
    partition: int
    lsn: int
    snapshot_id: str
    status: SnapshotStatus
    epoch: int | None = Field(default=None, description="None when the manifest was unreadable")
    manifest_key: str
    manifest_digest: str


class SnapshotRecord(ProducerFields, GenerationMembership, SnapshotFields, SnapshotKey):
    """One snapshot as the ledger knows it (the ``SNAP#`` item): the snapshot's fields
    (models/snapshot.py) as its ``SnapshotRegistered`` event gave them, after its key; GC
    protects the members of a generation (``member_of``)."""

    file_count: int = 0  # a rejected snapshot's record has neither
    total_bytes: int = 0
    registered_at: datetime = Field(description="Registry (server) time it was recorded")
    broken: tuple[str, ...] = Field(
        default=(), description="Why it can no longer be restored from, as heal found it"
    )
    rejection_code: str | None = None
    rejection_reason: str | None = None
    conflicting_digests: tuple[str, ...] = ()
    pins: tuple[Pin, ...] = ()
    holds: tuple[Hold, ...] = ()
    version: int = Field(ge=1, description="Sequence number of the last event that changed it")
    expiry_cause: str | None = Field(default=None, description="The GC rule that chose it")
    expiry_reason: str | None = None
    expiring_at: datetime | None = None
    deleted_at: datetime | None = None
    objects_deleted: int | None = None

    def live_holds(self, now: datetime) -> tuple[Hold, ...]:
        return tuple(hold for hold in self.holds if hold.is_live(now))

    @property
    def sort_key(self) -> str:
        return snapshot_sort_key(self.lsn, self.snapshot_id)


class ActiveJob(Frozen):
    """A job working on the lineage, as HEAD remembers it until it ends."""

    kind: RecordedKind
    state: ReportedState
    base_snapshot_id: str | None = None
    base_lsn: int | None = None
    target_lsn: int


#: How many ended jobs HEAD remembers, so late state events for them are recognised.
FINISHED_JOBS_KEPT = 32


class Head(Stored):
    """The lineage's projection (the ``HEAD`` item): one GetItem answers "latest"."""

    stream: str
    partition: int
    version: int = Field(default=0, ge=0, description="Sequence number of the last event")
    latest_snapshot_id: str | None = None
    latest_lsn: int | None = None
    max_epoch: int | None = None
    origin: str | None = Field(
        default=None,
        description="Who writes the lineage's snapshots, for a foreign layout (set by the "
        "first registered; a snapshot from another is rejected)",
    )
    registered_count: int = 0
    rejected_count: int = 0
    compaction_job_id: str | None = None
    trim_lsn: int | None = None
    active_jobs: dict[str, ActiveJob] = Field(default_factory=dict)
    finished_jobs: tuple[str, ...] = ()
    updated_at: datetime | None = None
    sharing: tuple[str, ...] | None = Field(
        default=None,
        description="The sort keys of its snapshots that reference files outside their own "
        "folder and are not DELETED: GC reads them before it deletes what they may use",
    )

    @property
    def lineage(self) -> LineageId:
        return LineageId(stream=self.stream, partition=self.partition)


def snapshot_sort_key(lsn: int, snapshot_id: str) -> str:
    return f"SNAP#{lsn:0{LSN_WIDTH}d}#{snapshot_id}"


#: How many command ids a stream's HEAD remembers, so a redelivered command is recognised.
RECENT_COMMANDS_KEPT = 32


class StreamHead(Stored):
    """A stream's projection (``STREAM#{stream}`` / ``HEAD``): the head of its own log.

    The stream's log holds facts about the stream as a whole (its retention policy);
    every command on it is conditioned on ``version``, as a lineage's are on its HEAD's.
    """

    stream: str
    version: int = Field(default=0, ge=0, description="Sequence number of the last event")
    policy_version: int = Field(
        default=0, ge=0, description="The highest policy version stored (never reused)"
    )
    recent_commands: tuple[str, ...] = Field(
        default=(), description=f"The last {RECENT_COMMANDS_KEPT} command ids applied"
    )
    generation: int = Field(default=0, ge=0, description="The newest generation requested")
    open_generation: int | None = Field(
        default=None, description="The generation still counting members, if any"
    )
    open_deadline: datetime | None = Field(
        default=None, description="The open generation's deadline (GC fails it past that)"
    )
    completed_generations: tuple[int, ...] = Field(
        default=(), description="The newest completed generations, newest first"
    )
    updated_at: datetime | None = None
