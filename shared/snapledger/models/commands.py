"""Commands: what a caller asks of a lineage or a stream. ``decide`` turns one into events.

GC's own commands (expire, claim an orphan, mark deleted, advance the trim point) are in
``models/gc_commands.py``."""

import hashlib
from datetime import datetime
from typing import Annotated, Any, Literal, TypedDict

from pydantic import Field

from snapledger.job_kinds import JobKind
from snapledger.limits import MAX_PROBLEM_CHARS, MAX_RECORDED_PROBLEMS
from snapledger.models.base import Frozen
from snapledger.models.jobs import ReportedState
from snapledger.models.policy import RetentionPolicy
from snapledger.models.snapshot import GenerationMember, ProducerFields, SnapshotFields


class ManifestSummary(ProducerFields, SnapshotFields, Frozen):
    """What registration keeps of a valid manifest: the snapshot's fields
    (models/snapshot.py) and the epoch of its writer."""

    epoch: int


class ArrivedManifest(TypedDict):
    """Which snapshot's manifest arrived: a ``RegisterSnapshot`` of it is built as
    ``RegisterSnapshot(**arrived, manifest_digest=..., ...)``, mypy checking each keyword."""

    stream: str
    partition: int
    lsn: int
    snapshot_id: str
    manifest_key: str


class RegisterSnapshot(Frozen):
    """Record the snapshot whose manifest arrived at ``manifest_key``.

    Exactly one of ``summary`` (valid) or ``rejection`` (invalid) is set, unless the
    manifest had vanished before it could be read (``manifest_missing``).
    """

    kind: Literal["RegisterSnapshot"] = "RegisterSnapshot"
    stream: str
    partition: int
    lsn: int
    snapshot_id: str
    manifest_key: str
    manifest_digest: str
    summary: ManifestSummary | None = None
    rejection: str | None = None
    manifest_missing: bool = False
    epoch_hint: int | None = Field(
        default=None, description="The manifest's epoch when readable but otherwise invalid"
    )
    shared_written: tuple[tuple[str, datetime], ...] = Field(
        default=(),
        description="When each shared/ file it references was written (the store's time): "
        "one no registered snapshot references must be younger than "
        "limits.MAX_NEW_SHARED_FILE_AGE_S when the registration is decided",
    )

    @property
    def command_id(self) -> str:
        return f"register:{self.manifest_key}:{self.manifest_digest}"


class RecordBrokenSnapshot(Frozen):
    """Record that a snapshot can no longer be restored from (heal's check), and why."""

    kind: Literal["RecordBrokenSnapshot"] = "RecordBrokenSnapshot"
    stream: str
    partition: int
    lsn: int
    snapshot_id: str
    problems: tuple[Annotated[str, Field(max_length=MAX_PROBLEM_CHARS)], ...] = Field(
        min_length=1, max_length=MAX_RECORDED_PROBLEMS
    )

    @property
    def command_id(self) -> str:
        digest = hashlib.sha256("\n".join(self.problems).encode()).hexdigest()[:16]
        return f"broken:{self.snapshot_id}:{digest}"


class RecordRepoint(Frozen):
    """Record that a producer-owned pointer (Restate's latest.json) was rewritten to name
    ``snapshot_id``: by heal, or on an operator's restore-from-chosen."""

    kind: Literal["RecordRepoint"] = "RecordRepoint"
    stream: str
    partition: int
    lsn: int
    snapshot_id: str
    previous_snapshot_id: str | None = None
    previous_lsn: int | None = None
    cause: Literal["heal", "restore"]
    by: str = Field(default="", max_length=256)
    reason: str = Field(default="", max_length=1024)
    request_id: str = Field(min_length=1, max_length=256)

    @property
    def command_id(self) -> str:
        return f"repoint:{self.request_id}"


class RecordEvicted(Frozen):
    """Record that a REGISTERED snapshot's files are gone, deleted by its producer (Restate
    evicts beyond its ``num-retained``) or outside snapledger: it is DELETED, with why."""

    kind: Literal["RecordEvicted"] = "RecordEvicted"
    stream: str
    partition: int
    lsn: int
    snapshot_id: str
    reason: str = Field(max_length=1024)

    @property
    def command_id(self) -> str:
        return f"evicted:{self.snapshot_id}"


class RequestJob(Frozen):
    """Record that a job will work on this lineage, pinning its base snapshot."""

    kind: Literal["RequestJob"] = "RequestJob"
    stream: str
    partition: int
    job_id: str
    job_kind: JobKind
    base_snapshot_id: str | None = None
    base_lsn: int | None = None
    target_lsn: int

    @property
    def command_id(self) -> str:
        return f"request-job:{self.job_id}"


class RecordJobState(Frozen):
    """Record a state the runner reported; a terminal one unpins the base snapshot."""

    kind: Literal["RecordJobState"] = "RecordJobState"
    stream: str
    partition: int
    job_id: str
    state: ReportedState
    run_id: str | None = None
    reason: str | None = None

    @property
    def command_id(self) -> str:
        return f"job-state:{self.job_id}:{self.state}"


class RejectSegment(Frozen):
    """Record a file under the lineage's changelog folder whose name is not a segment's."""

    kind: Literal["RejectSegment"] = "RejectSegment"
    stream: str
    partition: int
    segment_key: str
    size: int = Field(ge=0)
    reason: str

    @property
    def command_id(self) -> str:
        return f"segment-rejected:{self.segment_key}"


class HoldSnapshot(Frozen):
    """An operator's "keep this" on one snapshot, optionally until ``expires_at``."""

    kind: Literal["HoldSnapshot"] = "HoldSnapshot"
    stream: str
    partition: int
    lsn: int
    snapshot_id: str
    hold_id: str = Field(min_length=1, max_length=128)
    expires_at: datetime | None = None
    reason: str = Field(default="", max_length=1024)
    by: str = Field(default="", max_length=256)

    @property
    def command_id(self) -> str:
        return f"hold:{self.hold_id}"


class ReleaseHold(Frozen):
    """Release one hold (``hold_id``) or every hold (None) of a snapshot."""

    kind: Literal["ReleaseHold"] = "ReleaseHold"
    stream: str
    partition: int
    lsn: int
    snapshot_id: str
    hold_id: str | None = None
    by: str = Field(default="", max_length=256)
    request_id: str = Field(min_length=1, description="Distinguishes one release from another")

    @property
    def command_id(self) -> str:
        return f"release:{self.request_id}"


# --- commands on a stream's own log ------------------------------------------------------


class PolicyCommand(Frozen):
    """What a change of a stream's retention policy carries, whichever it is.

    ``default`` is the configured default (the base of a stream that has no policy of its
    own, and what applies after a reset); ``expected_version`` (None: any) refuses the
    change unless the policy is at that version (0: the stream uses the default).
    """

    stream: str
    default: RetentionPolicy
    expected_version: int | None = Field(default=None, ge=0)
    by: str = Field(default="", max_length=256)
    request_id: str = Field(min_length=1, description="The same request is applied once")


class SetPolicy(PolicyCommand):
    """Change the fields in ``changes`` of the stream's retention policy."""

    kind: Literal["SetPolicy"] = "SetPolicy"
    changes: dict[str, Any]

    @property
    def command_id(self) -> str:
        return f"policy-set:{self.request_id}"


class ResetPolicy(PolicyCommand):
    """Remove the stream's own retention policy: the configured ``default`` applies again."""

    kind: Literal["ResetPolicy"] = "ResetPolicy"

    @property
    def command_id(self) -> str:
        return f"policy-reset:{self.request_id}"


# --- stream snapshots by generation (models/generations.py) --------------------------


class RequestStreamSnapshot(Frozen):
    """Ask every partition of ``partitions`` for a snapshot at the stream's next generation.

    An open (incomplete) generation is superseded: it fails, naming the new one.
    """

    kind: Literal["RequestStreamSnapshot"] = "RequestStreamSnapshot"
    stream: str
    partitions: tuple[int, ...] = Field(min_length=1)
    min_lsn: dict[int, int] = Field(default_factory=dict)
    deadline: datetime
    by: str = Field(default="", max_length=256)
    request_id: str = Field(min_length=1, description="The same request is applied once")

    @property
    def command_id(self) -> str:
        return f"stream-snapshot:{self.request_id}"


class CountGenerationMember(GenerationMember, Frozen):
    """A member partition's snapshot, registered in the same transaction, counts for
    ``generation`` if the rules allow (``core/generations.py``); carries the registration's
    command id, so a redelivered manifest is recognised on both logs."""

    kind: Literal["CountGenerationMember"] = "CountGenerationMember"
    stream: str
    generation: int
    registration_command_id: str

    @property
    def command_id(self) -> str:
        return self.registration_command_id


class FailOverdueGeneration(Frozen):
    """Fail ``generation`` if it is still open past its deadline (GC's schedule asks)."""

    kind: Literal["FailOverdueGeneration"] = "FailOverdueGeneration"
    stream: str
    generation: int

    @property
    def command_id(self) -> str:
        return f"generation-overdue:{self.stream}:{self.generation}"
