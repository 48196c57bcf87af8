"""The ledger's events: the append-only ``EV#{seq}`` items, one type per fact.

Wire names are stable: ``type`` is the discriminator, fields are snake_case. New event
types are added, never renamed; readers skip types they do not know.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from snapledger.models.base import Frozen


class EventBase(Frozen):
    """What every event carries."""

    seq: int = Field(ge=1, description="Gapless per lineage, starting at 1")
    at: datetime = Field(description="Registry time (server clock)")
    stream: str
    partition: int
    command_id: str = Field(description="The command that produced it (for idempotency)")


class SnapshotRegistered(EventBase):
    type: Literal["SnapshotRegistered"] = "SnapshotRegistered"
    snapshot_id: str
    lsn: int
    epoch: int
    manifest_key: str
    manifest_digest: str
    file_count: int
    total_bytes: int
    row_count: int | None = None
    source_kind: str | None = None


class SnapshotRejected(EventBase):
    """A manifest refused: ``code`` is ``invalid``, ``fenced`` or ``conflict``."""

    type: Literal["SnapshotRejected"] = "SnapshotRejected"
    snapshot_id: str
    lsn: int
    epoch: int | None = None
    manifest_key: str
    manifest_digest: str
    code: Literal["invalid", "fenced", "conflict"]
    reason: str


class LatestAdvanced(EventBase):
    type: Literal["LatestAdvanced"] = "LatestAdvanced"
    snapshot_id: str
    lsn: int
    previous_snapshot_id: str | None = None
    previous_lsn: int | None = None


LedgerEvent = Annotated[
    SnapshotRegistered | SnapshotRejected | LatestAdvanced,
    Field(discriminator="type"),
]
EVENT_ADAPTER: TypeAdapter[LedgerEvent] = TypeAdapter(LedgerEvent)
