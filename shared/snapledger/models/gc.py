"""GC's own bookkeeping: where a run that ran out of time stopped, so the next one resumes."""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import Field

from snapledger.models.base import Frozen
from snapledger.models.ledger import Head

GcPhase = Literal["lineages", "orphans"]


class GcCheckpoint(Frozen):
    """The ``GC`` / ``CHECKPOINT`` item: the phase and the last lineage (or stream) done."""

    phase: GcPhase
    after: str | None = Field(
        default=None, description="lineages: 'stream/partition' done last; orphans: a stream"
    )
    run_id: str
    updated_at: datetime
    version: int = Field(ge=1)


@dataclass(frozen=True)
class HeadPage:
    """One page of lineages' HEADs; ``more``: ask again after the last one's lineage."""

    heads: list[Head]
    more: bool
