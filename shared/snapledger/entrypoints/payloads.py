"""Base classes of the payload models: ours are strict, AWS's are tolerant of additions.

- A **console payload** (written by a person or a script) is frozen, refuses unknown
  fields (a typo like ``partiton`` must not be silently ignored) and is strict about types
  (``"3"`` is not a partition).
- An **AWS event** envelope is frozen but ignores fields it does not name: AWS adds
  fields to its events over time (S3's EventBridge events gained ``event-version``), and
  a new field must not turn every notification into a validation failure.

Both defer building their validators to first use (``defer_build``): a function only
pays, once per cold start, for the models of the payloads it actually receives (the
query function for the actions it is asked, register for the one event shape its
deployment sends).
"""

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from snapledger.layout import STREAM_PATTERN
from snapledger.layouts.lineage import SNAPSHOT_ID_PATTERN
from snapledger.limits import MAX_PARTITION
from snapledger.models.ledger import LineageId


class ConsolePayload(BaseModel):
    """A payload a person sends: frozen, strict, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, defer_build=True)


class AwsEvent(BaseModel):
    """An event AWS sends: frozen; fields it adds later are ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True, defer_build=True)


class LineagePayload(ConsolePayload):
    """A console payload about one lineage."""

    stream: str = Field(pattern=f"^{STREAM_PATTERN}$", description="Stream name, e.g. orders")
    partition: int = Field(ge=0, le=MAX_PARTITION, description="Partition number, 0 or more")

    @property
    def lineage(self) -> LineageId:
        return LineageId(stream=self.stream, partition=self.partition)


#: A snapshot id, as the layout writes it (a ULID).
#: A snapshot id of any layout: a ULID, or a Restate id (``snap_...``).
SnapshotId = Annotated[str, StringConstraints(pattern=f"^{SNAPSHOT_ID_PATTERN}$")]
