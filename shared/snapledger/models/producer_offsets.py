"""The producer-offsets registry's records (Fluss's contract, apache/fluss#2434; docs/fluss.md).

A producer (a job writing to Fluss) registers, before it writes, the log offset of every
table bucket it will write to; after a failure before its first checkpoint it reads them
back and undoes what it wrote after them; after that checkpoint it deletes them. An entry
expires ``ttl_seconds`` after its registration.
"""

from datetime import datetime
from enum import StrEnum
from typing import Self

from pydantic import AwareDatetime, ConfigDict, Field, model_validator

from snapledger.limits import (
    MAX_INT64,
    MAX_LSN,
    MAX_PARTITION,
    MAX_PRODUCER_ID_CHARS,
    MAX_PRODUCER_OFFSETS,
    MAX_PRODUCER_OFFSETS_TTL_SECONDS,
)
from snapledger.models.base import Frozen, one_of_error

#: A producer id: letters, digits and ``. _ : -`` (a Flink job id is 32 hex digits).
PRODUCER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"
#: How long an entry lives unless the registration says otherwise (Fluss's default).
DEFAULT_TTL_SECONDS = 86_400
MIN_TTL_SECONDS = 1


class RegisterResult(StrEnum):
    CREATED = "CREATED"
    ALREADY_EXISTS = "ALREADY_EXISTS"


class BucketOffset(Frozen):
    """One table bucket's log offset: Fluss's ``TableBucket`` (table id, partition id for a
    partitioned table, bucket) and the offset the producer starts writing at. Strict, as
    console payloads are (``"5"`` is not an offset); the ledger item stores ints."""

    model_config = ConfigDict(**Frozen.model_config, strict=True)

    table_id: int = Field(ge=0, le=MAX_INT64)
    partition_id: int | None = Field(default=None, ge=0, le=MAX_INT64)
    bucket: int = Field(ge=0, le=MAX_PARTITION)
    offset: int = Field(ge=0, le=MAX_LSN)

    @property
    def bucket_key(self) -> tuple[int, int | None, int]:
        return (self.table_id, self.partition_id, self.bucket)


class ProducerOffsets(Frozen):
    """A producer's registered offsets: one per bucket, and when the entry expires."""

    producer_id: str = Field(
        min_length=1, max_length=MAX_PRODUCER_ID_CHARS, pattern=PRODUCER_ID_PATTERN
    )
    offsets: tuple[BucketOffset, ...] = Field(min_length=1, max_length=MAX_PRODUCER_OFFSETS)
    registered_at: AwareDatetime
    expires_at: AwareDatetime

    @model_validator(mode="after")
    def _one_offset_per_bucket(self) -> Self:
        check_one_per_bucket(self.offsets)
        if self.expires_at <= self.registered_at:
            raise one_of_error(("expires_at",), "expires_at must be after registered_at")
        return self

    def expired(self, now: datetime) -> bool:
        return self.expires_at <= now


def check_one_per_bucket(offsets: tuple[BucketOffset, ...]) -> None:
    seen: set[tuple[int, int | None, int]] = set()
    for entry in offsets:
        if entry.bucket_key in seen:
            table, partition, bucket = entry.bucket_key
            where = f"table {table}" + ("" if partition is None else f" partition {partition}")
            raise one_of_error(
                ("offsets",), f"bucket {bucket} of {where} is listed twice: give one offset each"
            )
        seen.add(entry.bucket_key)


TTL_FIELD = Field(
    default=DEFAULT_TTL_SECONDS,
    ge=MIN_TTL_SECONDS,
    le=MAX_PRODUCER_OFFSETS_TTL_SECONDS,
    description="Seconds until the entry expires (default 86400: 24 h; at most 30 days)",
)
