"""The control client's producer-offsets registry (``Snapledger`` has it): Fluss's
``registerProducerOffsets`` / ``getProducerOffsets`` / ``deleteProducerOffsets``
(apache/fluss#2434) on snapledger (docs/fluss.md, docs/console.md).

Offsets are given as Fluss gives them, a map of table bucket to offset: the bucket is
``(table_id, bucket)`` or, for a partitioned table, ``(table_id, partition_id, bucket)``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from snapledger.client.payloads import Answer, drop_none

#: A Fluss ``TableBucket``: (table id, bucket) or (table id, partition id, bucket).
TableBucket = tuple[int, int] | tuple[int, int | None, int]


def offsets_payload(offsets: Mapping[TableBucket, int]) -> list[dict[str, Any]]:
    """The console's ``offsets`` list of a bucket → offset map."""
    listed = []
    for bucket, offset in offsets.items():
        if len(bucket) == 2:
            table_id, partition_id, number = bucket[0], None, bucket[1]
        else:
            table_id, partition_id, number = bucket
        entry = {"table_id": table_id, "partition_id": partition_id, "bucket": number}
        listed.append(drop_none({**entry, "offset": offset}))
    return listed


def offsets_of(entry: Mapping[str, Any]) -> dict[tuple[int, int | None, int], int]:
    """An answer's ``entry`` as a map of (table id, partition id or None, bucket) → offset."""
    return {
        (o["table_id"], o.get("partition_id"), o["bucket"]): o["offset"] for o in entry["offsets"]
    }


class ProducerOffsetsActions:
    """What ``Snapledger`` can do with the producer-offsets registry, through its ``call``."""

    def call(self, function: str, payload: dict[str, Any]) -> Answer:
        raise NotImplementedError  # Snapledger's: send the payload, raise a refusal

    def register_producer_offsets(
        self,
        producer_id: str,
        offsets: Mapping[TableBucket, int],
        *,
        ttl_seconds: int | None = None,
    ) -> Answer:
        """Register the offsets a producer starts writing at, unless a live entry stands:
        ``result`` is ``CREATED`` or ``ALREADY_EXISTS`` (``entry``: the one standing)."""
        payload = {
            "action": "producer_offsets_register",
            "producer_id": producer_id,
            "offsets": offsets_payload(offsets),
            "ttl_seconds": ttl_seconds,
        }
        return self.call("launch", drop_none(payload))

    def producer_offsets(self, producer_id: str) -> Answer:
        """The producer's live entry: ``found``, and ``entry`` (None when there is none)."""
        return self.call("query", {"action": "producer_offsets", "producer_id": producer_id})

    def delete_producer_offsets(self, producer_id: str) -> Answer:
        """Delete the producer's entry (after its first checkpoint): ``deleted``."""
        payload = {"action": "producer_offsets_delete", "producer_id": producer_id}
        return self.call("launch", payload)
