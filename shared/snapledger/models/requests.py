"""Launch requests: console payloads and the ``detail`` of snapledger's EventBridge events.

Console example: ``{"action": "restore", "stream": "orders", "partition": 3, "from": "latest"}``
EventBridge: source ``snapledger``, detail-type ``RestoreRequested`` with the same fields in
``detail`` (``action`` implied by the detail type).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AwareDatetime, Field, model_validator

from snapledger.job_kinds import Base, job_kind
from snapledger.layout import MAX_LSN, STREAM_PATTERN, ULID_PATTERN
from snapledger.models.base import Frozen, one_of_error
from snapledger.models.jobs import JobKind


class FromSnapshotId(Frozen):
    snapshot_id: Annotated[str, Field(pattern=f"^{ULID_PATTERN}$")]


class FromLsn(Frozen):
    """The newest registered snapshot at or below this LSN."""

    lsn: Annotated[int, Field(ge=0, le=MAX_LSN)]


class FromTime(Frozen):
    """The highest-LSN snapshot the registry had recorded by this time."""

    time: AwareDatetime


SnapshotSelector = Literal["latest"] | FromSnapshotId | FromLsn | FromTime

DETAIL_TYPE_ACTIONS = {
    "BootstrapRequested": JobKind.BOOTSTRAP,
    "RestoreRequested": JobKind.RESTORE,
    "CompactionRequested": JobKind.COMPACTION,
}


class LaunchRequest(Frozen):
    """Start a bootstrap, restore or compaction job on one or more partitions."""

    action: JobKind
    stream: Annotated[str, Field(pattern=f"^{STREAM_PATTERN}$")]
    partition: Annotated[int | None, Field(default=None, ge=0)] = None
    partitions: Annotated[
        list[Annotated[int, Field(ge=0)]] | None, Field(default=None, min_length=1, max_length=64)
    ] = None
    from_: Annotated[SnapshotSelector, Field(alias="from")] = "latest"
    target_lsn: Annotated[int | None, Field(default=None, ge=0, le=MAX_LSN)] = None
    request_id: Annotated[str | None, Field(default=None, min_length=1, max_length=128)] = None

    @model_validator(mode="after")
    def _one_way_to_name_partitions(self) -> LaunchRequest:
        if (self.partition is None) == (self.partitions is None):
            raise one_of_error(
                ("partition", "partitions"),
                "give exactly one of 'partition' (a number) or 'partitions' (a list)",
            )
        if self.partitions is not None and len(set(self.partitions)) != len(self.partitions):
            raise one_of_error(("partitions",), "'partitions' lists a partition twice")
        kind = job_kind(self.action)
        if not kind.chooses_base and self.from_ != "latest":
            start = (
                "starts from empty state"
                if kind.base is Base.NONE
                else "always starts from the latest snapshot"
            )
            raise one_of_error(("from",), f"a {kind.name} {start}: leave out 'from'")
        return self

    @property
    def partition_list(self) -> list[int]:
        if self.partitions is not None:
            return sorted(self.partitions)
        assert self.partition is not None
        return [self.partition]


def describe_selector(selector: SnapshotSelector) -> str:
    if selector == "latest":
        return "latest"
    if isinstance(selector, FromSnapshotId):
        return f"snapshot {selector.snapshot_id}"
    if isinstance(selector, FromLsn):
        return f"as of LSN {selector.lsn}"
    assert isinstance(selector, FromTime)
    return f"as of {selector.time.isoformat()}"
