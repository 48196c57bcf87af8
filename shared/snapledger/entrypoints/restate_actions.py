"""The gc function's Restate actions: heal a stream's latests, restore from a chosen snapshot.

- ``{"action": "restate_heal", "stream", "partition"?, "dry_run"?}``: check the snapshot
  each partition's ``latest.json`` names (one partition, or each lineage of the stream the
  ledger knows) and repoint a broken one (``services/restate_heal.py``); a dry run says
  what it would do and writes nothing;
- ``{"action": "restate_restore", "stream", "partition", "snapshot_id", "by", "reason"?,
  "request_id"?}``: point the partition's ``latest.json`` at a snapshot Restate retains,
  held so GC keeps it; ``request_id`` (default: the Lambda request id) makes a retry a no-op.

A stream that is not a Restate one (no prefix of ``SNAPLEDGER_RESTATE_PREFIXES``) is
refused naming it. The gc function dispatches these (``entrypoints/gc.py``).
"""

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from snapledger.entrypoints.payloads import ConsolePayload, LineagePayload
from snapledger.errors import InvalidRequestError, StaleVersionError
from snapledger.layout import STREAM_PATTERN
from snapledger.layouts.lineage import RestateLayout
from snapledger.layouts.restate import SNAPSHOT_ID_PATTERN, RestatePointerError
from snapledger.limits import MAX_PARTITION
from snapledger.runtime import Runtime
from snapledger.services.gc import paged_heads
from snapledger.services.restate_heal import (
    HealOutcome,
    RestoreResult,
    heal_partition,
    restore_from_chosen,
)
from snapledger.services.restate_pointer import PointerUnreadableError

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
    dry_run: bool = False


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


def restate_layout(rt: Runtime, stream: str) -> RestateLayout:
    """The stream's Restate layout; InvalidRequestError naming it when it is not one."""
    layout = rt.layouts.restate_for(stream)
    if layout is None:
        raise InvalidRequestError(
            f"stream {stream!r} is not a Restate stream: no prefix of "
            "SNAPLEDGER_RESTATE_PREFIXES (deploy's -c restatePrefixes) names it. Give its "
            "Restate cluster's prefix there, e.g. -c 'restatePrefixes={\"restate/prod-1\": "
            f'"{stream}"}}\''
        )
    return layout


def heal(rt: Runtime, request: RestateHealRequest) -> list[HealOutcome]:
    """Heal the named partition, or each lineage of the stream the ledger has a HEAD of."""
    layout = restate_layout(rt, request.stream)
    if request.partition is not None:
        partitions = [request.partition]
    else:
        heads = paged_heads(rt.lineages, stream=request.stream, after=None, page_size=_HEADS_PAGE)
        partitions = [head.partition for head in heads]
    return [_heal_one(rt, layout, partition, dry_run=request.dry_run) for partition in partitions]


def _heal_one(rt: Runtime, layout: RestateLayout, partition: int, *, dry_run: bool) -> HealOutcome:
    try:
        return heal_partition(rt.ledger, rt.store, rt.clock, layout, partition, dry_run=dry_run)
    except (PointerUnreadableError, StaleVersionError) as exc:
        return HealOutcome(partition, FAILED, note=str(exc))
    except RestatePointerError as exc:  # Restate stopped retaining the target meanwhile
        return HealOutcome(partition, FAILED, note=f"{exc.reason}; checked again next run")


def restore(rt: Runtime, request: RestateRestoreRequest, request_id: str | None) -> RestoreResult:
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
