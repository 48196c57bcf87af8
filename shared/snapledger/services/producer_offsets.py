"""The producer-offsets registry (Fluss's contract, apache/fluss#2434; docs/fluss.md):
register a producer's start offsets atomically (CREATED or ALREADY_EXISTS; an expired
entry is replaced), read them, delete them, and sweep the expired ones."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from snapledger.clock import Clock
from snapledger.core.producer_offsets import AlreadyExists, decide_register, live, to_sweep
from snapledger.errors import TransientStoreError
from snapledger.models.producer_offsets import (
    DEFAULT_TTL_SECONDS,
    BucketOffset,
    ProducerOffsets,
    RegisterResult,
)
from snapledger.ports import ProducerOffsetsStore

#: A registration re-reads and decides again after a lost race at most this often: a race
#: is lost only to another registration, after which the entry is live (ALREADY_EXISTS).
MAX_ATTEMPTS = 3
#: The entries one sweep deletes at most (the next run continues; DynamoDB's TTL too).
SWEEP_LIMIT = 1_000


@dataclass(frozen=True)
class Registration:
    """A registration's outcome: ``entry`` is the one standing (the new one if CREATED,
    the live one found if ALREADY_EXISTS); ``replaced_expired``: it replaced an expired one."""

    result: RegisterResult
    entry: ProducerOffsets
    replaced_expired: bool = False


def register(
    store: ProducerOffsetsStore,
    clock: Clock,
    producer_id: str,
    offsets: Iterable[BucketOffset],
    *,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
) -> Registration:
    """Register ``offsets`` for ``producer_id`` unless a live entry stands."""
    offsets = tuple(offsets)
    for _ in range(MAX_ATTEMPTS):
        decision = decide_register(
            store.get(producer_id),
            producer_id,
            offsets,
            now=clock.now(),
            ttl=timedelta(seconds=ttl_seconds),
        )
        if isinstance(decision, AlreadyExists):
            return Registration(RegisterResult.ALREADY_EXISTS, decision.entry)
        if store.create(decision.entry, replacing=decision.replacing):
            replaced = decision.replacing is not None
            return Registration(RegisterResult.CREATED, decision.entry, replaced_expired=replaced)
    raise TransientStoreError(
        f"producer {producer_id}'s offsets changed {MAX_ATTEMPTS} times while registering: retry"
    )


def get(store: ProducerOffsetsStore, clock: Clock, producer_id: str) -> ProducerOffsets | None:
    """The producer's live entry, or None (none registered, deleted or expired)."""
    return live(store.get(producer_id), clock.now())


def delete(store: ProducerOffsetsStore, producer_id: str) -> bool:
    """Delete the producer's entry (after its first checkpoint); False if there was none."""
    return store.delete(producer_id)


def sweep(store: ProducerOffsetsStore, clock: Clock, *, limit: int = SWEEP_LIMIT) -> list[str]:
    """Delete the expired entries (each only if unchanged since read: one replaced in the
    meantime stays); the producer ids deleted."""
    now = clock.now()
    return [
        e.producer_id
        for e in to_sweep(store.expired(now, limit=limit), now)
        if store.delete(e.producer_id, only=e)
    ]
