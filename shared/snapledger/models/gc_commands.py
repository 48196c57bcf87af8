"""GC's commands on a lineage: expire what the plan chose, claim an orphan prefix, record
the deleted prefixes, advance the trim point. ``core/gc_rules.py`` decides each."""

import hashlib
from datetime import datetime
from typing import Literal

from pydantic import Field, field_validator

from snapledger.models.base import Frozen
from snapledger.models.generations import ProtectedGenerations
from snapledger.models.policy import RetentionPolicy
from snapledger.models.retention_reasons import DeleteCause

#: Items per lineage transaction: HEAD + one SNAP item + one event per snapshot stays
#: under DynamoDB's 100, and one read of HEAD + targets + the newest min_count does too.
MAX_EXPIRE_PER_COMMAND = 40
MAX_MARK_PER_COMMAND = 45


def _digest(*parts: str) -> str:
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


class ExpiryTarget(Frozen):
    """One snapshot GC's plan would delete, and the rule that chose it."""

    sort_key: str
    cause: DeleteCause

    @field_validator("cause")
    @classmethod
    def _chooses(cls, cause: DeleteCause) -> DeleteCause:
        if cause is DeleteCause.EXPIRING:
            raise ValueError(
                "'expiring' finishes what an earlier run chose, it chooses nothing: give the "
                "rule that selects the snapshot now (unprotected, rejected or a cap's cause)"
            )
        return cause


class ExpireSnapshots(Frozen):
    """Mark snapshots EXPIRING, each only if the rule still allows it on fresh state.

    ``witnesses`` are the newest ``min_count`` REGISTERED snapshots the plan saw; they are
    read in the same load, so "not among the newest min_count" is checked on what is there
    at commit time, never on the plan's possibly stale view.
    """

    kind: Literal["ExpireSnapshots"] = "ExpireSnapshots"
    stream: str
    partition: int
    run_id: str
    targets: tuple[ExpiryTarget, ...] = Field(min_length=1, max_length=MAX_EXPIRE_PER_COMMAND)
    witnesses: tuple[str, ...] = ()
    policy: RetentionPolicy
    grace_hours: float = Field(ge=1, description="REJECTED snapshots' files wait this long")
    generations: ProtectedGenerations | None = Field(
        default=None, description="Stream snapshots whose members are kept (None: all)"
    )
    unrestorable: tuple[str, ...] = Field(
        default=(),
        description="Sort keys the plan's layout found unrestorable (never restorable again: "
        "a log start and an age only advance): not counted toward min_count",
    )

    @property
    def command_id(self) -> str:
        return f"gc-expire:{self.run_id}:{_digest(*(t.sort_key for t in self.targets))}"

    @property
    def snapshot_keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*(t.sort_key for t in self.targets), *self.witnesses)))


class ClaimOrphan(Frozen):
    """Claim a snapshot prefix with no record whose newest object is past the grace window."""

    kind: Literal["ClaimOrphan"] = "ClaimOrphan"
    stream: str
    partition: int
    lsn: int
    snapshot_id: str
    manifest_key: str
    object_count: int
    newest_object_at: datetime
    grace_hours: float = Field(ge=1)

    @property
    def command_id(self) -> str:
        return f"gc-orphan:{self.lsn}:{self.snapshot_id}"


class DeletedPrefix(Frozen):
    sort_key: str
    objects_deleted: int = Field(ge=0)


class TrimProposal(Frozen):
    """The trim point GC computed: the oldest retained snapshot's LSN and sort key."""

    lsn: int = Field(ge=0)
    snapshot_key: str


class MarkSnapshotsDeleted(Frozen):
    """Record that the objects of these EXPIRING snapshots are gone (and, in the same
    transaction, advance the trim point when ``trim`` is given and still right)."""

    kind: Literal["MarkSnapshotsDeleted"] = "MarkSnapshotsDeleted"
    stream: str
    partition: int
    run_id: str
    deleted: tuple[DeletedPrefix, ...] = Field(min_length=1, max_length=MAX_MARK_PER_COMMAND)
    trim: TrimProposal | None = None

    @property
    def command_id(self) -> str:
        return f"gc-deleted:{self.run_id}:{_digest(*(d.sort_key for d in self.deleted))}"

    @property
    def snapshot_keys(self) -> tuple[str, ...]:
        keys = [d.sort_key for d in self.deleted]
        if self.trim is not None:
            keys.append(self.trim.snapshot_key)
        return tuple(dict.fromkeys(keys))


class AdvanceTrimPoint(Frozen):
    """Move the trim point forward to the LSN of the oldest retained snapshot."""

    kind: Literal["AdvanceTrimPoint"] = "AdvanceTrimPoint"
    stream: str
    partition: int
    lsn: int = Field(ge=0)
    snapshot_key: str

    @property
    def command_id(self) -> str:
        return f"gc-trim:{self.lsn}"
