"""Launch requests: console payloads and the ``detail`` of snapledger's EventBridge events.

Console example: ``{"action": "restore", "stream": "orders", "partition": 3, "from": "latest"}``
EventBridge: source ``snapledger``, detail-type ``RestoreRequested`` with the same fields in
``detail`` (``action`` implied by the detail type).
"""

from typing import Annotated, Literal

from pydantic import AwareDatetime, Field, model_validator

from snapledger.job_kinds import DETAIL_TYPE_KINDS, JOB_KINDS, Base, JobKind, job_kind
from snapledger.layout import MAX_LSN, STREAM_PATTERN, ULID_PATTERN
from snapledger.limits import MAX_COUNT, MAX_PARTITION
from snapledger.models.base import Frozen, one_of_error


class FromSnapshotId(Frozen):
    snapshot_id: Annotated[str, Field(pattern=f"^{ULID_PATTERN}$")]


class FromLsn(Frozen):
    """The newest registered snapshot at or below this LSN."""

    lsn: Annotated[int, Field(ge=0, le=MAX_LSN)]


class FromTime(Frozen):
    """The highest-LSN snapshot the registry had recorded by this time."""

    time: AwareDatetime


class FromGeneration(Frozen):
    """Each partition's member snapshot of a completed stream snapshot (generation)."""

    generation: Annotated[int, Field(ge=1, le=MAX_COUNT)]


SnapshotSelector = Literal["latest"] | FromSnapshotId | FromLsn | FromTime | FromGeneration

#: EventBridge detail-type -> the job kind it launches (the job-kinds table's rows).
DETAIL_TYPE_ACTIONS = DETAIL_TYPE_KINDS
#: The EventBridge detail-type that asks for a stream snapshot (``StreamSnapshotRequest``).
SNAPSHOT_STREAM_DETAIL_TYPE = "SnapshotStreamRequested"
SNAPSHOT_STREAM_ACTION = "snapshot_stream"


class LaunchRequest(Frozen):
    """Start a bootstrap, restore or compaction job on one or more partitions."""

    action: JobKind
    stream: Annotated[str, Field(pattern=f"^{STREAM_PATTERN}$")]
    partition: Annotated[int | None, Field(default=None, ge=0, le=MAX_PARTITION)] = None
    partitions: Annotated[
        list[Annotated[int, Field(ge=0, le=MAX_PARTITION)]] | None,
        Field(default=None, min_length=1, max_length=64),
    ] = None
    from_: Annotated[SnapshotSelector, Field(alias="from")] = "latest"
    target_lsn: Annotated[int | None, Field(default=None, ge=0, le=MAX_LSN)] = None
    target_lsns: Annotated[
        dict[int, Annotated[int, Field(ge=0, le=MAX_LSN)]] | None,
        Field(default=None, description="A target LSN per partition (a restore only)"),
    ] = None
    request_id: Annotated[str | None, Field(default=None, min_length=1, max_length=128)] = None

    @model_validator(mode="after")
    def _one_way_to_name_partitions(self) -> "LaunchRequest":
        kind = job_kind(self.action)
        if not kind.chooses_base and self.from_ != "latest":
            start = (
                "starts from empty state"
                if kind.base is Base.NONE
                else "always starts from the latest snapshot"
            )
            raise one_of_error(("from",), f"a {kind.name} {start}: leave out 'from'")
        every_member = isinstance(self.from_, FromGeneration) and not self.names_partitions
        if not every_member and (self.partition is None) == (self.partitions is None):
            raise one_of_error(
                ("partition", "partitions"),
                "give exactly one of 'partition' (a number) or 'partitions' (a list)",
            )
        if self.partitions is not None and len(set(self.partitions)) != len(self.partitions):
            raise one_of_error(("partitions",), "'partitions' lists a partition twice")
        if self.target_lsns is not None:
            self._check_target_lsns()
        return self

    def _check_target_lsns(self) -> None:
        if not job_kind(self.action).per_partition_targets:
            takers = " or ".join(s.name for s in JOB_KINDS.values() if s.per_partition_targets)
            raise one_of_error(
                ("target_lsns",), f"only a {takers} takes a target LSN per partition"
            )
        if self.target_lsn is not None:
            raise one_of_error(
                ("target_lsn", "target_lsns"), "give 'target_lsn' (all) or 'target_lsns', not both"
            )
        if not self.names_partitions:
            return  # every member of a generation: launch checks them against its members
        unknown = sorted(set(self.target_lsns or {}) - set(self.partition_list))
        if unknown:
            raise one_of_error(("target_lsns",), f"names partitions {unknown} the request does not")

    def target_for(self, partition: int) -> int | None:
        """The target LSN asked for ``partition`` (None: the changelog's end)."""
        if self.target_lsns is not None:
            return self.target_lsns.get(partition)
        return self.target_lsn

    @property
    def names_partitions(self) -> bool:
        return self.partition is not None or self.partitions is not None

    @property
    def partition_list(self) -> list[int]:
        if self.partitions is not None:
            return sorted(self.partitions)
        assert self.partition is not None
        return [self.partition]


class StreamSnapshotRequest(Frozen):
    """Ask every partition of a stream for a snapshot at its next generation.

    Console: ``{"action": "snapshot_stream", "stream": "orders", "partitions": [0, 1, 2, 3],
    "min_lsn": {"2": 18000}, "deadline_minutes": 30}``; EventBridge: source ``snapledger``,
    detail-type ``SnapshotStreamRequested``, the same fields in ``detail``.
    """

    action: Literal["snapshot_stream"]
    stream: Annotated[str, Field(pattern=f"^{STREAM_PATTERN}$")]
    partitions: Annotated[
        list[Annotated[int, Field(ge=0, le=MAX_PARTITION)]], Field(min_length=1, max_length=64)
    ]
    min_lsn: Annotated[
        dict[int, Annotated[int, Field(ge=0, le=MAX_LSN)]],
        Field(default_factory=dict, description="Partition -> the least LSN that counts"),
    ]
    deadline: AwareDatetime | None = None
    deadline_minutes: Annotated[int | None, Field(default=None, ge=1, le=7 * 24 * 60)] = None
    by: Annotated[str, Field(default="", max_length=256)] = ""
    request_id: Annotated[str | None, Field(default=None, min_length=1, max_length=128)] = None

    @model_validator(mode="after")
    def _consistent(self) -> "StreamSnapshotRequest":
        if len(set(self.partitions)) != len(self.partitions):
            raise one_of_error(("partitions",), "'partitions' lists a partition twice")
        if self.deadline is not None and self.deadline_minutes is not None:
            raise one_of_error(
                ("deadline", "deadline_minutes"), "give 'deadline' or 'deadline_minutes', not both"
            )
        unknown = sorted(set(self.min_lsn) - set(self.partitions))
        if unknown:
            raise one_of_error(("min_lsn",), f"names partitions {unknown} not in 'partitions'")
        return self
