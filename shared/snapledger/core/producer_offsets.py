"""The producer-offsets registry's rules, pure: what a registration does given the entry
the registry holds (Fluss's contract, apache/fluss#2434: atomic check-and-create, CREATED or
ALREADY_EXISTS, an expired entry replaced), and which entries a sweep removes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from snapledger.models.producer_offsets import BucketOffset, ProducerOffsets


@dataclass(frozen=True)
class Create:
    """Write ``entry``, on condition that the registry still holds ``replacing`` (None:
    nothing; else the expired entry it replaces, matched by its expiry)."""

    entry: ProducerOffsets
    replacing: ProducerOffsets | None


@dataclass(frozen=True)
class AlreadyExists:
    """A live entry is registered: it stands, the new offsets are not written."""

    entry: ProducerOffsets


def decide_register(
    existing: ProducerOffsets | None,
    producer_id: str,
    offsets: Iterable[BucketOffset],
    *,
    now: datetime,
    ttl: timedelta,
) -> Create | AlreadyExists:
    """A registration's decision: create when there is no entry or only an expired one,
    else the live entry stands."""
    if existing is not None and not existing.expired(now):
        return AlreadyExists(existing)
    entry = ProducerOffsets(
        producer_id=producer_id,
        offsets=tuple(offsets),
        registered_at=now,
        expires_at=now + ttl,
    )
    return Create(entry, replacing=existing)


def live(entry: ProducerOffsets | None, now: datetime) -> ProducerOffsets | None:
    """The entry a reader sees: an expired one is gone (DynamoDB's TTL removes its item
    later, the sweep sooner)."""
    return None if entry is None or entry.expired(now) else entry


def to_sweep(entries: Iterable[ProducerOffsets], now: datetime) -> list[ProducerOffsets]:
    """The entries a sweep deletes: the expired ones."""
    return [e for e in entries if e.expired(now)]
