"""What snapledger reads and changes of a producer's own bookkeeping of its snapshots.

Fluss keeps one ZooKeeper node per completed KV snapshot of a bucket
(``/fluss/tabletservers/tables/{table_id}/buckets/{bucket}/snapshots/{id}``): a tablet
server whose KV state is lost restores from the highest one listed. GC reads that list
before it deletes (never what Fluss still lists, unless it dropped the node first) and
drops the node of a snapshot its policy expires (``services/fluss_gc.py``).
"""

from __future__ import annotations

from typing import Protocol


class FlussSnapshotNodes(Protocol):
    """A Fluss cluster's snapshot nodes in ZooKeeper."""

    def listed(self, table_id: int, bucket: int) -> set[int]:
        """Each snapshot id Fluss lists for the bucket (empty: none, or the bucket has no node
        yet): one request, the nodes' names; their data is not read."""
        ...

    def drop(self, table_id: int, bucket: int, snapshot_id: int) -> bool:
        """Delete the snapshot's node; whether it was there (idempotent)."""
        ...
