"""The gc function's Restate actions: heal a stream's latests, restore from a chosen snapshot.

- ``{"action": "restate_heal", "stream", "partition"?, "after_partition"?, "dry_run"?}``:
  check the snapshot each partition's ``latest.json`` names (one partition, or each lineage
  of the stream the ledger knows, in the ledger's order) and repoint a broken one
  (``services/restate_heal.py``); a dry run says what it would do and writes nothing. Over
  every partition it is bounded by the invocation's time: it takes no new partition once
  less than GC's reserve (``stop_with_seconds_left``) is left, having checked at least one,
  and answers ``complete`` false with ``after_partition``, the last one checked, which the
  caller passes back to continue after it;
- ``{"action": "restate_restore", "stream", "partition", "snapshot_id", "by", "reason"?,
  "request_id"?}``: point the partition's ``latest.json`` at a snapshot Restate retains,
  held so GC keeps it; ``request_id`` (default: the Lambda request id) makes a retry a no-op.

A stream that is not a Restate one (no restate entry of ``SNAPLEDGER_LAYOUTS``) is
refused naming it. The gc function dispatches these (``entrypoints/gc.py``).
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal, Self

from pydantic import Field, StringConstraints, model_validator

from snapledger.entrypoints.payloads import ConsolePayload, LineagePayload
from snapledger.errors import InvalidRequestError, StaleVersionError
from snapledger.layout import STREAM_PATTERN
from snapledger.layouts.restate import SNAPSHOT_ID_PATTERN, RestatePointerError
from snapledger.layouts.restate_prefix import RestatePrefix
from snapledger.limits import MAX_PARTITION
from snapledger.models.base import one_of_error
from snapledger.models.ledger import LineageId
from snapledger.services.gc import paged_heads
from snapledger.services.gc_deps import Budget
from snapledger.services.gc_pointers import PointerUnreadableError
from snapledger.services.restate_heal import (
    HealOutcome,
    RestoreResult,
    heal_partition,
    restore_from_chosen,
)

if TYPE_CHECKING:
    from snapledger.runtime import Runtime

#: A partition heal could not check (its latest.json unreadable, or rewritten under it
#: each time): the reason is its note; the other partitions are still checked.
FAILED = "failed"
#: ``restore:{request_id}`` names the hold on the chosen snapshot (at most 128 characters).
MAX_REQUEST_ID = 120
#: How many lineage HEADs are read a page at a time when no partition is named.
_HEADS_PAGE = 200

RestateSnapshotId = Annotated[str, StringConstraints(pattern=f"^{SNAPSHOT_ID_PATTERN}$")]


class RestateHealRequest(ConsolePayload):
    action: Literal["restate_heal"]
    stream: str = Field(
        pattern=f"^{STREAM_PATTERN}$", description="A Restate stream, e.g. payments"
    )
    partition: int | None = Field(
        default=None, ge=0, le=MAX_PARTITION, description="Omit it for every partition"
    )
    after_partition: int | None = Field(
        default=None,
        ge=0,
        le=MAX_PARTITION,
        description="Continue after this partition: a partial answer's after_partition",
    )
    dry_run: bool = False

    @model_validator(mode="after")
    def _one_partition_or_a_cursor(self) -> Self:
        if self.partition is not None and self.after_partition is not None:
            raise one_of_error(
                ("partition", "after_partition"),
                "give partition (heal that one) or after_partition (continue a heal of every "
                "partition after it), not both",
            )
        return self


@dataclass(frozen=True)
class HealRun:
    """A heal's outcomes and, when the time budget stopped it first, where to continue."""

    outcomes: list[HealOutcome]
    #: The last partition checked when stopped early (None: every partition was checked).
    after_partition: int | None = None

    @property
    def complete(self) -> bool:
        return self.after_partition is None


class RestateRestoreRequest(LineagePayload):
    action: Literal["restate_restore"]
    snapshot_id: RestateSnapshotId
    by: str = Field(min_length=1, max_length=128, description="Who restores (in the history)")
    reason: str = Field(default="", max_length=512)
    request_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_REQUEST_ID,
        description="The same request applies once (default: the Lambda request id)",
    )


def restate_layout(rt: "Runtime", stream: str) -> RestatePrefix:
    """The stream's Restate layout; InvalidRequestError naming it when it is not one."""
    layout = rt.layouts.restate_for(stream)
    if layout is None:
        raise InvalidRequestError(
            f"stream {stream!r} is not a Restate stream: no restate entry of the layout "
            "map (SNAPLEDGER_LAYOUTS, the deploy's -c layouts) names it. Give its Restate "
            'cluster\'s prefix there, e.g. -c \'layouts={"restate/prod-1": {"layout": '
            f'"restate", "stream": "{stream}"}}}}\''
        )
    return layout


def heal(rt: "Runtime", request: RestateHealRequest, budget: Budget | None = None) -> HealRun:
    """Heal the named partition, or each lineage of the stream the ledger has a HEAD of
    (after ``after_partition``, in the ledger's order) until ``budget`` is exhausted: at
    least one is checked per call, so a caller following ``after_partition`` finishes."""
    layout = restate_layout(rt, request.stream)
    if request.partition is not None:
        return HealRun([_heal_one(rt, layout, request.partition, dry_run=request.dry_run)])
    after = (
        None
        if request.after_partition is None
        else LineageId(stream=request.stream, partition=request.after_partition)
    )
    heads = paged_heads(rt.lineages, stream=request.stream, after=after, page_size=_HEADS_PAGE)
    outcomes: list[HealOutcome] = []
    for head in heads:
        if outcomes and budget is not None and budget.exhausted():
            return HealRun(outcomes, after_partition=outcomes[-1].partition)
        outcomes.append(_heal_one(rt, layout, head.partition, dry_run=request.dry_run))
    return HealRun(outcomes)


def _heal_one(
    rt: "Runtime", layout: RestatePrefix, partition: int, *, dry_run: bool
) -> HealOutcome:
    try:
        return heal_partition(rt.ledger, rt.store, rt.clock, layout, partition, dry_run=dry_run)
    except (PointerUnreadableError, StaleVersionError) as exc:
        return HealOutcome(partition, FAILED, note=str(exc))
    except RestatePointerError as exc:  # Restate stopped retaining the target meanwhile
        return HealOutcome(partition, FAILED, note=f"{exc.reason}; checked again next run")


def restore(rt: "Runtime", request: RestateRestoreRequest, request_id: str | None) -> RestoreResult:
    """Repoint the partition's latest.json at the chosen snapshot (refused with the reason)."""
    layout = restate_layout(rt, request.stream)
    chosen = request.request_id or request_id
    if chosen is None:
        raise InvalidRequestError("request_id: required here (no Lambda request id to use)")
    try:
        return restore_from_chosen(
            rt.ledger,
            rt.store,
            rt.clock,
            layout,
            request.partition,
            snapshot_id=request.snapshot_id,
            request_id=chosen,
            by=request.by,
            reason=request.reason,
        )
    except PointerUnreadableError as exc:
        raise InvalidRequestError(
            f"cannot restore {request.lineage} from {request.snapshot_id}: {exc}"
        ) from exc
