"""A generation of a Kafka Streams store: one snapshot per changelog partition at or past the
changelog's end offsets when it was requested (docs/kafka-streams.md, "Generations"), built on
the stream snapshots by generation the ledger keeps (docs/ledger.md).

A request reads each changelog partition's end offset and asks for the stream's next
generation with the minimum LSN ``end - 1`` per partition (the offset of the last record
written before the request, under ``at_least_once``): a snapshot counts when it reflects every
record written before the request. The snapshotter names the open generation in each manifest
it writes (``open_generation``); the registry counts it and completes the generation when every
partition has counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from snapledger.client.control import RequestRefusedError, Snapledger
from snapledger.kafka_streams.changelog import (
    DEFAULT_BROKER_TIMEOUT_S,
    ChangelogError,
    describe_changelog,
    store_stream,
)

#: How long a requested generation may stay open (the launch function's bound, minutes).
DEFAULT_DEADLINE_MINUTES = 60


@dataclass(frozen=True)
class OpenGeneration:
    """The stream's open generation as the snapshotter needs it."""

    generation: int
    min_lsn: dict[int, int]
    missing: frozenset[int]

    def wants(self, partition: int, lsn: int | None) -> bool:
        """Whether a snapshot of ``partition`` at ``lsn`` would count."""
        return (
            lsn is not None and partition in self.missing and lsn >= self.min_lsn.get(partition, 0)
        )


def open_generation(registry: Snapledger, stream: str) -> OpenGeneration | None:
    """The stream's newest generation when it is open (REQUESTED, not overdue), else None."""
    try:
        found: dict[str, Any] = registry.generation(stream)["generation"]
    except RequestRefusedError as refused:
        if refused.answer.get("error") != "not_found":
            raise
        return None
    if found["status"] != "REQUESTED" or found.get("overdue"):
        return None
    return OpenGeneration(
        int(found["generation"]),
        {int(p): int(lsn) for p, lsn in found["min_lsn"].items()},
        frozenset(int(p) for p in found["missing"]),
    )


def request_generation(
    registry: Snapledger,
    bootstrap_servers: str,
    application_id: str,
    store: str,
    *,
    deadline_minutes: int = DEFAULT_DEADLINE_MINUTES,
    by: str | None = None,
    broker_timeout_s: float = DEFAULT_BROKER_TIMEOUT_S,
) -> dict[str, Any]:
    """Open the store's next generation over every changelog partition (the registry's
    answer: ``generation``, ``min_lsn``, ``deadline``...). Refused when a partition holds no
    record yet: its snapshot could not say which input offsets its (empty) state reflects."""
    stream = store_stream(application_id, store)
    changelog = describe_changelog(bootstrap_servers, stream, timeout_s=broker_timeout_s)
    empty = sorted(p for p, offsets in changelog.partitions.items() if offsets.log_end == 0)
    if empty:  # the changelog's state refuses it, not the request's arguments
        raise ChangelogError(
            f"{stream} partitions {empty} hold no record yet: a generation needs one per "
            "partition (its snapshot names the input offsets it reflects); request it once the "
            "application has processed input for every partition"
        )
    min_lsn = {p: offsets.log_end - 1 for p, offsets in changelog.partitions.items()}
    return registry.request_stream_snapshot(
        stream, sorted(min_lsn), min_lsn=min_lsn, deadline_minutes=deadline_minutes, by=by
    )
